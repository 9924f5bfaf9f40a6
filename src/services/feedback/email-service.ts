import { getDb } from "../../db/client";
import { shardEnv, shardIds } from "../../db/shards";
import type { Env } from "../../env";
import type { AfterCommit } from "../../lib/after-commit";
import { normalizeMessageId } from "../../outside/providers/cloudflare";
import { applyFeedback, type Feedback } from "./apply";
import { ACK, retryAfter, type QueuedMessage, type Verdict } from "../../lib/queue-consumer";
import { isMoving, MOVE_RETRY_SECONDS, shardInMove, shardsInMovesCache } from "../shards/moving";

/**
 * Cloudflare Email Service feedback. Email Sending publishes lifecycle events
 * of a sending domain to a Queue through an event subscription
 * (https://developers.cloudflare.com/email-service/platform/event-subscriptions/),
 * consumed here from EMAIL_EVENTS_QUEUE. Mapped to the same outcomes as SES's
 * (./apply.ts):
 * - message.delivered: DELIVERED;
 * - message.bounced, hard (or classification permanent_failure): BOUNCED,
 *   suppression, contact unsubscribed; a soft one (retries exhausted on a
 *   temporary failure) is recorded as a Transient email.bounced event, like
 *   SES's transient bounces;
 * - message.complained: COMPLAINED, suppression, contact unsubscribed;
 * - message.failed / message.rejected (after send() accepted the message):
 *   FAILED with the reason;
 * - message.deferred: nothing (a retry is pending; its outcome comes later).
 * Events are matched by message id (stored without angle brackets).
 */
export { EMAIL_EVENTS_QUEUE } from "../../messages";

const PREFIX = "cf.email.sending.message.";
const MAX_ID_LENGTH = 998;

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);
const str = (v: unknown, max = 2000): string | undefined => (typeof v === "string" && v.length > 0 ? v.slice(0, max) : undefined);
const when = (v: unknown): Date | undefined => {
  const parsed = typeof v === "string" ? Date.parse(v) : NaN;
  return Number.isNaN(parsed) ? undefined : new Date(parsed);
};

/** The feedback an event stands for, or null when it changes nothing (deferred, other sources, malformed). */
export function parseEmailServiceEvent(body: unknown): Feedback | null {
  if (!isObj(body) || !isObj(body.payload)) return null;
  const type = str(body.type, 100);
  if (!type?.startsWith(PREFIX)) return null;
  const payload = body.payload;
  const rawId = str(payload.messageId, MAX_ID_LENGTH);
  if (!rawId) return null;
  const providerMessageId = normalizeMessageId(rawId);
  if (!providerMessageId) return null;
  const at = when(isObj(body.metadata) ? body.metadata.eventTimestamp : undefined);
  const feedbackId = str(payload.eventId, 200) ?? `${type}:${providerMessageId}`;
  const delivery = isObj(payload.delivery) ? payload.delivery : {};

  switch (type.slice(PREFIX.length)) {
    case "delivered":
      return { kind: "delivered", providerMessageId, at };
    case "bounced": {
      const bounce = isObj(payload.bounce) ? payload.bounce : {};
      const permanent = bounce.type === "hard" || bounce.classification === "permanent_failure";
      const diagnosticCode = str(bounce.reason) ?? str(delivery.smtpResponse);
      const classification = str(bounce.classification, 100);
      const smtpStatus = str(delivery.smtpEnhancedStatusCode, 20);
      return {
        kind: "bounce",
        providerMessageId,
        permanent,
        feedbackId,
        data: {
          bounceType: permanent ? "Permanent" : "Transient",
          ...(classification ? { bounceSubType: classification } : {}),
          ...(diagnosticCode ? { diagnosticCode } : {}),
          ...(smtpStatus ? { smtpStatus } : {}),
        },
        reason: diagnosticCode ?? "Permanent bounce",
        at,
      };
    }
    case "complained": {
      const complaintType = str(isObj(payload.complaint) ? payload.complaint.type : undefined, 100);
      return {
        kind: "complaint",
        providerMessageId,
        feedbackId,
        data: complaintType ? { complaintFeedbackType: complaintType } : {},
        detail: `Complaint${complaintType ? ` (${complaintType})` : ""}`,
        at,
      };
    }
    case "failed": {
      const reason = str(isObj(payload.failure) ? payload.failure.reason : undefined, 500) ?? "failed";
      return { kind: "failed", providerMessageId, reason: `Cloudflare Email Service could not deliver: ${reason}`, at };
    }
    case "rejected": {
      const rejection = isObj(payload.rejection) ? payload.rejection : {};
      const reason = [str(rejection.reason, 200), str(rejection.detail, 500)].filter(Boolean).join(": ") || "rejected";
      return { kind: "failed", providerMessageId, reason: `Rejected by Cloudflare Email Service: ${reason}`, at };
    }
    default:
      return null;
  }
}

/**
 * How long an event of a moving project waits. The queue has no producer here (Cloudflare sends to it),
 * so a held event is retried and each wait uses one of its max_retries (5): the waits grow fourfold from
 * MOVE_RETRY_SECONDS (30 s, 2, 8, 32 min, 2 h: close to three hours in all) to outlast a long move.
 */
export const heldDelaySeconds = (attempts: number) => MOVE_RETRY_SECONDS * 4 ** Math.min(Math.max(0, attempts - 1), 4);

/**
 * Consumer of EMAIL_EVENTS_QUEUE. Every event is applied on its own (a batch
 * holds at most max_batch_size of them); events that change nothing (deferred,
 * unknown mail, malformed) are acked, a database failure is retried. The
 * webhook events they record leave through the batch's `afterCommit`.
 */
export async function applyEmailServiceEvents(messages: readonly QueuedMessage<unknown>[], env: Env, afterCommit: AfterCommit): Promise<Verdict[]> {
  const verdicts: Verdict[] = [];
  // The shards in a move: one control read per batch.
  const moves = shardsInMovesCache(Date.now);
  for (const message of messages) {
    const feedback = parseEmailServiceEvent(message.body);
    if (!feedback) {
      verdicts.push(ACK);
      continue;
    }
    try {
      // Cloudflare's events name the message id only: each data shard in turn until one has the email (one shard: one try).
      let outcome = "unknown-email";
      for (const shard of shardIds(env)) {
        const shardScoped = shardEnv(env, shard);
        const held = (await shardInMove(env, shard, moves)) ? (projectId: string) => isMoving(env, projectId) : undefined;
        outcome = await applyFeedback(getDb(shardScoped.DB), feedback, shardScoped, afterCommit, held);
        if (outcome !== "unknown-email") break;
      }
      // Its project moving between shards: nothing written (it could be lost in the copy); delivered again after the move.
      verdicts.push(outcome === "held" ? retryAfter(heldDelaySeconds(message.attempts)) : ACK);
    } catch (err) {
      console.error("applying an Email Service event failed", message.id, err);
      verdicts.push(retryAfter(30));
    }
  }
  return verdicts;
}
