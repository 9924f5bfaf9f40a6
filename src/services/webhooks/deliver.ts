import { fromRow } from "../../db/client";
import { webhookDeliveries, webhookEndpoints, type WebhookDelivery, type WebhookEndpoint } from "../../db/schema";
import type { Env, WebhookQueueMessage } from "../../env";
import { readConfig, requireEncryptionKey } from "../../lib/config";
import { newId } from "../../lib/ids";
import { mapLimited } from "../../lib/limited";
import { ACK, type QueuedMessage, type Verdict } from "../../lib/queue-consumer";
import { signWebhook } from "../../lib/standard-webhooks";
import * as store from "../../store/webhooks";
import { decryptPrivateKey } from "../domains/dkim";
import { outboundTargetProblem, type TargetProblem } from "../outbound-url";

export type { WebhookQueueMessage };

/**
 * Event webhooks' queue (edge-mail-webhooks), two kinds of message:
 * - `event`: a recorded event; its consumer makes one PENDING delivery per
 *   enabled, subscribed endpoint (a unique (endpoint, event) pair, so a
 *   redelivered message makes none twice) and queues their first attempts;
 * - `delivery`: one attempt of one delivery. The attempt is claimed in D1
 *   before anything is sent (see store.claimDeliveries), so a redelivered or
 *   stale message sends nothing; the outcome is written after the call, and a
 *   failure queues the next attempt with the schedule's delay.
 */

/** Seconds before attempt n+1 after attempt n failed (n = 1..10); after the 11th the delivery is FAILED. */
export const RETRY_SCHEDULE_SECONDS = [5, 30, 120, 600, 1800, 3600, 7200, 14_400, 28_800, 28_800] as const;
/** A receiver must answer 2xx within this. */
export const WEBHOOK_TIMEOUT_MS = 10_000;
/** An endpoint whose every attempt failed for this long is disabled. */
export const DISABLE_AFTER_MS = 5 * 24 * 60 * 60 * 1000;
/** How long a claimed attempt may run before another message may take it over (far above the timeout). */
const CLAIM_MS = 60_000;
/**
 * Endpoint calls in flight per invocation: a Worker keeps at most 6 outgoing
 * connections open at once, and a call waiting for one would spend its 10 s
 * timeout waiting.
 */
const CALL_CONCURRENCY = 6;
/** First attempts a fan-out makes itself (the rest are queued): the queue's max_batch_size, inside the subrequest limit. */
const INLINE_ATTEMPTS = 100;
/** Characters of a receiver's answer kept in lastError. */
const ERROR_BODY_CHARS = 200;

/** Hands messages to the queue, 100 per sendBatch. Failures are logged: the cron's sweep re-queues what is overdue. */
async function sendMessages(env: Env, messages: { body: WebhookQueueMessage; delaySeconds?: number }[]): Promise<boolean> {
  let ok = true;
  for (let i = 0; i < messages.length; i += 100) {
    try {
      await env.WEBHOOK_QUEUE.sendBatch(messages.slice(i, i + 100));
    } catch (err) {
      console.error("queueing webhook messages failed; the cron re-queues them", err);
      ok = false;
    }
  }
  return ok;
}

/** Queues attempts of deliveries (attempt = the attempt number the message may claim). */
export function queueDeliveries(env: Env, items: { deliveryId: string; projectId: string; attempt: number; delaySeconds?: number }[]) {
  return sendMessages(
    env,
    items.map(({ delaySeconds, ...item }) => ({ body: { kind: "delivery", ...item }, ...(delaySeconds ? { delaySeconds } : {}) })),
  );
}

/** Rounds of hand-over one request sends for the requests that arrive while it sends, before it lets the next one take over. */
const HANDOVER_ROUNDS = 8;

/**
 * The requests' hand-over of the events they recorded, per isolate (one per
 * app): a request with nothing being sent for its queue sends its events at
 * once; requests whose events arrive while that send is in flight only add
 * theirs, and the sending request sends them next, 100 per sendBatch. So
 * under load an isolate makes one queue call per round instead of one per
 * request, and no request waits on another's I/O: a request either sends or
 * returns at once. After HANDOVER_ROUNDS what is left goes with the next
 * request's hand-over. The events are in D1 already; whatever no hand-over
 * sends (its invocation died) the cron's outbox drain queues after its grace period.
 */
