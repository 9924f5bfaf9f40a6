import type { Env } from "./env";
import { backoffSeconds, type QueueConsumer, type Verdict } from "./lib/queue-consumer";
import { consumeBulk, settleBulkDeadLetters } from "./services/campaigns/bulk";
import { applyEmailServiceEvents, EMAIL_EVENTS_QUEUE } from "./services/feedback/email-service";
import { settleDeadLetters } from "./services/send/dead-letter";
import { deliverBatch } from "./services/send/deliver";
import type { WorkflowQueueMessage } from "./services/workflows/executions";
import { consumeWorkflowMessages } from "./services/workflows/triggers";
import { consumeWebhookMessages, type WebhookQueueMessage } from "./services/webhooks/deliver";

/** Queue names, as in wrangler.toml (the names are what a batch says it came from). */
export const SEND_QUEUE = "edge-mail-send";
/** Bulk mail (campaigns) has its own queue and DLQ, so transactional mail never waits behind it. */
export const BULK_QUEUE = "edge-mail-bulk";
/** The workflow queue: trigger and terminate messages. */
export const WORKFLOW_QUEUE_NAME = "edge-mail-workflows";
/** Event webhooks: fan-out and delivery attempts. */
export const WEBHOOK_QUEUE_NAME = "edge-mail-webhooks";

/** One consumer per queue; a queue not named here is a deployment error (a batch from it throws). */
const CONSUMERS: Record<string, QueueConsumer<unknown, Env>> = {
  [SEND_QUEUE]: (messages, env) => deliverBatch(messages, env, { kind: "transactional", requeue: env.EMAIL_QUEUE }),
  [`${SEND_QUEUE}-dlq`]: settleDeadLetters,
  [BULK_QUEUE]: consumeBulk,
  [`${BULK_QUEUE}-dlq`]: settleBulkDeadLetters,
  [EMAIL_EVENTS_QUEUE]: applyEmailServiceEvents,
  [WEBHOOK_QUEUE_NAME]: (messages, env) => consumeWebhookMessages(messages as readonly { id: string; body: WebhookQueueMessage; attempts: number }[], env),
  [WORKFLOW_QUEUE_NAME]: (messages, env) => consumeWorkflowMessages(messages as readonly { id: string; body: WorkflowQueueMessage; attempts: number }[], env),
};

/**
 * Routes a batch to its queue's consumer and applies the consumer's verdicts:
 * the only place messages are acked or retried. A consumer that throws (e.g.
 * D1 unavailable) has its whole batch retried with back-off; everything the
 * consumers do is safe to repeat (claims, unique keys, conditional updates).
 */
export async function handleQueue(batch: MessageBatch<unknown>, env: Env): Promise<void> {
  const consumer = Object.hasOwn(CONSUMERS, batch.queue) ? CONSUMERS[batch.queue] : undefined;
  if (!consumer) throw new Error(`No consumer for queue "${batch.queue}": add it to CONSUMERS in src/queue.ts (queue names as in wrangler.toml)`);
  let verdicts: Verdict[];
  try {
    verdicts = await consumer(batch.messages, env);
  } catch (err) {
    console.error(`consumer of ${batch.queue} failed; retrying its batch`, err);
    for (const message of batch.messages) message.retry({ delaySeconds: backoffSeconds(message.attempts) });
    return;
  }
  batch.messages.forEach((message, i) => {
    const verdict = verdicts[i];
    if (verdict && "retryAfterSeconds" in verdict) message.retry({ delaySeconds: verdict.retryAfterSeconds });
    else message.ack();
  });
}
