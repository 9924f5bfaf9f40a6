import { fromRow } from "../../db/client";
import { webhookDeliveries, webhookEndpoints, type WebhookDelivery, type WebhookEndpoint } from "../../db/schema";
import { projectLimiter } from "../../lib/project-limiters";
import type { Env } from "../../env";
import { readConfig } from "../../lib/config";
import { signWebhook } from "../../lib/standard-webhooks";
import { enqueueDeliveries } from "../../queues";
import { WriteBatch } from "../../store/batch";
import { attemptInputs, claimDeliveries, parkDeliveries, recordDeliveryOutcomes, type DeliveryOutcome } from "../../store/webhooks/deliveries";
import { endpointsFailed, endpointsSucceeded } from "../../store/webhooks/endpoints";
import { outboundTargetProblem, type TargetProblem } from "../../outside/outbound-url";
import { openEndpointSecret } from "./endpoints";
import { groupBy, runLanes } from "./lanes";

/**
 * Attempts of webhook deliveries, in three steps:
 * - the cap: every attempt is counted against the project's per-minute cap
 *   (its ProjectLimiter) and claimed in D1 (attempts + 1) before anything is
 *   sent, so a redelivered or stale message sends nothing, and an attempt
 *   whose invocation dies still counts (sweep.ts turns its claim into a failed
 *   attempt); attempts past the cap wait PENDING for the cron's paced drain;
 * - the call: signed (Standard Webhooks, with the endpoint's sealed secrets),
 *   in one lane per project (runLanes), so a slow endpoint delays only its own
 *   project;
 * - the record: as each lane finishes, its outcomes, the endpoints' failure
 *   streak and the next attempts' messages.
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
/** Of a failing answer's body: at most this many bytes are read, for at most this long, and this many characters kept in lastError. */
const ERROR_BODY_BYTES = 1024;
const ERROR_BODY_MS = 1000;
const ERROR_BODY_CHARS = 200;

/** Claimed attempts and what their calls need (rows as D1 returns them). */
export interface Claimed {
  rows: Record<string, unknown>[];
  payloads: Record<string, unknown>[];
  endpoints: Record<string, unknown>[];
}
export const NONE: Claimed = { rows: [], payloads: [], endpoints: [] };

/** Claimed attempts of several sources, as one (their calls share the invocation's connections). */
export const joinClaimed = (...parts: Claimed[]): Claimed => ({
  rows: parts.flatMap((p) => p.rows),
  payloads: parts.flatMap((p) => p.payloads),
  endpoints: parts.flatMap((p) => p.endpoints),
});

// The cap -------------------------------------------------------------------

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

/**
 * Attempts of queued deliveries: per project, the attempts its per-minute cap
 * allows are claimed (with what the calls need, one batch); the others send
 * no message again and wait for the drain.
 */
export async function claimAttempts(env: Env, items: { deliveryId: string; projectId: string; attempt: number }[]): Promise<Claimed> {
  const now = new Date();
  const wanted = new Map<string, { projectId: string; attempt: number }>();
  for (const item of items) {
    const seen = wanted.get(item.deliveryId);
    if (!seen || seen.attempt < item.attempt) wanted.set(item.deliveryId, { projectId: item.projectId, attempt: item.attempt });
  }
  const claim: Record<string, number> = {};
  const park: Record<string, number> = {};
  await Promise.all(
    [...groupBy([...wanted], ([, w]) => w.projectId)].map(async ([projectId, list]) => {
      const granted = await leaseAttempts(env, projectId, list.length, now.getTime());
      list.forEach(([id, w], i) => {
        (i < granted ? claim : park)[id] = w.attempt;
      });
    }),
  );
  const claimIds = Object.keys(claim);
  const batch = new WriteBatch(env.DB);
  const claimed = batch.add(claimDeliveries(env.DB, claim, new Date(now.getTime() + CLAIM_MS), now));
  batch.add(Object.keys(park).length > 0 ? parkDeliveries(env.DB, park, now) : null);
  const inputs = claimIds.length > 0 ? attemptInputs(env.DB, claimIds) : null;
  const payloads = batch.add(inputs?.payloads);
  const endpoints = batch.add(inputs?.endpoints);
  const result = await batch.run();
  if (claimIds.length === 0) return NONE;
  return { rows: result.rows(claimed), payloads: result.rows(payloads), endpoints: result.rows(endpoints) };
}

// The call ------------------------------------------------------------------

interface Attempt {
  delivery: WebhookDelivery;
  endpoint: WebhookEndpoint | undefined;
  payload: string | undefined;
}

/** What one call did: a status code, or an error before any answer. */
type CallResult = { ok: true; statusCode: number } | { ok: false; statusCode: number | null; error: string };

/** No endpoint, no event or a disabled endpoint: nothing to call, nothing to retry, no streak to count. */
const final = (a: Attempt) => !a.endpoint || !a.payload || !a.endpoint.enabled;

/**
 * The calls of one batch of attempts: each host resolved once, each
 * endpoint's secrets opened once; a slow endpoint's attempts are refused while
 * it is marked (once its mark ran out, one probe per batch).
 */
