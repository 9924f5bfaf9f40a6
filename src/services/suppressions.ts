import type { Database } from "../db/client";
import type { SuppressionRow } from "../store/suppressions";
import {
  deleteSuppression,
  insertManualSuppressions,
  insertSuppression,
  insertSuppressionEvents,
  listSuppressions as listSuppressionRows,
  recordSuppressionCreated,
  recordSuppressionDeleted,
  suppressionQuotaGuard,
  type SuppressionFilter,
} from "../store/suppressions";
import { suppressionsOf } from "../store/guards";
import { WriteBatch } from "../store/batch";
import type { AfterCommit } from "../lib/after-commit";
import type { ConfigInput } from "../lib/config";
import { ApiError } from "../lib/errors";
import { newId } from "../lib/ids";
import { toBase64Url, base64UrlToBytes, utf8ToBase64 } from "../lib/base64";
import type { SuppressionReason, SuppressionStream } from "./consent/gates";

export type { SuppressionReason, SuppressionStream };

/** An address's entry as the gates read it. */
export interface Suppression {
  reason: SuppressionReason;
  stream: SuppressionStream;
}

/** Which of `emails` are on the project's list (any stream; the gates decide what each stops), keyed by the lower-cased address. */
export async function findSuppressed(db: Database, projectId: string, emails: string[]): Promise<Map<string, Suppression>> {
  const unique = [...new Set(emails.map((e) => e.trim().toLowerCase()).filter(Boolean))];
  const { results } = await suppressionsOf(db.$client, projectId, unique).all<{ email: string; reason: SuppressionReason; stream: SuppressionStream }>();
  return new Map(results.map((row) => [row.email, { reason: row.reason, stream: row.stream }]));
}

/**
 * A hard bounce or a complaint: the address suppressed for every stream (an UNSUBSCRIBE entry is
 * replaced), with its `suppression.created` webhook event ahead of the write (only when it adds
 * or widens the entry). For the caller's batch.
 */
export function buildSuppression(db: Database, projectId: string, email: string, reason: "BOUNCE" | "COMPLAINT", detail?: string | null, now = new Date()) {
  const address = email.trim().toLowerCase();
  return [
    recordSuppressionCreated(db.$client, { projectId, items: [[newId(), address]], reason, note: detail ?? null, at: now }),
    insertSuppression(db.$client, projectId, address, reason, detail ?? null, now),
  ];
}

/** An entry as GET /suppressions lists it (CONTRACT "Suppressions and streams"). */
export interface SuppressionView {
  email: string;
  reason: SuppressionReason;
  stream: SuppressionStream;
  /** The note it was added with; for a bounce or complaint, what the provider said. */
  note: string | null;
  createdAt: string;
}

export const suppressionView = (row: SuppressionRow): SuppressionView => ({
  email: row.email,
  reason: row.reason,
  stream: row.stream,
  note: row.note ?? row.detail ?? null,
  createdAt: row.createdAt.toISOString(),
});

/** Opaque cursor: the last row's (created_at, address). */
const encodeCursor = (row: SuppressionRow) => toBase64Url(utf8ToBase64(JSON.stringify({ t: row.createdAt.getTime(), e: row.email })));

function decodeCursor(cursor: string | undefined): { createdAt: number; email: string } | undefined {
  if (!cursor) return undefined;
  try {
    const bytes = base64UrlToBytes(cursor);
    const parsed = JSON.parse(bytes ? new TextDecoder().decode(bytes) : "") as { t?: unknown; e?: unknown };
    if (typeof parsed.t === "number" && Number.isFinite(parsed.t) && typeof parsed.e === "string" && parsed.e.length <= 320) {
      return { createdAt: parsed.t, email: parsed.e };
    }
  } catch {
    // the validation error below
  }
  throw ApiError.validation([{ field: "cursor", message: "Invalid cursor", code: "invalid_cursor" }]);
}

/** GET /suppressions: newest first, one batch for the page and its total. */
export async function listSuppressions(db: Database, projectId: string, query: SuppressionFilter & { limit: number; cursor?: string }) {
  const after = decodeCursor(query.cursor);
  const filter: SuppressionFilter = { reason: query.reason, email: query.email?.trim().toLowerCase() || undefined };
  const { rows, total } = listSuppressionRows(db.$client, projectId, filter, { limit: query.limit, after });
  const [page, [counted]] = await db.batch([rows, total]);
  const hasMore = page.length > query.limit;
  const items = page.slice(0, query.limit);
  return {
    items: items.map(suppressionView),
    nextCursor: hasMore ? encodeCursor(items[items.length - 1]) : null,
    hasMore,
    total: counted?.total ?? 0,
  };
}

/**
 * POST /suppressions: MANUAL entries, every stream, for up to 1000 addresses in one batch (a
 * statement for all of them, not one per address): QUOTA_SUPPRESSIONS first, then the
 * `suppression.created` webhook events and events of the addresses it adds, then the write.
 * `added`: the addresses newly stopped for every stream (already suppressed ones are left as
 * they are; an UNSUBSCRIBE entry becomes MANUAL).
 */
export async function addSuppressions(
  db: Database,
  env: ConfigInput,
  projectId: string,
  input: { emails: string[]; note?: string | null },
  afterCommit: AfterCommit,
): Promise<{ added: number }> {
  const addresses = [...new Set(input.emails.map((e) => e.trim().toLowerCase()))];
  const note = input.note ?? null;
  const now = new Date();
  const d1 = db.$client;
  const batch = new WriteBatch(d1);
  batch.add(suppressionQuotaGuard(d1, env, projectId, addresses));
  batch.add(recordSuppressionCreated(d1, { projectId, items: addresses.map((a) => [newId(), a] as const), reason: "MANUAL", note, at: now }));
  batch.add(insertSuppressionEvents(d1, env, { projectId, name: "suppression.created", items: addresses.map((a) => [newId(), a] as const), note, now }));
  const inserted = batch.add(insertManualSuppressions(d1, projectId, addresses, note, now));
  const result = await batch.run({ env, now, afterCommit });
  return { added: result.rows(inserted).length };
}

/** DELETE /suppressions/{email}: the entry, whatever its reason, with its webhook event and event; 404 when there is none. */
export async function removeSuppression(db: Database, env: ConfigInput, projectId: string, email: string, afterCommit: AfterCommit): Promise<void> {
  const address = email.trim().toLowerCase();
  const now = new Date();
  const d1 = db.$client;
  const batch = new WriteBatch(d1);
  batch.add(recordSuppressionDeleted(d1, { id: newId(), projectId, email: address, at: now }));
  batch.add(insertSuppressionEvents(d1, env, { projectId, name: "suppression.deleted", items: [[newId(), address]], note: null, now }));
  const deleted = batch.add(deleteSuppression(d1, projectId, address));
  const result = await batch.run({ env, now, afterCommit });
  if (result.rows(deleted).length === 0) throw ApiError.notFound("Suppression");
}
