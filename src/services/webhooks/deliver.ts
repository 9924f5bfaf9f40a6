import { fromRow } from "../../db/client";
import { webhookDeliveries, webhookEndpoints, type WebhookDelivery, type WebhookEndpoint } from "../../db/schema";
import { projectLimiter } from "../../durable/names";
import type { Env, WebhookQueueMessage } from "../../env";
import { readConfig, requireEncryptionKey } from "../../lib/config";
import { newId } from "../../lib/ids";
import { ACK, type QueuedMessage, type Verdict } from "../../lib/queue-consumer";
import { signWebhook } from "../../lib/standard-webhooks";
import * as store from "../../store/webhooks";
import { decryptPrivateKey } from "../domains/dkim";
import { outboundTargetProblem, type TargetProblem } from "../outbound-url";
import { runLanes } from "./lanes";
import { enqueueDeliveries, enqueueWebhookEvents } from "../../queues";

export type { WebhookQueueMessage };

/**
 * Event webhooks' queue (edge-mail-webhooks), two kinds of message:
 * - `event`: a recorded event; its consumer makes one delivery per enabled,
 *   subscribed endpoint (a unique (endpoint, event) pair, so a redelivered
 *   message makes none twice) and makes or queues their first attempts;
 * - `delivery`: one attempt of one delivery.
 * Every attempt is claimed in D1 (attempts + 1) and counted against the
 * project's per-minute cap (its ProjectLimiter) before anything is sent, so a
 * redelivered or stale message sends nothing, and an attempt whose invocation
 * dies still counts: the cron's sweep turns its claim into a failed attempt.
 * Attempts past the cap send no message again: they wait PENDING for the
 * cron's paced drain (src/services/webhooks/outbox.ts). Calls run in one lane
 * per project (runLanes), so a slow endpoint delays only its own project.
 */

/** Seconds before attempt n+1 after attempt n failed (n = 1..10); after the 11th the delivery is FAILED. */
export const RETRY_SCHEDULE_SECONDS = [5, 30, 120, 600, 1800, 3600, 7200, 14_400, 28_800, 28_800] as const;
/** A receiver must answer within this (its headers within WEBHOOK_CONNECT_TIMEOUT_MS, default 3 s). */
export const WEBHOOK_TIMEOUT_MS = 10_000;
/** An endpoint whose every attempt failed for this long is disabled. */
export const DISABLE_AFTER_MS = 5 * 24 * 60 * 60 * 1000;
/**
 * How long a claimed attempt may go without an outcome before the sweep counts
 * it as failed: above a full batch's worst case (100 calls, 6 at a time, each
 * at most the connect timeout: a slow failure marks its endpoint and the rest
 * of its attempts are given back), so a crash is counted within 1.5 minutes
 * plus a cron tick.
 */
export const CLAIM_MS = 90_000;
/** The lastError of an attempt that never reported. */
export const DEAD_ATTEMPT_ERROR = "No outcome: the attempt's invocation ended before it reported (counted as a failed attempt)";
/** Calls in flight per invocation (a Worker keeps at most 6 outgoing connections open), and at least this many per project. */
const CALL_CONCURRENCY = 6;
const PROJECT_CONCURRENCY = 2;
/**
 * A failure that took this long (no headers in time, a body that trickles)
 * marks its endpoint slow in this isolate for SLOW_ENDPOINT_MS: its further
 * attempts are not made but given back, due when that ends (one probe per
 * batch after it), so a batch never waits on it call after call.
 */
const SLOW_FAILURE_MS = 1000;
export const SLOW_ENDPOINT_MS = 10_000;
const slowEndpoints = new Map<string, number>();
const SLOW_ENDPOINTS_KEPT = 10_000;
/** First attempts a fan-out makes itself (the rest are queued): the queue's max_batch_size, inside the subrequest limit. */
const INLINE_ATTEMPTS = 100;
/** Of a failing answer's body: at most this many bytes are read, for at most this long, and this many characters kept in lastError. */
const ERROR_BODY_BYTES = 1024;
const ERROR_BODY_MS = 1000;
const ERROR_BODY_CHARS = 200;

