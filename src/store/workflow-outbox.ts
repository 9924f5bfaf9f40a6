import { asc, eq, inArray } from "drizzle-orm";
import { getDb } from "../db/client";
import { workflowTriggerOutbox } from "../db/schema";
import { chunks } from "../lib/chunks";

/**
 * The workflow trigger outbox's hand-over (rows are added by D1 triggers on
 * events and contacts, migration 0006, and by the double opt-in's statements
 * in store/workflows.ts): a page claimed by deleting it, and put back when the
 * queue refused it.
 */

export type OutboxRow = typeof workflowTriggerOutbox.$inferSelect;

/** Outbox rows per INSERT (8 parameters each, under D1's 100). */
const ROWS_PER_INSERT = 12;

/**
 * Claims up to `limit` rows (of one project, or of any), oldest first, by
 * deleting them (DELETE ... RETURNING): two drains never hand the same row over.
 */
export function claimOutboxPage(d1: D1Database, limit: number, projectId?: string) {
  const db = getDb(d1);
  const page = db
    .select({ id: workflowTriggerOutbox.id })
    .from(workflowTriggerOutbox)
    .where(projectId ? eq(workflowTriggerOutbox.projectId, projectId) : undefined)
    .orderBy(asc(workflowTriggerOutbox.id))
    .limit(limit);
  return db.delete(workflowTriggerOutbox).where(inArray(workflowTriggerOutbox.id, page)).returning();
}

/** Puts claimed rows back (the queue refused them), with their ids: for one batch. */
export function restoreOutboxRows(d1: D1Database, rows: readonly OutboxRow[]) {
  const db = getDb(d1);
  return chunks(rows, ROWS_PER_INSERT).map((chunk) => db.insert(workflowTriggerOutbox).values(chunk).onConflictDoNothing());
}

/** No fixed SQL here. */
export const FIXED_SQL = {};
