import { prefetchRoutes, type ShardId, shardEnv } from "./db/shards";
import type { Env } from "./env";
import { HandOver } from "./hand-over";
import { ACK, backoffSeconds, type QueueConsumer, type QueuedMessage, retryAfter, type Verdict } from "./lib/queue-consumer";
import { sendAgainLater } from "./queues";
import { MOVE_RETRY_SECONDS, projectOfMessage, routeOfWork } from "./services/shards/moving";
import { consumeBulk, settleBulkDeadLetters } from "./services/campaigns/bulk";
import {
  BULK_QUEUE,
  deadLetterQueue,
  EMAIL_EVENTS_QUEUE,
  IMPORT_QUEUE,
  INBOUND_QUEUE_NAME,
  type InboundQueueMessage,
  SEND_QUEUE,
  WEBHOOK_QUEUE_NAME,
  type WebhookQueueMessage,
  WORKFLOW_QUEUE_NAME,
  type WorkflowQueueMessage,
} from "./messages";
import { applyEmailServiceEvents } from "./services/feedback/email-service";
import { settleDeadLetters } from "./services/send/dead-letter";
import { deliverBatch } from "./services/send/deliver";
import { consumeWorkflowMessages } from "./services/workflows/triggers";
import { consumeWebhookMessages } from "./services/webhooks/consumer";

export { BULK_QUEUE, SEND_QUEUE, WEBHOOK_QUEUE_NAME, WORKFLOW_QUEUE_NAME } from "./messages";

/** One consumer per queue; a queue not named here is a deployment error (a batch from it throws). */
const CONSUMERS: Record<string, QueueConsumer<unknown, Env>> = {
  [SEND_QUEUE]: (messages, env, afterCommit) => deliverBatch(messages, env, afterCommit, { kind: "transactional", requeue: env.EMAIL_QUEUE }),
  [deadLetterQueue(SEND_QUEUE)]: settleDeadLetters,
  [BULK_QUEUE]: consumeBulk,
  [deadLetterQueue(BULK_QUEUE)]: settleBulkDeadLetters,
  [EMAIL_EVENTS_QUEUE]: applyEmailServiceEvents,
  // Loaded on first use: the CSV libraries stay out of every other queue's first batch.
  [IMPORT_QUEUE]: async (messages, env, afterCommit) => (await import("./services/contact-imports/process")).consumeImportChunks(messages, env, afterCommit),
  [deadLetterQueue(IMPORT_QUEUE)]: async (messages, env, afterCommit) =>
    (await import("./services/contact-imports/process")).settleImportDeadLetters(messages, env, afterCommit),
  [WEBHOOK_QUEUE_NAME]: (messages, env) => consumeWebhookMessages(messages as readonly { id: string; body: WebhookQueueMessage; attempts: number }[], env),
  [WORKFLOW_QUEUE_NAME]: (messages, env) => consumeWorkflowMessages(messages as readonly { id: string; body: WorkflowQueueMessage; attempts: number }[], env),
  // Loaded on first use: postal-mime stays out of every other queue's first batch.
  [INBOUND_QUEUE_NAME]: async (messages, env, afterCommit) =>
    (await import("./services/inbound/consume")).consumeInbound(messages as readonly QueuedMessage<InboundQueueMessage>[], env, afterCommit),
  [deadLetterQueue(INBOUND_QUEUE_NAME)]: async (messages, env) =>
    (await import("./services/inbound/consume")).settleInboundDeadLetters(messages as readonly QueuedMessage<InboundQueueMessage>[], env),
};

/**
 * Routes a batch to its queue's consumer and applies the consumer's verdicts:
 * the only place messages are acked or retried. A consumer that throws (e.g.
 * D1 unavailable) has its whole batch retried with back-off; everything the
 * consumers do is safe to repeat (claims, unique keys, conditional updates).
 * What the batch's writes recorded (webhook events, workflow triggers) leaves
 * through one HandOver after the consumer.
 */
export async function handleQueue(batch: MessageBatch<unknown>, env: Env): Promise<void> {
  const consumer = Object.hasOwn(CONSUMERS, batch.queue) ? CONSUMERS[batch.queue] : undefined;
  if (!consumer) throw new Error(`No consumer for queue "${batch.queue}": add it to CONSUMERS in src/queue.ts (queue names as in wrangler.toml)`);
  let verdicts: Verdict[];
  const handOver = new HandOver(env);
  try {
    verdicts = await onShards(consumer, batch.queue, batch.messages, env, handOver);
  } catch (err) {
    console.error(`consumer of ${batch.queue} failed; retrying its batch`, err);
    for (const message of batch.messages) message.retry({ delaySeconds: backoffSeconds(message.attempts) });
    return;
  } finally {
    // What the batch committed leaves whatever the verdicts (it is in D1 either way).
    await handOver.flush();
  }
  batch.messages.forEach((message, i) => {
    const verdict = verdicts[i];
    if (verdict && "retryAfterSeconds" in verdict) message.retry({ delaySeconds: verdict.retryAfterSeconds });
    else message.ack();
  });
}

/**
 * A batch's messages grouped by the data shard each one's project is on (routeOfWork), the
 * consumer run once per shard with that shard's env, the verdicts put back in the batch's order.
 * One shard (every small install, most batches): the consumer sees the batch as it came.
 * Messages of a project that is moving between shards go back to their queue to wait
 * (src/services/shards/moving.ts), acked here, or retried where the queue has no producer.
 */
async function onShards(
  consumer: QueueConsumer<unknown, Env>,
  queue: string,
  messages: readonly QueuedMessage<unknown>[],
  env: Env,
  handOver: HandOver,
): Promise<Verdict[]> {
  // One control read for the batch's projects the route cache lacks, not one per project.
  await prefetchRoutes(
    env,
    messages.map((m) => projectOfMessage(m.body)).filter((id): id is string => id !== null),
  );
  const groups = new Map<ShardId, number[]>();
  const held: number[] = [];
  for (const [i, message] of messages.entries()) {
    const route = await routeOfWork(env, message.body);
    if (route.held) {
      held.push(i);
      continue;
    }
    const group = groups.get(route.shard) ?? [];
    group.push(i);
    groups.set(route.shard, group);
  }
  if (held.length === 0 && groups.size === 1) {
    const [shard] = groups.keys();
    return consumer(messages, shardEnv(env, shard), handOver);
  }
  const verdicts: Verdict[] = new Array(messages.length);
  if (held.length > 0) {
    const sentAgain = await sendAgainLater(
      env,
      queue,
      held.map((i) => messages[i].body),
      MOVE_RETRY_SECONDS,
    );
    for (const i of held) verdicts[i] = sentAgain ? ACK : retryAfter(MOVE_RETRY_SECONDS);
  }
  for (const [shard, indexes] of groups) {
    const got = await consumer(
      indexes.map((i) => messages[i]),
      shardEnv(env, shard),
      handOver,
    );
    indexes.forEach((i, k) => {
      verdicts[i] = got[k];
    });
  }
  return verdicts;
}