/** Queues attempts of deliveries (attempt = the attempt number the message may claim). */
export const queueDeliveries = enqueueDeliveries;

/**
 * Attempts the project may make now, of `want`: its ProjectLimiter's window of
 * WEBHOOK_DELIVERIES_PER_MINUTE, counted there as granted (one Durable Object
 * request runs at a time, so concurrent invocations never pass the cap together).
 */
export async function leaseAttempts(env: Env, projectId: string, want: number, now = Date.now()): Promise<number> {
  if (want <= 0) return 0;
  const limit = readConfig(env).WEBHOOK_DELIVERIES_PER_MINUTE;
  const { granted } = await projectLimiter(env, "deliveries", projectId).leaseApi(limit, now, want);
  return granted;
}

/** What the project's limiter has left this minute (nothing taken), for the drain. */
export async function attemptsLeft(env: Env, projectId: string, now: number): Promise<number> {
  const limit = readConfig(env).WEBHOOK_DELIVERIES_PER_MINUTE;
  const { remaining } = await projectLimiter(env, "deliveries", projectId).leaseApi(limit, now, 0);
  return remaining;
}

/** Hands recorded events (ids from a write batch, see store.recordedEventIds) to the queue for fan-out. */
export function queueWebhookEvents(env: Env, projectId: string, eventIds: string[]) {
  return enqueueWebhookEvents(
    env,
    eventIds.map((id) => ({ id, projectId })),
  );
}

/** Hands over events from rows a record statement returned (`id`, `project_id`), whatever their projects. */
export function queueRecordedEvents(env: Env, rows: readonly Record<string, unknown>[]) {
  return enqueueWebhookEvents(
    env,
    rows.flatMap((r) => (typeof r.id === "string" && typeof r.project_id === "string" ? [{ id: r.id, projectId: r.project_id }] : [])),
  );
}

const subscribes = (endpoint: { events: string[] | null }, type: string) => !endpoint.events?.length || endpoint.events.includes(type);

/** Groups items by a key, keeping their order. */
function groupBy<T>(items: readonly T[], key: (item: T) => string): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const item of items) {
    const k = key(item);
    const list = out.get(k);
    if (list) list.push(item);
    else out.set(k, [item]);
  }
  return out;
}

/** Claimed attempts and what their calls need (rows as D1 returns them). */
interface Claimed {
  rows: Record<string, unknown>[];
  payloads: Record<string, unknown>[];
  endpoints: Record<string, unknown>[];
}
const NONE: Claimed = { rows: [], payloads: [], endpoints: [] };

/**
 * Fan-out: one delivery per event and subscribed endpoint. Per project, past
 * WEBHOOK_PENDING_PER_PROJECT PENDING deliveries a new one is FAILED at once
 * with the reason; of the first INLINE_ATTEMPTS, those the per-minute cap
 * allows are claimed as they are created and attempted here, the others wait
 * for the drain; the rest are queued. The pending count is read before the
 * inserts, so concurrent fan-outs may pass the cap by at most their batches.
 */