function attemptCalls(env: Env, now: Date) {
  const connectMs = readConfig(env).WEBHOOK_CONNECT_TIMEOUT_MS;
  const targetChecks = new Map<string, Promise<TargetProblem | null>>();
  const secretsOf = new Map<string, Promise<string[]>>();
  const probed = new Set<string>();

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

  return {
    shouldStart(a: Attempt): boolean {
      const until = a.endpoint && !final(a) ? slowEndpoints.get(a.endpoint.id) : undefined;
      if (until === undefined) return true;
      if (Date.now() < until || probed.has(a.endpoint!.id)) return false;
      probed.add(a.endpoint!.id);
      return true;
    },
    /** One call, marking its endpoint slow (or no longer slow) by how it went. */
    async timed(a: Attempt): Promise<CallResult> {
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
    },
  };
}

/** The secrets an endpoint signs with now: the current one, and the previous one during a rotation's overlap. */
async function signingSecrets(env: Env, endpoint: WebhookEndpoint, now: Date): Promise<string[]> {
  const secrets = [await openEndpointSecret(env, endpoint.id, endpoint.secretEncrypted)];
  if (endpoint.previousSecretEncrypted && endpoint.previousSecretExpiresAt && endpoint.previousSecretExpiresAt > now) {
    secrets.push(await openEndpointSecret(env, endpoint.id, endpoint.previousSecretEncrypted));
  }
  return secrets;
}

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

// The record ----------------------------------------------------------------

type FollowUp = { deliveryId: string; projectId: string; attempt: number; delaySeconds?: number };

/** What a lane's calls did, as outcomes, the next attempts to queue, and the endpoints that succeeded or failed. */
function laneOutcomes(lane: readonly Attempt[], results: readonly (CallResult | undefined)[], done: Date) {
  const outcomes: DeliveryOutcome[] = [];
  const followUps: FollowUp[] = [];
  const succeeded = new Set<string>();
  const failed = new Set<string>();
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
      succeeded.add(a.delivery.webhookId);
      outcomes.push({ ...base, status: "SUCCEEDED", statusCode: result.statusCode, error: null, nextAttemptAt: null });
      return;
    }
    if (final(a)) {
      outcomes.push({ ...base, status: "FAILED", statusCode: null, error: result.error, nextAttemptAt: null });
      return;
    }
    failed.add(a.delivery.webhookId);
    const delay = RETRY_SCHEDULE_SECONDS[n - 1];
    if (delay === undefined) {
      outcomes.push({ ...base, status: "FAILED", statusCode: result.statusCode, error: result.error, nextAttemptAt: null });
      return;
    }
    outcomes.push({
      ...base,
      status: "PENDING",
      statusCode: result.statusCode,
      error: result.error,
      nextAttemptAt: new Date(done.getTime() + delay * 1000),
      queued: true,
    });
    followUps.push({ deliveryId: a.delivery.id, projectId: a.delivery.projectId, attempt: n + 1, delaySeconds: delay });
  });
  for (const id of succeeded) failed.delete(id);
  return { outcomes, followUps, succeeded: [...succeeded], failed: [...failed] };
}

/** Records a lane's outcomes and the endpoints' streaks in one batch, then queues its next attempts. */
async function recordLane(env: Env, lane: readonly Attempt[], results: readonly (CallResult | undefined)[]): Promise<void> {
  const done = new Date();
  const { outcomes, followUps, succeeded, failed } = laneOutcomes(lane, results, done);
  const batch = new WriteBatch(env.DB);
  batch.add(recordDeliveryOutcomes(env.DB, outcomes, done));
  if (succeeded.length > 0) batch.add(endpointsSucceeded(env.DB, succeeded));
  if (failed.length > 0) batch.add(...endpointsFailedStatements(env, failed, done));
  await batch.run();
  await enqueueDeliveries(env, followUps);
}

/** The failure streak of these endpoints, and their auto-disable after DISABLE_AFTER_MS of it. */
export function endpointsFailedStatements(env: Env, webhookIds: string[], at: Date): D1PreparedStatement[] {
  return endpointsFailed(
    env.DB,
    webhookIds,
    at,
    new Date(at.getTime() - DISABLE_AFTER_MS),
    "Every delivery failed for 5 days; fix the endpoint and enable it again (PATCH enabled: true)",
  );
}

/**
 * Claimed attempts: call the endpoints in one lane per project
 * (PROJECT_CONCURRENCY each, CALL_CONCURRENCY in all), and as each lane
 * finishes, record its outcomes and queue its retries.
 */
export async function runAttempts(env: Env, claimed: Claimed, now: Date): Promise<void> {
  if (claimed.rows.length === 0) return;
  const payloadOf = new Map(claimed.payloads.map((r) => [r.id as string, r.payload as string]));
  const endpointOf = new Map(claimed.endpoints.map((r) => [r.id as string, fromRow(webhookEndpoints, r) as WebhookEndpoint]));
  const attempts: Attempt[] = claimed.rows.map((r) => {
    const delivery = fromRow(webhookDeliveries, r) as WebhookDelivery;
    return { delivery, endpoint: endpointOf.get(delivery.webhookId), payload: payloadOf.get(delivery.eventId) };
  });
  const calls = attemptCalls(env, now);
  await runLanes(
    groupBy(attempts, (a) => a.delivery.projectId),
    // Each project its share of the connections (at least PROJECT_CONCURRENCY); a lane left alone may use them all.
    { perLane: PROJECT_CONCURRENCY, total: CALL_CONCURRENCY },
    (a) => calls.timed(a),
    (_projectId, lane, results) => recordLane(env, lane, results),
    (a) => calls.shouldStart(a),
  );
}
