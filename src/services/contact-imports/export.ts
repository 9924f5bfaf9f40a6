import { stringify } from "csv-stringify/sync";
import { and, asc, eq, gt, type SQL } from "drizzle-orm";
import type { Database } from "../../db/client";
import { contacts } from "../../db/schema";
import { getSegment, segmentMembersWhere, storedCondition } from "../segments";

/**
 * GET /contacts/export: the other half of the round trip, contacts out as a
 * CSV that POST /contacts/imports takes back unchanged.
 */

/** Contacts per export page (one keyset query each). */
const EXPORT_PAGE = 1000;
export const EXPORT_HEADER = ["id", "email", "subscribed", "createdAt", "updatedAt", "data"];

/**
 * The project's contacts (filtered by subscription and/or a segment's
 * condition) as CSV, oldest first, read page by page (keyset on id) as the
 * client reads the stream.
 */
export async function exportContacts(
  db: Database,
  projectId: string,
  filter: { subscribed?: boolean; segmentId?: string },
): Promise<ReadableStream<Uint8Array>> {
  const conditions: (SQL | undefined)[] = [eq(contacts.projectId, projectId)];
  if (filter.segmentId) {
    const segment = await getSegment(db, projectId, filter.segmentId);
    conditions.push(segmentMembersWhere(projectId, storedCondition(segment.condition)));
  }
  if (filter.subscribed !== undefined) conditions.push(eq(contacts.subscribed, filter.subscribed));
  const where = and(...conditions);
  const encoder = new TextEncoder();
  let after: string | null = null;
  let headerSent = false;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (!headerSent) {
        headerSent = true;
        controller.enqueue(encoder.encode(stringify([EXPORT_HEADER])));
      }
      const page = await db
        .select()
        .from(contacts)
        .where(after ? and(where, gt(contacts.id, after)) : where)
        .orderBy(asc(contacts.id))
        .limit(EXPORT_PAGE);
      if (page.length > 0) {
        after = page[page.length - 1].id;
        const rows = page.map((c) => [
          c.id,
          c.email,
          c.subscribed ? "true" : "false",
          c.createdAt.toISOString(),
          c.updatedAt.toISOString(),
          JSON.stringify(c.data ?? {}),
        ]);
        controller.enqueue(encoder.encode(stringify(rows)));
      }
      if (page.length < EXPORT_PAGE) controller.close();
    },
  });
}