async function fanOut(env: Env, eventIds: string[]): Promise<Claimed> {
  const config = readConfig(env);
  const ids = JSON.stringify(eventIds);
  const [events, endpoints, pending] = await env.DB.batch<{ id: string; project_id: string; type: string; events?: string; pending: number }>([
    env.DB.prepare("SELECT id, project_id, type FROM webhook_events WHERE id IN (SELECT value FROM json_each(?1))").bind(ids),
    env.DB.prepare(
      `SELECT id, project_id, events FROM webhook_endpoints WHERE enabled = 1 AND project_id IN
         (SELECT project_id FROM webhook_events WHERE id IN (SELECT value FROM json_each(?1)))`,
    ).bind(ids),
    store.pendingCounts(env.DB, eventIds),
  ]);
  const targets = endpoints.results.map((e) => ({ id: e.id, projectId: e.project_id, events: JSON.parse(e.events ?? "[]") as string[] }));
  const rows = events.results.flatMap((event) =>
    targets
      .filter((t) => t.projectId === event.project_id && subscribes(t, event.type))
      .map((t) => ({
        id: newId(),
        projectId: event.project_id,
        webhookId: t.id,
        eventId: event.id,
        type: event.type,
        mode: "queued" as store.NewDeliveryMode,
      })),
  );
  const now = new Date();
  const byProject = groupBy(rows, (r) => r.projectId);
  const pendingOf = new Map(pending.results.map((r) => [r.project_id, r.pending]));
  let inlineLeft = INLINE_ATTEMPTS;
  await Promise.all(
    [...byProject].map(async ([projectId, list]) => {
      let room = Math.max(0, config.WEBHOOK_PENDING_PER_PROJECT - (pendingOf.get(projectId) ?? 0));
      const accepted = [];
      for (const r of list) {
        if (room > 0) {
          room--;
          accepted.push(r);
        } else r.mode = "refused";
      }
      const inline = accepted.slice(0, Math.max(0, inlineLeft));
      inlineLeft -= inline.length;
      const granted = await leaseAttempts(env, projectId, inline.length, now.getTime());
      inline.forEach((r, i) => {
        r.mode = i < granted ? "claimed" : "parked";
      });
    }),
  );
  const refusal = `Not sent: the project had ${config.WEBHOOK_PENDING_PER_PROJECT} deliveries pending (WEBHOOK_PENDING_PER_PROJECT)`;
  // ~110 bytes per row as JSON: well inside D1's statement size at 500 a statement.
  const inserts: D1PreparedStatement[] = [];
  for (let i = 0; i < rows.length; i += 500)
    inserts.push(store.insertDeliveries(env.DB, rows.slice(i, i + 500), now, new Date(now.getTime() + CLAIM_MS), refusal));
  const claimedRows = rows.filter((r) => r.mode === "claimed");
  const reads = store.attemptInputs(env.DB, {
    eventIds: [...new Set(claimedRows.map((r) => r.eventId))],
    webhookIds: [...new Set(claimedRows.map((r) => r.webhookId))],
  });
  const results = await env.DB.batch<Record<string, unknown>>([store.markEventsFannedOut(env.DB, eventIds), ...inserts, ...reads]);
  const created = results.slice(1, 1 + inserts.length).flatMap((r) => r.results);
  const [payloads, endpointRows] = results.slice(1 + inserts.length);
  const modeOf = new Map(rows.map((r) => [r.id, r.mode]));
  await queueDeliveries(
    env,
    created.filter((d) => modeOf.get(d.id as string) === "queued").map((d) => ({ deliveryId: d.id as string, projectId: d.project_id as string, attempt: 1 })),
  );
  return { rows: created.filter((d) => modeOf.get(d.id as string) === "claimed"), payloads: payloads.results, endpoints: endpointRows.results };
}

interface Attempt {
  delivery: WebhookDelivery;
  endpoint: WebhookEndpoint | undefined;
  payload: string | undefined;
}

/** What one call did: a status code, or an error before any answer. */
type CallResult = { ok: true; statusCode: number } | { ok: false; statusCode: number | null; error: string };

/**
 * At most ERROR_BODY_BYTES of a body, for at most `ms`, then the rest is
 * cancelled: a receiver's answer is never buffered whole (W2), and a body that
 * trickles costs at most `ms`.
 */
export async function readBodyPrefix(body: ReadableStream<Uint8Array> | null, ms: number): Promise<string> {
  if (!body) return "";
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<"late">((resolve) => {
    timer = setTimeout(() => resolve("late"), ms);
  });
  try {
    while (size < ERROR_BODY_BYTES) {
      const next = await Promise.race([reader.read(), late]);
      if (next === "late" || next.done) break;
      chunks.push(next.value.subarray(0, ERROR_BODY_BYTES - size));
      size += Math.min(next.value.byteLength, ERROR_BODY_BYTES - size);
    }
  } catch {
    // what was read is enough
  } finally {
    clearTimeout(timer);
    reader.cancel().catch(() => undefined);
  }
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return new TextDecoder().decode(bytes).slice(0, ERROR_BODY_CHARS);
}

