import { stringify } from "csv-stringify/sync";
import { and, asc, eq, gt, type SQL, sql } from "drizzle-orm";
import type { Database } from "../../db/client";
import { contacts } from "../../db/schema";
import { ApiError } from "../../lib/errors";
import { MAX_COLUMNS } from "./columns";
import { getSegment, segmentMembersWhere, storedCondition } from "../segments";

/**
 * GET /contacts/export: the other half of the round trip, contacts out as a
 * CSV that POST /contacts/imports takes back unchanged.
 */

/** Contacts per export page (one keyset query each). */
const EXPORT_PAGE = 1000;
/** Contacts per page of the flat export's first pass, which reads only ids and data keys. */
const KEYS_PAGE = 5000;
export const EXPORT_HEADER = ["id", "email", "subscribed", "createdAt", "updatedAt", "data"];
const FLAT_FIXED = EXPORT_HEADER.slice(0, 5);
/** Data columns a flat export may have: with the five fixed ones, what an import's header may hold. */
export const MAX_FLAT_KEYS = MAX_COLUMNS - FLAT_FIXED.length;
const BOM = "\uFEFF";

/** A data value as a flat export's cell: text as it is, numbers and booleans as written, null empty, nested values as JSON. */
function flatCell(value: unknown): string {
  if (value === null || value === undefined) return "";
  if (typeof value === "string") return value;
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  return JSON.stringify(value);
}

/** Every data key the filtered contacts have, sorted (the flat export's first pass, page by page on id); 422 past MAX_FLAT_KEYS. */
async function dataKeys(db: Database, where: SQL | undefined): Promise<string[]> {
  const keys = new Set<string>();
  let after: string | null = null;
  for (;;) {
    const page: { id: string; keys: string }[] = await db
      .select({ id: contacts.id, keys: sql<string>`(SELECT json_group_array(key) FROM json_each(${contacts.data}))` })
      .from(contacts)
      .where(after ? and(where, gt(contacts.id, after)) : where)
      .orderBy(asc(contacts.id))
      .limit(KEYS_PAGE);
    for (const row of page) for (const key of JSON.parse(row.keys) as string[]) keys.add(key);
    if (keys.size > MAX_FLAT_KEYS) {
      throw ApiError.validation([
        {
          field: "format",
          message: `These contacts have more than ${MAX_FLAT_KEYS} data keys, more columns than a flat export holds: export with format=data (one JSON column)`,
          code: "too_big",
        },
      ]);
    }
    if (page.length < KEYS_PAGE) break;
    after = page[page.length - 1].id;
  }
  return [...keys].sort();
}

/**
 * The project's contacts (filtered by subscription and/or a segment's condition) as CSV, oldest
 * first, read page by page (keyset on id) as the client reads the stream. `data` format: the data
 * as one JSON column, which imports back unchanged; `flat`: one column per data key (a first
 * pass reads the keys, a key named like a fixed column is headed `data.<key>`). `bom` starts
 * the file with a UTF-8 byte order mark (Excel).
 */
export async function exportContacts(
  db: Database,
  projectId: string,
  filter: { subscribed?: boolean; segmentId?: string; format?: "data" | "flat"; bom?: boolean },
): Promise<ReadableStream<Uint8Array>> {
  const conditions: (SQL | undefined)[] = [eq(contacts.projectId, projectId)];
  if (filter.segmentId) {
    const segment = await getSegment(db, projectId, filter.segmentId);
    conditions.push(segmentMembersWhere(projectId, storedCondition(segment.condition)));
  }
  if (filter.subscribed !== undefined) conditions.push(eq(contacts.subscribed, filter.subscribed));
  const where = and(...conditions);
  const keys = filter.format === "flat" ? await dataKeys(db, where) : null;
  const header = keys ? [...FLAT_FIXED, ...keys.map((k) => (FLAT_FIXED.includes(k) ? `data.${k}` : k))] : EXPORT_HEADER;
  const encoder = new TextEncoder();
  let after: string | null = null;
  let headerSent = false;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (!headerSent) {
        headerSent = true;
        controller.enqueue(encoder.encode((filter.bom ? BOM : "") + stringify([header])));
      }
      const page = await db
        .select()
        .from(contacts)
        .where(after ? and(where, gt(contacts.id, after)) : where)
        .orderBy(asc(contacts.id))
        .limit(EXPORT_PAGE);
      if (page.length > 0) {
        after = page[page.length - 1].id;
        const rows = page.map((c) => {
          const fixed = [c.id, c.email, c.subscribed ? "true" : "false", c.createdAt.toISOString(), c.updatedAt.toISOString()];
          const data = (c.data ?? {}) as Record<string, unknown>;
          return keys ? [...fixed, ...keys.map((k) => flatCell(Object.hasOwn(data, k) ? data[k] : null))] : [...fixed, JSON.stringify(data)];
        });
        controller.enqueue(encoder.encode(stringify(rows)));
      }
      if (page.length < EXPORT_PAGE) controller.close();
    },
  });
}
