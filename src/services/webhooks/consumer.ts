import type { Env, WebhookQueueMessage } from "../../env";
import { ACK, type QueuedMessage, type Verdict } from "../../lib/queue-consumer";
import { claimAttempts, joinClaimed, NONE, runAttempts } from "./attempts";
import { fanOut } from "./fan-out";

/**
 * The consumer of edge-mail-webhooks (messages.ts), two kinds of message:
 * - `event`: a recorded event to fan out (fan-out.ts), whose first attempts
 *   are made here or queued;
 * - `delivery`: one attempt of one delivery (attempts.ts claimAttempts).
 * Both sets of claimed attempts then run in one set of lanes (the
 * invocation's connections are shared). Every message is acked once its work
 * is written; a throw (D1 unavailable, ...) makes src/queue.ts retry the whole
 * batch, which is safe: fan-out is idempotent and an attempt is claimed
 * before it is sent. The cron's sweep.ts catches whatever is lost.
 */
export async function consumeWebhookMessages(messages: readonly QueuedMessage<WebhookQueueMessage>[], env: Env): Promise<Verdict[]> {
  const events = messages.flatMap((m) => (m.body.kind === "event" ? [m.body.eventId] : []));
  const deliveries = messages.flatMap((m) =>
    m.body.kind === "delivery" ? [{ deliveryId: m.body.deliveryId, projectId: m.body.projectId, attempt: m.body.attempt }] : [],
  );
  const now = new Date();
  const [fanned, queued] = await Promise.all([
    events.length > 0 ? fanOut(env, [...new Set(events)]) : NONE,
    deliveries.length > 0 ? claimAttempts(env, deliveries) : NONE,
  ]);
  await runAttempts(env, joinClaimed(fanned, queued), now);
  return messages.map(() => ACK);
}