export class WebhookHandover {
  private waiting = new WeakMap<object, { messages: { body: WebhookQueueMessage }[]; sending: boolean }>();

  handOver(env: Env, projectId: string, eventIds: string[]): Promise<void> {
    if (eventIds.length === 0) return Promise.resolve();
    let lane = this.waiting.get(env.WEBHOOK_QUEUE);
    if (!lane) {
      lane = { messages: [], sending: false };
      this.waiting.set(env.WEBHOOK_QUEUE, lane);
    }
    for (const eventId of eventIds) lane.messages.push({ body: { kind: "event", eventId, projectId } });
    return lane.sending ? Promise.resolve() : this.send(env, lane);
  }

  /** Rows a record statement returned (`id`, `project_id`), whatever their projects. */
  handOverRows(env: Env, rows: readonly Record<string, unknown>[]): Promise<void> {
    const byProject = new Map<string, string[]>();
    for (const r of rows) {
      if (typeof r.id !== "string" || typeof r.project_id !== "string") continue;
      const ids = byProject.get(r.project_id);
      if (ids) ids.push(r.id);
      else byProject.set(r.project_id, [r.id]);
    }
    return Promise.all([...byProject].map(([projectId, ids]) => this.handOver(env, projectId, ids))).then(() => undefined);
  }

  private async send(env: Env, lane: { messages: { body: WebhookQueueMessage }[]; sending: boolean }) {
    lane.sending = true;
    try {
      for (let round = 0; round < HANDOVER_ROUNDS && lane.messages.length > 0; round++) {
        await sendMessages(env, lane.messages.splice(0, 100));
      }
    } finally {
      lane.sending = false;
    }
  }
}

/** Hands recorded events (ids from a write batch, see store.recordedEventIds) to the queue for fan-out. */
export function queueWebhookEvents(env: Env, projectId: string, eventIds: string[]) {
  if (eventIds.length === 0) return Promise.resolve(true);
  return sendMessages(
    env,
    eventIds.map((eventId) => ({ body: { kind: "event", eventId, projectId } })),
  );
}

/** Hands over events from rows a record statement returned (`id`, `project_id`), whatever their projects. */
export function queueRecordedEvents(env: Env, rows: readonly Record<string, unknown>[]) {
  const valid = rows.filter((r) => typeof r.id === "string" && typeof r.project_id === "string");
  if (valid.length === 0) return Promise.resolve(true);
  return sendMessages(
    env,
    valid.map((r) => ({ body: { kind: "event", eventId: r.id as string, projectId: r.project_id as string } })),
  );
}

const subscribes = (endpoint: { events: string[] | null }, type: string) => !endpoint.events?.length || endpoint.events.includes(type);

/**
 * Fan-out: one delivery per event and subscribed endpoint, and their first
 * attempts made here at once (claimed as they are created, so a redelivered
 * message makes and sends none twice); past INLINE_ATTEMPTS, first attempts
 * are queued instead.
 */
