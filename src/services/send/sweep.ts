import { and, eq, lt } from "drizzle-orm";
import { chunks, QUEUE_BATCH } from "../../lib/chunks";
import { getDb } from "../../db/client";
import { emails, type EmailStatus } from "../../db/schema";
import type { Env } from "../../env";
import { CLAIM_LEASE_MS, OUTCOME_UNKNOWN_REASON, updateEmailsById } from "./records";

/**
 * Scheduled sweep, bounded to `limit` records of each kind per run:
 * - QUEUED past the lease (their enqueue was lost): enqueued again and touched,
 *   so the next sweep waits another lease. Claims make a duplicate message harmless.
 * - SENDING past the lease (their consumer died or hung after claiming):
 *   never sent again. Whether the provider got the message cannot be known,
 *   so the record is settled as FAILED with an explicit "Outcome unknown"
 *   reason. Every provider call times out well inside the lease
 *   (SES_TIMEOUT_MS), so a live consumer always records its outcome first.
 */
export async function sweepStuckEmails(env: Env, now = new Date(), limit = 500): Promise<number> {
  const db = getDb(env.DB);
  const cutoff = new Date(now.getTime() - CLAIM_LEASE_MS);
  const stale = (status: EmailStatus) =>
    db
      .select({ id: emails.id, projectId: emails.projectId, bulk: emails.bulk })
      .from(emails)
      .where(and(eq(emails.status, status), lt(emails.updatedAt, cutoff)))
      .limit(limit);
  const [queued, sending] = await db.batch([stale("QUEUED"), stale("SENDING")]);
  await updateEmailsById(
    db,
    sending.map((e) => e.id),
    ["SENDING"],
    {
      status: "FAILED",
      failedAt: now,
      updatedAt: now,
      error: OUTCOME_UNKNOWN_REASON,
    },
  );
  // Bulk mail goes back on the bulk queue, so it keeps yielding to transactional mail.
  for (const [queue, list] of [
    [env.EMAIL_QUEUE, queued.filter((e) => !e.bulk)],
    [env.EMAIL_BULK_QUEUE, queued.filter((e) => e.bulk)],
  ] as const) {
    for (const batch of chunks(list, QUEUE_BATCH)) await queue.sendBatch(batch.map((e) => ({ body: { emailId: e.id, projectId: e.projectId } })));
  }
  // Touch them so the next sweep waits another lease before trying again.
  await updateEmailsById(
    db,
    queued.map((e) => e.id),
    ["QUEUED"],
    { updatedAt: now },
  );
  return queued.length + sending.length;
}
