import { type ShardId, shardField, shardOf } from "./db/shards";
import type { Env } from "./env";
import { chunks, QUEUE_BATCH } from "./lib/chunks";
import type {
  CampaignEmailMessage,
  CampaignPageMessage,
  CampaignResumeMessage,
  ImportChunkMessage,
  InboundQueueMessage,
  SendEmailMessage,
  WebhookQueueMessage,
  WorkflowQueueMessage,
} from "./messages";
import { BULK_QUEUE, IMPORT_QUEUE, INBOUND_QUEUE_NAME, SEND_QUEUE, WEBHOOK_QUEUE_NAME, WORKFLOW_QUEUE_NAME } from "./messages";

/**
 * Every queue producer of the Worker (names and bodies: messages.ts;
 * consumers: queue.ts). Messages go QUEUE_BATCH per sendBatch. Work is always
 * in D1 before its message is sent, so a send that fails loses nothing: the
 * producers that log instead of throwing say which cron job picks the work up.
 * Every message carries `shard`, the data shard of the env its producer runs with
 * (src/db/shards.ts shardEnv; left out for shard 0), so its consumer reaches the project without a lookup.
 */

type Message<B> = MessageSendRequest<B>;

/** Sends every message, QUEUE_BATCH per call, the calls at once; throws when one failed. */
async function sendAll<B>(queue: Queue<B>, messages: readonly Message<B>[]): Promise<void> {
  await Promise.all(chunks(messages, QUEUE_BATCH).map((part) => queue.sendBatch(part)));
}

/** Sends every message, QUEUE_BATCH per call, logging failures (`whoRetries` says which cron job picks the work up); false when any failed. */
async function sendLogged<B>(queue: Queue<B>, messages: readonly Message<B>[], whoRetries: string): Promise<boolean> {
  let ok = true;
  for (const part of chunks(messages, QUEUE_BATCH)) {
    try {
      await queue.sendBatch(part);
    } catch (err) {
      console.error(`queueing failed; ${whoRetries}`, err);
      ok = false;
    }
  }
  return ok;
}

// Mail ----------------------------------------------------------------------

/** An email record to send: transactional mail goes to the send queue, bulk mail (campaigns, MARKETING steps) to the bulk queue. */
export interface MailToSend {
  emailId: string;
  projectId: string;
  bulk: boolean;
  /** A campaign email keeps its campaignId, so the batch that sends it also finishes the campaign. */
  campaignId?: string | null;
}

const mailBody = (m: MailToSend, shard: ShardId): SendEmailMessage | CampaignEmailMessage =>
  m.campaignId
    ? { emailId: m.emailId, projectId: m.projectId, campaignId: m.campaignId, ...shardField(shard) }
    : { emailId: m.emailId, projectId: m.projectId, ...shardField(shard) };

/**
 * Queues email records (already QUEUED in D1). `onFailure: "log"` (default):
 * the stuck-email sweep re-queues what is not sent; "throw": the caller's
 * message is retried instead (a campaign page, the sweep itself).
 */
export async function enqueueMail(env: Env, mail: readonly MailToSend[], options: { onFailure?: "log" | "throw"; delaySeconds?: number } = {}): Promise<void> {
  const delay = options.delaySeconds ? { delaySeconds: options.delaySeconds } : {};
  const shard = shardOf(env);
  const transactional = mail.filter((m) => !m.bulk).map((m) => ({ body: mailBody(m, shard) as SendEmailMessage, ...delay }));
  const bulk = mail.filter((m) => m.bulk).map((m) => ({ body: mailBody(m, shard), ...delay }));
  if (options.onFailure === "throw") {
    await Promise.all([sendAll(env.EMAIL_QUEUE, transactional), sendAll(env.EMAIL_BULK_QUEUE, bulk)]);
    return;
  }
  await sendLogged(env.EMAIL_QUEUE, transactional, "the sweep will retry");
  await sendLogged(env.EMAIL_BULK_QUEUE, bulk, "the sweep will retry");
}