async function fanOut(env: Env, eventIds: string[]): Promise<void> {
  const ids = JSON.stringify(eventIds);
  const [events, endpoints] = await env.DB.batch<{ id: string; project_id: string; type: string; events?: string }>([
    env.DB.prepare("SELECT id, project_id, type FROM webhook_events WHERE id IN (SELECT value FROM json_each(?1))").bind(ids),
    env.DB.prepare(
      `SELECT id, project_id, events FROM webhook_endpoints WHERE enabled = 1 AND project_id IN
         (SELECT project_id FROM webhook_events WHERE id IN (SELECT value FROM json_each(?1)))`,
    ).bind(ids),
  ]);
  const targets = endpoints.results.map((e) => ({ id: e.id, projectId: e.project_id, events: JSON.parse(e.events ?? "[]") as string[] }));
  const rows = events.results.flatMap((event) =>
    targets
      .filter((t) => t.projectId === event.project_id && subscribes(t, event.type))
      .map((t) => ({ id: newId(), projectId: event.project_id, webhookId: t.id, eventId: event.id, type: event.type })),
  );
  const now = new Date();
  const minute = Math.floor(now.getTime() / 60_000);
  const inline = rows.slice(0, INLINE_ATTEMPTS);
  const queued = rows.slice(INLINE_ATTEMPTS);
  // ~100 bytes per row as JSON: well inside D1's statement size at 500 a statement.
  const inserts = (list: typeof rows, claimUntil: Date | null) => {
    const out: D1PreparedStatement[] = [];
    for (let i = 0; i < list.length; i += 500) out.push(store.insertDeliveries(env.DB, list.slice(i, i + 500), now, claimUntil));
    return out;
  };
  const claimed = inserts(inline, new Date(now.getTime() + CLAIM_MS));
  const unclaimed = inserts(queued, null);
  const reads = store.attemptInputs(env.DB, {
    eventIds: [...new Set(inline.map((r) => r.eventId))],
    webhookIds: [...new Set(inline.map((r) => r.webhookId))],
    projectIds: [...new Set(inline.map((r) => r.projectId))],
    minute,
  });
  const results = await env.DB.batch<Record<string, unknown>>([store.markEventsFannedOut(env.DB, eventIds), ...claimed, ...unclaimed, ...reads]);
  const created = (from: number, n: number) => results.slice(from, from + n).flatMap((r) => r.results);
  const [payloads, endpointRows, usage] = results.slice(results.length - reads.length);
  await queueDeliveries(
    env,
    created(1 + claimed.length, unclaimed.length).map((d) => ({ deliveryId: d.id as string, projectId: d.project_id as string, attempt: 1 })),
  );
  await runAttempts(env, created(1, claimed.length), { payloads: payloads.results, endpoints: endpointRows.results, usage: usage.results }, now, minute);
}

interface Attempt {
  delivery: WebhookDelivery;
  endpoint: WebhookEndpoint | undefined;
  payload: string | undefined;
}

/** What one call did: a status code, or an error before any answer. */
type CallResult = { ok: true; statusCode: number } | { ok: false; statusCode: number | null; error: string };

async function callEndpoint(
  endpoint: WebhookEndpoint,
  secrets: string[],
  deliveryId: string,
  payload: string,
  targetProblem: TargetProblem | null,
): Promise<CallResult> {
  if (targetProblem) return { ok: false, statusCode: null, error: `Refused: ${targetProblem.reason}` };
  // One webhook-id per event and endpoint: the delivery's id, the same on every attempt.
  const headers = new Headers({ "content-type": "application/json", "user-agent": "edge-mail-webhooks/1" });
  for (const [name, value] of Object.entries(await signWebhook(secrets, `msg_${deliveryId}`, Math.floor(Date.now() / 1000), payload))) headers.set(name, value);
  let response: Response;
  try {
    response = await fetch(endpoint.url, { method: "POST", headers, body: payload, redirect: "manual", signal: AbortSignal.timeout(WEBHOOK_TIMEOUT_MS) });
  } catch (err) {
    const timedOut = err instanceof Error && (err.name === "TimeoutError" || err.name === "AbortError");
    return {
      ok: false,
      statusCode: null,
      error: timedOut ? `No answer within ${WEBHOOK_TIMEOUT_MS / 1000} s` : `Request failed: ${err instanceof Error ? err.message : String(err)}`,
    };
  }
  if (response.status >= 200 && response.status < 300) {
    await response.body?.cancel().catch(() => undefined);
    return { ok: true, statusCode: response.status };
  }
  let text = "";
  try {
    text = (await response.text()).slice(0, ERROR_BODY_CHARS);
  } catch {
    // the status says enough
  }
  const what = response.status >= 300 && response.status < 400 ? `Redirects are not followed (HTTP ${response.status})` : `HTTP ${response.status}`;
  return { ok: false, statusCode: response.status, error: text ? `${what}: ${text}` : what };
}

/** The secrets an endpoint signs with now: the current one, and the previous one during a rotation's overlap. */
async function signingSecrets(env: Env, endpoint: WebhookEndpoint, now: Date): Promise<string[]> {
  const key = requireEncryptionKey(env);
  const context = `webhook-endpoint:${endpoint.id}`;
  const secrets = [await decryptPrivateKey(key, context, endpoint.secretEncrypted)];
  if (endpoint.previousSecretEncrypted && endpoint.previousSecretExpiresAt && endpoint.previousSecretExpiresAt > now) {
    secrets.push(await decryptPrivateKey(key, context, endpoint.previousSecretEncrypted));
  }
  return secrets;
}