async function callEndpoint(
  endpoint: WebhookEndpoint,
  secrets: string[],
  deliveryId: string,
  payload: string,
  targetProblem: TargetProblem | null,
  connectMs: number,
): Promise<CallResult> {
  if (targetProblem) return { ok: false, statusCode: null, error: `Refused: ${targetProblem.reason}` };
  // One webhook-id per event and endpoint: the delivery's id, the same on every attempt.
  const headers = new Headers({ "content-type": "application/json", "user-agent": "edge-mail-webhooks/1" });
  for (const [name, value] of Object.entries(await signWebhook(secrets, `msg_${deliveryId}`, Math.floor(Date.now() / 1000), payload))) headers.set(name, value);
  const started = Date.now();
  // Two deadlines: the answer's headers within connectMs, all of it within WEBHOOK_TIMEOUT_MS.
  const controller = new AbortController();
  let timedOut: string | null = null;
  let abortedNow: () => void = () => undefined;
  const aborted = new Promise<never>((_, reject) => {
    abortedNow = () => reject(new Error(timedOut ?? "aborted"));
  });
  aborted.catch(() => undefined);
  const expire = (what: string) => () => {
    timedOut = what;
    controller.abort();
    abortedNow();
  };
  const headersTimer = setTimeout(expire(`No answer within ${connectMs / 1000} s`), connectMs);
  const answerTimer = setTimeout(expire(`No answer within ${WEBHOOK_TIMEOUT_MS / 1000} s`), WEBHOOK_TIMEOUT_MS);
  try {
    let response: Response;
    try {
      response = await Promise.race([fetch(endpoint.url, { method: "POST", headers, body: payload, redirect: "manual", signal: controller.signal }), aborted]);
    } catch (err) {
      if (timedOut) return { ok: false, statusCode: null, error: timedOut };
      return { ok: false, statusCode: null, error: `Request failed: ${err instanceof Error ? err.message : String(err)}` };
    } finally {
      clearTimeout(headersTimer);
    }
    if (response.status >= 200 && response.status < 300) {
      // Nothing of a success's body is needed.
      response.body?.cancel().catch(() => undefined);
      return { ok: true, statusCode: response.status };
    }
    const text = await readBodyPrefix(response.body, Math.max(0, Math.min(ERROR_BODY_MS, WEBHOOK_TIMEOUT_MS - (Date.now() - started))));
    const what = response.status >= 300 && response.status < 400 ? `Redirects are not followed (HTTP ${response.status})` : `HTTP ${response.status}`;
    return { ok: false, statusCode: response.status, error: text ? `${what}: ${text}` : what };
  } finally {
    clearTimeout(headersTimer);
    clearTimeout(answerTimer);
  }
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

/**
 * Attempts of queued deliveries: per project, the attempts its per-minute cap
 * allows are claimed (with what the calls need, one batch) and made; the
 * others send no message again and wait for the drain.
 */
async function attempt(env: Env, items: { deliveryId: string; projectId: string; attempt: number }[]): Promise<Claimed> {
  const now = new Date();
  const wanted = new Map<string, { projectId: string; attempt: number }>();
  for (const item of items) {
    const seen = wanted.get(item.deliveryId);
    if (!seen || seen.attempt < item.attempt) wanted.set(item.deliveryId, { projectId: item.projectId, attempt: item.attempt });
  }
  const claim: Record<string, number> = {};
  const park: Record<string, number> = {};
  const byProject = groupBy([...wanted], ([, w]) => w.projectId);
  await Promise.all(
    [...byProject].map(async ([projectId, list]) => {
      const granted = await leaseAttempts(env, projectId, list.length, now.getTime());
      list.forEach(([id, w], i) => {
        (i < granted ? claim : park)[id] = w.attempt;
      });
    }),
  );
  const claimIds = Object.keys(claim);
  const statements: D1PreparedStatement[] = [store.claimDeliveries(env.DB, claim, new Date(now.getTime() + CLAIM_MS), now)];
  if (Object.keys(park).length > 0) statements.push(store.parkDeliveries(env.DB, park, now));
  const reads = claimIds.length > 0 ? store.attemptInputsOf(env.DB, claimIds) : [];
  const results = await env.DB.batch<Record<string, unknown>>([...statements, ...reads]);
  if (claimIds.length === 0) return NONE;
  const [payloads, endpointRows] = results.slice(statements.length);
  return { rows: results[0].results, payloads: payloads.results, endpoints: endpointRows.results };
}

/**
 * Claimed attempts (delivery rows): call the endpoints in one lane per
 * project (PROJECT_CONCURRENCY each, CALL_CONCURRENCY in all), and as each
 * lane finishes, record its outcomes in one batch and queue its retries.
 */
async function runAttempts(env: Env, claimed: Claimed, now: Date): Promise<void> {
  const { rows: claimedRows, ...inputs } = claimed;
  if (claimedRows.length === 0) return;
  const connectMs = readConfig(env).WEBHOOK_CONNECT_TIMEOUT_MS;
  const payloadOf = new Map(inputs.payloads.map((r) => [r.id as string, r.payload as string]));
  const endpointOf = new Map(inputs.endpoints.map((r) => [r.id as string, fromRow(webhookEndpoints, r) as WebhookEndpoint]));
  const attempts: Attempt[] = claimedRows.map((r) => {
    const delivery = fromRow(webhookDeliveries, r) as WebhookDelivery;
    return { delivery, endpoint: endpointOf.get(delivery.webhookId), payload: payloadOf.get(delivery.eventId) };
  });

  // Each host resolved once per batch, each endpoint's secrets decrypted once.
  const targetChecks = new Map<string, Promise<TargetProblem | null>>();
  const secretsOf = new Map<string, Promise<string[]>>();
  const call = async (a: Attempt): Promise<CallResult> => {
    if (!a.endpoint || !a.payload) return { ok: false, statusCode: null, error: a.endpoint ? "The event is no longer stored" : "The webhook was deleted" };
    const endpoint = a.endpoint;
    if (!endpoint.enabled) {
      return { ok: false, statusCode: null, error: `The webhook is disabled${endpoint.disabledReason ? `: ${endpoint.disabledReason}` : ""}` };
    }
    try {
      if (!targetChecks.has(endpoint.url)) targetChecks.set(endpoint.url, outboundTargetProblem(endpoint.url, env));
      if (!secretsOf.has(endpoint.id)) secretsOf.set(endpoint.id, signingSecrets(env, endpoint, now));
      const [problem, secrets] = await Promise.all([targetChecks.get(endpoint.url)!, secretsOf.get(endpoint.id)!]);
      return await callEndpoint(endpoint, secrets, a.delivery.id, a.payload, problem, connectMs);
    } catch (err) {
      return { ok: false, statusCode: null, error: `Request failed: ${err instanceof Error ? err.message : String(err)}` };
    }
  };
  const final = (a: Attempt) => !a.endpoint || !a.payload || !a.endpoint.enabled;
  // A slow endpoint's attempts are given back while it is marked; once marked time ran out, one probe per batch.
  const probed = new Set<string>();
  const shouldStart = (a: Attempt) => {
    const until = a.endpoint && !final(a) ? slowEndpoints.get(a.endpoint.id) : undefined;
    if (until === undefined) return true;
    if (Date.now() < until || probed.has(a.endpoint!.id)) return false;
    probed.add(a.endpoint!.id);
    return true;
  };
  const timedCall = async (a: Attempt) => {
    const started = Date.now();
    const result = await call(a);
    if (a.endpoint && !final(a)) {
      if (result.ok) slowEndpoints.delete(a.endpoint.id);
      else if (Date.now() - started >= SLOW_FAILURE_MS) {
        if (slowEndpoints.size >= SLOW_ENDPOINTS_KEPT) slowEndpoints.clear();
        slowEndpoints.set(a.endpoint.id, Date.now() + SLOW_ENDPOINT_MS);
      }
    }
    return result;
  };
  const lanes = groupBy(attempts, (a) => a.delivery.projectId);

  await runLanes(
    lanes,
    // Each project its share of the connections (at least PROJECT_CONCURRENCY); a lane left alone may use them all.
    { perLane: PROJECT_CONCURRENCY, total: CALL_CONCURRENCY },
    timedCall,
    async (_projectId, lane, results) => {
      const done = new Date();
      const outcomes: store.DeliveryOutcome[] = [];
      const followUps: { deliveryId: string; projectId: string; attempt: number; delaySeconds?: number }[] = [];
      const succeededEndpoints = new Set<string>();
      const failedEndpoints = new Set<string>();
      lane.forEach((a, i) => {
        const result = results[i];
        const n = a.delivery.attempts;
        const base = { id: a.delivery.id, attempt: n };
        if (result === undefined) {
          // Not made (its endpoint is marked slow): given back, due when the mark ends.
          const due = new Date(slowEndpoints.get(a.endpoint!.id) ?? done.getTime());
          outcomes.push({ ...base, status: "PENDING", statusCode: null, error: null, nextAttemptAt: due, release: true });
          return;
        }
        if (result.ok) {
          succeededEndpoints.add(a.delivery.webhookId);
          outcomes.push({ ...base, status: "SUCCEEDED", statusCode: result.statusCode, error: null, nextAttemptAt: null });
          return;
        }
        // No endpoint, no event or a disabled endpoint: nothing to retry, no streak to count.
        if (final(a)) {
          outcomes.push({ ...base, status: "FAILED", statusCode: null, error: result.error, nextAttemptAt: null });
          return;
        }
        failedEndpoints.add(a.delivery.webhookId);
        const delay = RETRY_SCHEDULE_SECONDS[n - 1];
        if (delay === undefined) {
          outcomes.push({ ...base, status: "FAILED", statusCode: result.statusCode, error: result.error, nextAttemptAt: null });
        } else {
          outcomes.push({
            ...base,
            status: "PENDING",
            statusCode: result.statusCode,
            error: result.error,
            nextAttemptAt: new Date(done.getTime() + delay * 1000),
            queued: true,
          });
          followUps.push({ deliveryId: a.delivery.id, projectId: a.delivery.projectId, attempt: n + 1, delaySeconds: delay });
        }
      });
      for (const id of succeededEndpoints) failedEndpoints.delete(id);
      const writes: D1PreparedStatement[] = [store.recordDeliveryOutcomes(env.DB, outcomes, done)];
      if (succeededEndpoints.size > 0) writes.push(store.endpointsSucceeded(env.DB, [...succeededEndpoints]));
      if (failedEndpoints.size > 0) writes.push(...endpointsFailedStatements(env, [...failedEndpoints], done));
      await env.DB.batch(writes);
      await queueDeliveries(env, followUps);
    },
    shouldStart,
  );
}

/** The failure streak of these endpoints, and their auto-disable after DISABLE_AFTER_MS of it. */
export function endpointsFailedStatements(env: Env, webhookIds: string[], at: Date): D1PreparedStatement[] {
  return store.endpointsFailed(
    env.DB,
    webhookIds,
    at,
    new Date(at.getTime() - DISABLE_AFTER_MS),
    "Every delivery failed for 5 days; fix the endpoint and enable it again (PATCH enabled: true)",
  );
}

/**
 * The consumer of edge-mail-webhooks. Every message is acked once its work is
 * written; a throw (D1 unavailable, ...) makes src/queue.ts retry the whole
 * batch, which is safe: fan-out is idempotent and an attempt is claimed
 * before it is sent.
 */
export async function consumeWebhookMessages(messages: readonly QueuedMessage<WebhookQueueMessage>[], env: Env): Promise<Verdict[]> {
  const events = messages.flatMap((m) => (m.body.kind === "event" ? [m.body.eventId] : []));
  const deliveries = messages.flatMap((m) =>
    m.body.kind === "delivery" ? [{ deliveryId: m.body.deliveryId, projectId: m.body.projectId, attempt: m.body.attempt }] : [],
  );
  const now = new Date();
  const [fanned, queued] = await Promise.all([
    events.length > 0 ? fanOut(env, [...new Set(events)]) : NONE,
    deliveries.length > 0 ? attempt(env, deliveries) : NONE,
  ]);
  // One set of lanes for both: the invocation's connections are shared.
  await runAttempts(
    env,
    { rows: [...fanned.rows, ...queued.rows], payloads: [...fanned.payloads, ...queued.payloads], endpoints: [...fanned.endpoints, ...queued.endpoints] },
    now,
  );
  return messages.map(() => ACK);
}