/** Puts a consumer's messages back on its own queue after a delay (over the sending rate); throws when queueing failed. */
export async function requeueMail<B extends SendEmailMessage>(queue: Queue<B>, bodies: readonly B[], delaySeconds: number): Promise<void> {
  await sendAll(
    queue,
    bodies.map((body) => ({ body, delaySeconds })),
  );
}

/** The next page of a campaign's audience walk (bulk queue); throws when queueing failed. */
export async function enqueueCampaignPage(env: Env, page: Omit<CampaignPageMessage, "kind">): Promise<void> {
  await env.EMAIL_BULK_QUEUE.send({ kind: "campaign-page", ...page, ...shardField(shardOf(env)) } satisfies CampaignPageMessage);
}

/** The next page of a resumed campaign's QUEUED emails to queue again (services/campaigns/pause.ts). */
export async function enqueueCampaignResume(env: Env, page: Omit<CampaignResumeMessage, "kind">): Promise<void> {
  await env.EMAIL_BULK_QUEUE.send({ kind: "campaign-resume", ...page, ...shardField(shardOf(env)) } satisfies CampaignResumeMessage);
}

// Imports -------------------------------------------------------------------

/** One message per chunk of an import's file; throws when queueing failed (the import cron re-queues lost chunks). */
export async function enqueueImportChunks(env: Env, chunkMessages: readonly ImportChunkMessage[]): Promise<void> {
  await sendAll(
    env.IMPORT_QUEUE,
    chunkMessages.map((body) => ({ body: { ...body, ...shardField(shardOf(env)) } })),
  );
}

// Inbound mail --------------------------------------------------------------

/** A received message to parse (its row is RECEIVED in D1); throws when queueing failed (the inbound sweep re-queues it). */
export async function enqueueInbound(env: Env, message: Omit<InboundQueueMessage, "shard">): Promise<void> {
  await env.INBOUND_QUEUE.send({ ...message, ...shardField(shardOf(env)) } satisfies InboundQueueMessage);
}

// Workflows -----------------------------------------------------------------

/**
 * Workflow triggers and terminations. `onFailure: "throw"` (default): the
 * caller puts its outbox rows back; "log": terminations, whose instances stop
 * at their next step anyway.
 */
export async function enqueueWorkflowMessages(
  env: Env,
  messages: readonly WorkflowQueueMessage[],
  options: { onFailure?: "log" | "throw" } = {},
): Promise<void> {
  const wrapped = messages.map((body) => ({ body: { ...body, ...shardField(shardOf(env)) } }));
  if (options.onFailure === "log") await sendLogged(env.WORKFLOW_QUEUE, wrapped, "the executions are settled in D1");
  else await sendAll(env.WORKFLOW_QUEUE, wrapped);
}

// Webhooks ------------------------------------------------------------------

const WEBHOOK_RETRIES = "the cron's webhook drain re-queues them";

/** A recorded webhook event to fan out; `shard` where it was recorded (default: the env's). */
export interface EventToFanOut {
  id: string;
  projectId: string;
  shard?: ShardId;
}

/** Recorded webhook events to fan out; false when queueing failed (logged: the cron's outbox drain queues them). */
export function enqueueWebhookEvents(env: Env, events: readonly EventToFanOut[]): Promise<boolean> {
  if (events.length === 0) return Promise.resolve(true);
  return sendLogged(
    env.WEBHOOK_QUEUE,
    events.map((e) => ({
      body: { kind: "event", eventId: e.id, projectId: e.projectId, ...shardField(e.shard ?? shardOf(env)) } satisfies WebhookQueueMessage,
    })),
    WEBHOOK_RETRIES,
  );
}

