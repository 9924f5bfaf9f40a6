import type { SQLiteUpdateSetSource } from "drizzle-orm/sqlite-core";
import { runBatch, type Database } from "../../db/client";
import type { emails, EmailStatus } from "../../db/schema";
import { updateEmailsById as updateEmailsByIdStatements } from "../../store/emails";

/**
 * What the send consumer, the dead-letter consumer and the cron sweep agree
 * on about an email record's lifecycle (QUEUED -> SENDING -> SENT or FAILED).
 */

/** A claim older than this is taken to belong to a consumer that died mid-send (the sweep settles it). */
export const CLAIM_LEASE_MS = 15 * 60 * 1000;

/** The reason stored on mail of a disabled project. */
export const PROJECT_DISABLED_REASON = "Not sent: the project is disabled";
/** Mail of a project the reputation breaker paused (src/services/reputation.ts) fails with this error. */
export const SENDING_PAUSED_REASON = "Not sent: sending is paused for the project (bounce or complaint rate too high) until it is resumed";
/** The reason stored on an email whose consumer stopped after claiming it (see sweepStuckEmails). */
export const OUTCOME_UNKNOWN_REASON =
  "Outcome unknown: the sending attempt stopped after claiming this email; it may or may not have reached the provider, so it is not sent again";
/** The reason stored on a campaign email whose contact left the audience after its page was written. */
export const LAPSED_RECIPIENT_REASON = "Not sent: the contact unsubscribed, was deleted or is suppressed";

/** Updates the emails with these ids (of `projectId`, when given) that are in one of `statuses`, in one batch. */
export async function updateEmailsById(db: Database, ids: string[], statuses: EmailStatus[], set: SQLiteUpdateSetSource<typeof emails>, projectId?: string) {
  await runBatch(db, updateEmailsByIdStatements(db, ids, statuses, set, projectId));
}

/** The email ids named by well-formed message bodies. */
export const emailIdsOf = (bodies: readonly unknown[]) =>
  bodies.map((body) => (body as { emailId?: unknown } | undefined)?.emailId).filter((id): id is string => typeof id === "string");