/** Attempts of queued deliveries: claim (with what the calls need, one batch), then runAttempts. */
async function attempt(env: Env, items: { deliveryId: string; attempt: number }[]): Promise<void> {
  const now = new Date();
  const minute = Math.floor(now.getTime() / 60_000);
  const wanted: Record<string, number> = {};
  for (const item of items) wanted[item.deliveryId] = Math.max(wanted[item.deliveryId] ?? 0, item.attempt);
  const ids = JSON.stringify(Object.keys(wanted));
  const [claimed, payloads, endpointRows, usage] = await env.DB.batch<Record<string, unknown>>([
    store.claimDeliveries(env.DB, wanted, new Date(now.getTime() + CLAIM_MS), now),
    env.DB.prepare(
      `SELECT id, payload FROM webhook_events WHERE id IN (SELECT event_id FROM webhook_deliveries WHERE id IN (SELECT value FROM json_each(?1)))`,
    ).bind(ids),
    env.DB.prepare(
      `SELECT * FROM webhook_endpoints WHERE id IN (SELECT webhook_id FROM webhook_deliveries WHERE id IN (SELECT value FROM json_each(?1)))`,
    ).bind(ids),
    env.DB.prepare(
      `SELECT project_id, attempts FROM webhook_minute_usage WHERE minute = ?2
         AND project_id IN (SELECT project_id FROM webhook_deliveries WHERE id IN (SELECT value FROM json_each(?1)))`,
    ).bind(ids, minute),
  ]);
  await runAttempts(env, claimed.results, { payloads: payloads.results, endpoints: endpointRows.results, usage: usage.results }, now, minute);
}

/**
 * Claimed attempts (delivery rows): call the endpoints (CALL_CONCURRENCY at a
 * time), record every outcome in one batch, queue the next attempts.
 */