/** Attempts of deliveries (attempt = the attempt number the message may claim); false when queueing failed (logged). */
export function enqueueDeliveries(
  env: Env,
  items: readonly { deliveryId: string; projectId: string; attempt: number; delaySeconds?: number }[],
): Promise<boolean> {
  if (items.length === 0) return Promise.resolve(true);
  return sendLogged(
    env.WEBHOOK_QUEUE,
    items.map(({ delaySeconds, ...item }) => ({
      body: { kind: "delivery", ...item, ...shardField(shardOf(env)) } satisfies WebhookQueueMessage,
      ...(delaySeconds ? { delaySeconds } : {}),
    })),
    WEBHOOK_RETRIES,
  );
}

/** Rounds of hand-over one request sends for the requests that arrive while it sends, before it lets the next one take over. */
const HANDOVER_ROUNDS = 8;

/**
 * The requests' hand-over of the events they recorded, per isolate (one per
 * app): a request with nothing being sent for its queue sends its events at
 * once; requests whose events arrive while that send is in flight only add
 * theirs, and the sending request sends them next, QUEUE_BATCH per sendBatch.
 * So under load an isolate makes one queue call per round instead of one per
 * request, and no request waits on another's I/O. After HANDOVER_ROUNDS what
 * is left goes with the next request's hand-over. The events are in D1
 * already; whatever no hand-over sends the cron's outbox drain queues.
 */
export class WebhookEventCoalescer {
  private waiting = new WeakMap<object, { events: EventToFanOut[]; sending: boolean }>();

  handOver(env: Env, events: readonly EventToFanOut[]): Promise<void> {
    if (events.length === 0) return Promise.resolve();
    let lane = this.waiting.get(env.WEBHOOK_QUEUE);
    if (!lane) {
      lane = { events: [], sending: false };
      this.waiting.set(env.WEBHOOK_QUEUE, lane);
    }
    lane.events.push(...events);
    return lane.sending ? Promise.resolve() : this.send(env, lane);
  }

  private async send(env: Env, lane: { events: EventToFanOut[]; sending: boolean }) {
    lane.sending = true;
    try {
      for (let round = 0; round < HANDOVER_ROUNDS && lane.events.length > 0; round++) {
        await enqueueWebhookEvents(env, lane.events.splice(0, QUEUE_BATCH));
      }
    } finally {
      lane.sending = false;
    }
  }
}

// Moves ---------------------------------------------------------------------

/** The producer binding of each queue a held message can go back to (dead-letter queues have none). */
const PRODUCER_OF: Readonly<Record<string, "EMAIL_QUEUE" | "EMAIL_BULK_QUEUE" | "IMPORT_QUEUE" | "WORKFLOW_QUEUE" | "WEBHOOK_QUEUE" | "INBOUND_QUEUE">> = {
  [SEND_QUEUE]: "EMAIL_QUEUE",
  [BULK_QUEUE]: "EMAIL_BULK_QUEUE",
  [IMPORT_QUEUE]: "IMPORT_QUEUE",
  [WORKFLOW_QUEUE_NAME]: "WORKFLOW_QUEUE",
  [WEBHOOK_QUEUE_NAME]: "WEBHOOK_QUEUE",
  [INBOUND_QUEUE_NAME]: "INBOUND_QUEUE",
};

/**
 * Messages of a project that is moving between shards (src/services/shards/moving.ts), sent to their
 * queue again with a delay, so waiting for the move uses up none of their retries; throws when
 * queueing failed. False when the queue has no producer here (a dead-letter queue): retry those instead.
 */
export async function sendAgainLater(env: Env, queueName: string, bodies: readonly unknown[], delaySeconds: number): Promise<boolean> {
  const binding = Object.hasOwn(PRODUCER_OF, queueName) ? PRODUCER_OF[queueName] : undefined;
  if (!binding) return false;
  if (bodies.length > 0)
    await sendAll(
      env[binding] as Queue<unknown>,
      bodies.map((body) => ({ body, delaySeconds })),
    );
  return true;
}
