import { and, eq, isNull, lt, or } from "drizzle-orm";
import { getDb } from "../../db/client";
import { emails } from "../../db/schema";
import type { Env } from "../../env";
import type { AfterCommit } from "../../lib/after-commit";
import { newId } from "../../lib/ids";
import { deferClaims, PENDING_STATUS, updateEmailsById } from "../../store/emails";
import { recordEmailWebhookEvents } from "../../store/webhooks/events";
import { WriteBatch } from "../../store/batch";
import { resumeWalks } from "../campaigns/audience";
import { CLAIM_LEASE_MS, OUTCOME_UNKNOWN_REASON, QUEUED_LEASE_MS } from "./reasons";
import { enqueueMail } from "../../queues";

/**
 * Records of each kind one sweep handles at most: a crash that lost a 2,000-email backlog is queued
 * again in one tick (about 20 sendBatch calls and a few statements).
 */
export const SWEEP_LIMIT = 2_000;

/**
 * Scheduled sweep (every cron tick, so within a lease plus a minute), bounded to `limit` records of each
 * kind per run (the email.failed events it records leave through the cron tick's `afterCommit`):
 * - QUEUED untouched for QUEUED_LEASE_MS (and not waiting for a retry's back-off, retry_at): their queue
 *   message was lost; enqueued again and touched, so the next sweep waits another lease. Claims make a
 *   duplicate message harmless.
 * - SENDING past CLAIM_LEASE_MS: their invocation died after claiming (a live consumer never holds a claim
 *   that long, see deliverBatch). One whose call had not started (sending_at NULL) goes back to QUEUED and is
 *   queued again. One whose call had started is never sent again: whether the provider got the message
 *   cannot be known, so it is settled as FAILED with the "Outcome unknown" reason, as a provider call
 *   without an answer is, and reconciled from the provider's events if it did (feedback/apply.ts).
 */
export async function sweepStuckEmails(
  env: Env,
  now = new Date(),
  { afterCommit, limit = SWEEP_LIMIT }: { afterCommit?: AfterCommit; limit?: number } = {},
): Promise<number> {
  const db = getDb(env.DB);
  const queuedCutoff = new Date(now.getTime() - QUEUED_LEASE_MS);
  const claimCutoff = new Date(now.getTime() - CLAIM_LEASE_MS);
  const columns = { id: emails.id, projectId: emails.projectId, bulk: emails.bulk, campaignId: emails.campaignId, sendingAt: emails.sendingAt };
  // As the partial index emails_pending_idx is defined, so SQLite uses it (migration 0028).
  const pending = PENDING_STATUS;
  const [waiting, claims] = await db.batch([
    db
      .select(columns)
      .from(emails)
      .where(and(pending, eq(emails.status, "QUEUED"), lt(emails.updatedAt, queuedCutoff), or(isNull(emails.retryAt), lt(emails.retryAt, queuedCutoff))))
      .limit(limit),
    db
      .select(columns)
      .from(emails)
      .where(and(pending, eq(emails.status, "SENDING"), lt(emails.updatedAt, claimCutoff)))
      .limit(limit),
  ]);
  // A dead claim whose call never started is given back (its attempt not counted) and queued again with the lost mail.
  const unstarted = claims.filter((e) => e.sendingAt === null);
  const sending = claims.filter((e) => e.sendingAt !== null);
  if (unstarted.length > 0) {
    const giveBack = new WriteBatch(env.DB);
    giveBack.add(
      ...deferClaims(
        env.DB,
        unstarted.map((e) => e.id),
        now.getTime(),
        now.getTime(),
      ),
    );
    await giveBack.run();
  }
  const queued = [...waiting, ...unstarted];
  if (sending.length > 0) {
    const ids = sending.map((e) => e.id);
    // The settle and its email.failed events (each only for an email this write failed: failed_at = now) in one batch.
    const settle = new WriteBatch(env.DB);
    settle.add(
      ...updateEmailsById(env.DB, ids, ["SENDING"], { status: "FAILED", failedAt: now, updatedAt: now, error: OUTCOME_UNKNOWN_REASON }),
      recordEmailWebhookEvents(
        env.DB,
        ids.map((emailId) => ({
          id: newId(),
          emailId,
          type: "email.failed",
          when: "set:failed_at",
          error: OUTCOME_UNKNOWN_REASON,
          extra: { reason: OUTCOME_UNKNOWN_REASON },
        })),
        now,
      ),
    );
    await settle.run({ afterCommit });
  }
  // Bulk mail goes back on the bulk queue, so it keeps yielding to transactional mail.
  // A campaign email keeps its campaignId, so the batch that sends it also finishes the campaign.
  await enqueueMail(
    env,
    queued.map((e) => ({ emailId: e.id, projectId: e.projectId, bulk: e.bulk, campaignId: e.campaignId })),
    { onFailure: "throw" },
  );
  // Their campaigns' audience walks lost their next page message with them: queued again at once.
  await resumeWalks(env, [...new Set(waiting.flatMap((e) => (e.campaignId ? [e.campaignId] : [])))], now);
  // Touch them so the next sweep waits another lease before trying again.
  const touch = new WriteBatch(env.DB);
  touch.add(
    ...updateEmailsById(
      env.DB,
      queued.map((e) => e.id),
      ["QUEUED"],
      { updatedAt: now, retryAt: null },
    ),
  );
  await touch.run();
  return queued.length + sending.length;
}