async function runAttempts(
  env: Env,
  claimedRows: Record<string, unknown>[],
  inputs: { payloads: Record<string, unknown>[]; endpoints: Record<string, unknown>[]; usage: Record<string, unknown>[] },
  now: Date,
  minute: number,
): Promise<void> {
  if (claimedRows.length === 0) return;
  const config = readConfig(env);
  const payloadOf = new Map(inputs.payloads.map((r) => [r.id as string, r.payload as string]));
  const endpointOf = new Map(inputs.endpoints.map((r) => [r.id as string, fromRow(webhookEndpoints, r) as WebhookEndpoint]));
  const used = new Map(inputs.usage.map((r) => [r.project_id as string, r.attempts as number]));

  const attempts: Attempt[] = claimedRows.map((r) => {
    const delivery = fromRow(webhookDeliveries, r) as WebhookDelivery;
    return { delivery, endpoint: endpointOf.get(delivery.webhookId), payload: payloadOf.get(delivery.eventId) };
  });

  // Per-minute cap: attempts past it are given back and wait for the next minute.
  const nextMinute = new Date((minute + 1) * 60_000);
  const toCall: Attempt[] = [];
  const outcomes: store.DeliveryOutcome[] = [];
  const followUps: { deliveryId: string; projectId: string; attempt: number; delaySeconds?: number }[] = [];
  const counted = new Map<string, number>();
  for (const a of attempts) {
    const projectId = a.delivery.projectId;
    const n = (used.get(projectId) ?? 0) + (counted.get(projectId) ?? 0);
    if (!a.endpoint || !a.payload) {
      outcomes.push({
        id: a.delivery.id,
        status: "FAILED",
        statusCode: null,
        error: a.endpoint ? "The event is no longer stored" : "The webhook was deleted",
        nextAttemptAt: null,
      });
    } else if (!a.endpoint.enabled) {
      outcomes.push({
        id: a.delivery.id,
        status: "FAILED",
        statusCode: null,
        error: `The webhook is disabled${a.endpoint.disabledReason ? `: ${a.endpoint.disabledReason}` : ""}`,
        nextAttemptAt: null,
      });
    } else if (n >= config.WEBHOOK_DELIVERIES_PER_MINUTE) {
      outcomes.push({ id: a.delivery.id, status: "PENDING", statusCode: null, error: null, nextAttemptAt: nextMinute, release: true });
      followUps.push({
        deliveryId: a.delivery.id,
        projectId,
        attempt: a.delivery.attempts,
        delaySeconds: Math.ceil((nextMinute.getTime() - now.getTime()) / 1000),
      });
    } else {
      counted.set(projectId, (counted.get(projectId) ?? 0) + 1);
      toCall.push(a);
    }
  }

  // Each host resolved once per batch, each endpoint's secrets decrypted once.
  const targetChecks = new Map<string, Promise<TargetProblem | null>>();
  const secretsOf = new Map<string, Promise<string[]>>();
  const results = await mapLimited(toCall, CALL_CONCURRENCY, async (a) => {
    const endpoint = a.endpoint!;
    if (!targetChecks.has(endpoint.url)) targetChecks.set(endpoint.url, outboundTargetProblem(endpoint.url, env));
    if (!secretsOf.has(endpoint.id)) secretsOf.set(endpoint.id, signingSecrets(env, endpoint, now));
    const [problem, secrets] = await Promise.all([targetChecks.get(endpoint.url)!, secretsOf.get(endpoint.id)!]);
    return callEndpoint(endpoint, secrets, a.delivery.id, a.payload!, problem);
  });

  const done = new Date();
  const succeededEndpoints = new Set<string>();
  const failedEndpoints = new Set<string>();
  toCall.forEach((a, i) => {
    const result = results[i];
    const n = a.delivery.attempts;
    if (result.ok) {
      succeededEndpoints.add(a.delivery.webhookId);
      outcomes.push({ id: a.delivery.id, status: "SUCCEEDED", statusCode: result.statusCode, error: null, nextAttemptAt: null });
      return;
    }
    failedEndpoints.add(a.delivery.webhookId);
    const delay = RETRY_SCHEDULE_SECONDS[n - 1];
    if (delay === undefined) {
      outcomes.push({ id: a.delivery.id, status: "FAILED", statusCode: result.statusCode, error: result.error, nextAttemptAt: null });
    } else {
      outcomes.push({
        id: a.delivery.id,
        status: "PENDING",
        statusCode: result.statusCode,
        error: result.error,
        nextAttemptAt: new Date(done.getTime() + delay * 1000),
      });
      followUps.push({ deliveryId: a.delivery.id, projectId: a.delivery.projectId, attempt: n + 1, delaySeconds: delay });
    }
  });
  for (const id of succeededEndpoints) failedEndpoints.delete(id);

  const writes: D1PreparedStatement[] = [store.recordDeliveryOutcomes(env.DB, outcomes, done)];
  if (succeededEndpoints.size > 0) writes.push(store.endpointsSucceeded(env.DB, [...succeededEndpoints]));
  if (failedEndpoints.size > 0) {
    writes.push(
      ...store.endpointsFailed(
        env.DB,
        [...failedEndpoints],
        done,
        new Date(done.getTime() - DISABLE_AFTER_MS),
        "Every delivery failed for 5 days; fix the endpoint and enable it again (PATCH enabled: true)",
      ),
    );
  }
  for (const [projectId, n] of counted) writes.push(store.countAttempts(env.DB, projectId, minute, n));
  await env.DB.batch(writes);
  await queueDeliveries(env, followUps);
}

/**
 * The consumer of edge-mail-webhooks. Every message is acked once its work is
 * written; a throw (D1 unavailable, ...) makes src/queue.ts retry the whole
 * batch, which is safe: fan-out is idempotent and an attempt is claimed
 * before it is sent.
 */
export async function consumeWebhookMessages(messages: readonly QueuedMessage<WebhookQueueMessage>[], env: Env): Promise<Verdict[]> {
  const events = messages.flatMap((m) => (m.body.kind === "event" ? [m.body.eventId] : []));
  const deliveries = messages.flatMap((m) => (m.body.kind === "delivery" ? [{ deliveryId: m.body.deliveryId, attempt: m.body.attempt }] : []));
  if (events.length > 0) await fanOut(env, [...new Set(events)]);
  if (deliveries.length > 0) await attempt(env, deliveries);
  return messages.map(() => ACK);
}
