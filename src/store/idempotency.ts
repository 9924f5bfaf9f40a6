import { and, eq, lt } from "drizzle-orm";
import { getDb } from "../db/client";
import { idempotencyKeys } from "../db/schema";

/**
 * Idempotency-Key records of /v1/send: one per (project, key), written in the
 * send's own batch (so a concurrent duplicate fails on the unique key and
 * writes nothing), kept IDEMPOTENCY_TTL_MS.
 */

/** How long a key names its request. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

export type IdempotencyRecord = typeof idempotencyKeys.$inferSelect;

/** The project's record of this key (a read for the send's read batch). */
export function idempotencyRecordOf(d1: D1Database, projectId: string, key: string) {
  return getDb(d1)
    .select()
    .from(idempotencyKeys)
    .where(and(eq(idempotencyKeys.projectId, projectId), eq(idempotencyKeys.key, key)));
}

/** The record of an accepted send, for its write batch. */
export function insertIdempotencyRecord(d1: D1Database, record: IdempotencyRecord) {
  return getDb(d1).insert(idempotencyKeys).values(record);
}

/** Removes an expired record, unless the key was used again meanwhile (another request hash). */
export async function deleteIdempotencyRecord(d1: D1Database, record: Pick<IdempotencyRecord, "projectId" | "key" | "requestHash">): Promise<void> {
  await getDb(d1)
    .delete(idempotencyKeys)
    .where(and(eq(idempotencyKeys.projectId, record.projectId), eq(idempotencyKeys.key, record.key), eq(idempotencyKeys.requestHash, record.requestHash)));
}

/** Deletes the records older than IDEMPOTENCY_TTL_MS (scheduled). */
export async function purgeExpiredIdempotencyKeys(d1: D1Database, now = new Date()): Promise<void> {
  await getDb(d1)
    .delete(idempotencyKeys)
    .where(lt(idempotencyKeys.createdAt, new Date(now.getTime() - IDEMPOTENCY_TTL_MS)));
}

/** No fixed SQL here. */
export const FIXED_SQL = {};
