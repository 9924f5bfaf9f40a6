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
// Double opt-in: CONTACT_CREATED waits for the confirmation.

/**
 * For a double opt-in batch, after the upsert: removes the CONTACT_CREATED
 * trigger the D1 trigger of migration 0006 queued for `contactId`, the id the
 * batch gives the contact if it creates it (a fresh id, so only this batch's
 * row can match; the batch is one transaction, so no drain sees it first).
 */
export function dropContactCreatedTrigger(d1: D1Database, projectId: string, contactId: string): D1PreparedStatement {
  return d1.prepare(DROP_CONTACT_CREATED_SQL).bind(projectId, contactId);
}
const DROP_CONTACT_CREATED_SQL = `DELETE FROM workflow_trigger_outbox WHERE project_id = ?1 AND contact_id = ?2 AND kind = 'CONTACT_CREATED'`;

/**
 * For the confirm batch, first (before it records the confirmation): queues
 * the CONTACT_CREATED trigger the unconfirmed contact did not fire, only when
 * the contact is still unsubscribed, this confirmation email (?3) has not
 * confirmed it before (its `contact.subscribed` event), and an enabled
 * CONTACT_CREATED workflow exists. Once per contact either way: the execution's
 * trigger key is `created:<contact>`.
 */
export function queueConfirmedContactCreated(d1: D1Database, projectId: string, contactId: string, emailId: string, now: number): D1PreparedStatement {
  return d1.prepare(QUEUE_CONFIRMED_CREATED_SQL).bind(projectId, contactId, emailId, now);
}
const QUEUE_CONFIRMED_CREATED_SQL = `INSERT INTO workflow_trigger_outbox (project_id, contact_id, kind, created_at)
  SELECT ?1, ?2, 'CONTACT_CREATED', ?4
  WHERE EXISTS (SELECT 1 FROM contacts WHERE id = ?2 AND project_id = ?1 AND subscribed = 0)
    AND NOT EXISTS (SELECT 1 FROM events WHERE contact_id = ?2 AND name = 'contact.subscribed' AND email_id = ?3)
    AND EXISTS (SELECT 1 FROM workflows WHERE project_id = ?1 AND enabled = 1 AND deleted_at IS NULL AND trigger_type = 'CONTACT_CREATED')`;

export const FIXED_SQL = { DROP_CONTACT_CREATED_SQL, QUEUE_CONFIRMED_CREATED_SQL };
