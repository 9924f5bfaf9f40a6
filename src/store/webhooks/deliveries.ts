/**
 * The only writer of webhook_deliveries: one delivery per (event, endpoint),
 * made by the fan-out, each attempt claimed before it is sent (attempts + 1)
 * and its outcome recorded only while the claim is its own; the cron's sweep
 * of dead claims, its paced drain, and the deliveries' pruning. Also the
 * fixed reads the fan-out and the attempts batch with them. Every function
 * returns D1 statements with fixed SQL.
 */

import { idAtTime } from "../../lib/ids";

/**
 * How a fan-out creates a delivery: `claimed`, its first attempt made now by
 * the caller (attempts 1, as claimDeliveries would); `queued`, a message for
 * its first attempt is sent; `parked`, it waits for the paced drain (over the
 * per-minute cap); `refused`, FAILED at once with the reason (over the
 * project's pending cap).
 */
export type NewDeliveryMode = "claimed" | "queued" | "parked" | "refused";

const INSERT_DELIVERIES_SQL = `INSERT INTO webhook_deliveries (id, project_id, webhook_id, event_id, type, status, attempts, last_error,
    next_attempt_at, claimed_at, queued_at, created_at, updated_at)
  SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]'), json_extract(value, '$[3]'),
         json_extract(value, '$[4]'),
         CASE json_extract(value, '$[5]') WHEN 'refused' THEN 'FAILED' ELSE 'PENDING' END,
         CASE json_extract(value, '$[5]') WHEN 'claimed' THEN 1 ELSE 0 END,
         CASE json_extract(value, '$[5]') WHEN 'refused' THEN ?4 END,
         CASE json_extract(value, '$[5]') WHEN 'refused' THEN NULL WHEN 'claimed' THEN ?3 ELSE ?2 END,
         CASE json_extract(value, '$[5]') WHEN 'claimed' THEN ?2 END,
         CASE json_extract(value, '$[5]') WHEN 'queued' THEN ?2 END,
         ?2, ?2
  FROM json_each(?1) WHERE true
  ON CONFLICT (webhook_id, event_id) DO NOTHING
  RETURNING *`;

/**
 * One delivery per (event, endpoint), each created as its `mode` says; a pair
 * that has one already is left alone. `claimUntil` ends the claim of the
 * `claimed` ones; `refusal` is the lastError of the `refused` ones. Returns
 * the deliveries it created (none for pairs that had one).
 */
export function insertDeliveries(
  d1: D1Database,
  rows: { id: string; projectId: string; webhookId: string; eventId: string; type: string; mode: NewDeliveryMode }[],
  at: Date,
  claimUntil: Date,
  refusal: string | null,
): D1PreparedStatement {
  const values = rows.map((r) => [r.id, r.projectId, r.webhookId, r.eventId, r.type, r.mode]);
  return d1.prepare(INSERT_DELIVERIES_SQL).bind(JSON.stringify(values), at.getTime(), claimUntil.getTime(), refusal);
}

/** What a fan-out reads, as one batch: the events, the enabled endpoints of their projects, and those projects' PENDING counts. */
export function fanOutInputs(
  d1: D1Database,
  eventIds: string[],
): { events: D1PreparedStatement; endpoints: D1PreparedStatement; pending: D1PreparedStatement } {
  const ids = JSON.stringify(eventIds);
  return {
    events: d1.prepare(FAN_OUT_EVENTS_SQL).bind(ids),
    endpoints: d1.prepare(FAN_OUT_ENDPOINTS_SQL).bind(ids),
    pending: d1.prepare(PENDING_SQL).bind(ids),
  };
}
const FAN_OUT_EVENTS_SQL = "SELECT id, project_id, type FROM webhook_events WHERE id IN (SELECT value FROM json_each(?1))";
const FAN_OUT_ENDPOINTS_SQL = `SELECT id, project_id, events FROM webhook_endpoints WHERE enabled = 1 AND project_id IN
  (SELECT project_id FROM webhook_events WHERE id IN (SELECT value FROM json_each(?1)))`;
/** The PENDING deliveries (webhook_pending, kept by triggers) of the projects of these events, for the pending cap. */
const PENDING_SQL = `SELECT project_id, pending FROM webhook_pending WHERE project_id IN
  (SELECT project_id FROM webhook_events WHERE id IN (SELECT value FROM json_each(?1)))`;

/**
 * What attempting deliveries needs besides the delivery rows, as reads for the
 * batch that claims (or creates) them: their events' payloads and their
 * endpoints. Put them after the claim or insert.
 */
export function attemptInputs(d1: D1Database, deliveryIds: string[]): { payloads: D1PreparedStatement; endpoints: D1PreparedStatement } {
  const ids = JSON.stringify(deliveryIds);
  return { payloads: d1.prepare(ATTEMPT_PAYLOADS_SQL).bind(ids), endpoints: d1.prepare(ATTEMPT_ENDPOINTS_SQL).bind(ids) };
}
const ATTEMPT_PAYLOADS_SQL =
  "SELECT id, payload FROM webhook_events WHERE id IN (SELECT event_id FROM webhook_deliveries WHERE id IN (SELECT value FROM json_each(?1)))";
const ATTEMPT_ENDPOINTS_SQL =
  "SELECT * FROM webhook_endpoints WHERE id IN (SELECT webhook_id FROM webhook_deliveries WHERE id IN (SELECT value FROM json_each(?1)))";

/** The attempt a delivery's message carries is the next one: ?1 maps delivery ids to attempt numbers. */
const NEXT_ATTEMPT = `id IN (SELECT key FROM json_each(?1)) AND status = 'PENDING' AND claimed_at IS NULL
    AND attempts + 1 = json_extract(?1, '$."' || id || '"')`;

const CLAIM_SQL = `UPDATE webhook_deliveries SET attempts = attempts + 1, next_attempt_at = ?2, claimed_at = ?3, queued_at = NULL, updated_at = ?3
  WHERE ${NEXT_ATTEMPT}
  RETURNING *`;

/**
 * Claims deliveries for an attempt before anything is sent: `attempts` maps a
 * delivery id to the attempt number its message carries. Only a PENDING,
 * unclaimed delivery whose previous attempt is exactly the one before is
 * claimed (the attempt counter moves on atomically: the attempt counts from
 * here, whatever becomes of the call), so a redelivered or stale message
 * claims nothing and sends nothing. A claim older than its lease never
 * reported: sweepDeadClaims counts it as a failed attempt.
 */
export function claimDeliveries(d1: D1Database, attempts: Record<string, number>, claimUntil: Date, at: Date): D1PreparedStatement {
  return d1.prepare(CLAIM_SQL).bind(JSON.stringify(attempts), claimUntil.getTime(), at.getTime());
}

/** Attempts over the per-minute cap: no message any more, left to the paced drain (their due time kept). */
export function parkDeliveries(d1: D1Database, attempts: Record<string, number>, at: Date): D1PreparedStatement {
  return d1.prepare(PARK_SQL).bind(JSON.stringify(attempts), at.getTime());
}
const PARK_SQL = `UPDATE webhook_deliveries SET queued_at = NULL, updated_at = ?2 WHERE ${NEXT_ATTEMPT}`;

export interface DeliveryOutcome {
  id: string;
  /** The attempt number this outcome belongs to (its claim): a later claim's row is left alone. */
  attempt: number;
  status: "PENDING" | "SUCCEEDED" | "FAILED";
  statusCode: number | null;
  error: string | null;
  /** PENDING: when the next attempt is due. */
  nextAttemptAt: Date | null;
  /** A message for the next attempt is sent (else the drain queues it when due). */
  queued?: boolean;
  /** The attempt was not made: given back (attempts - 1, nothing else recorded), due at nextAttemptAt for the drain. */
  release?: boolean;
}

const OUTCOMES_SQL = `UPDATE webhook_deliveries SET
    status = json_extract(o.value, '$[1]'),
    last_status_code = CASE WHEN json_extract(o.value, '$[7]') THEN last_status_code ELSE json_extract(o.value, '$[2]') END,
    last_error = CASE WHEN json_extract(o.value, '$[7]') THEN last_error ELSE json_extract(o.value, '$[3]') END,
    attempts = attempts - json_extract(o.value, '$[7]'),
    next_attempt_at = json_extract(o.value, '$[4]'),
    claimed_at = NULL,
    queued_at = CASE WHEN json_extract(o.value, '$[5]') THEN ?2 END,
    updated_at = ?2
  FROM json_each(?1) AS o
  WHERE webhook_deliveries.id = json_extract(o.value, '$[0]') AND webhook_deliveries.attempts = json_extract(o.value, '$[6]')
    AND webhook_deliveries.claimed_at IS NOT NULL`;

/** Records what the attempts did, in one statement (only while each is still the claimed attempt). */
export function recordDeliveryOutcomes(d1: D1Database, outcomes: DeliveryOutcome[], at: Date): D1PreparedStatement {
  const values = outcomes.map((o) => [
    o.id,
    o.status,
    o.statusCode,
    o.error?.slice(0, 1000) ?? null,
    o.nextAttemptAt?.getTime() ?? null,
    o.queued ? 1 : 0,
    o.attempt,
    o.release ? 1 : 0,
  ]);
  return d1.prepare(OUTCOMES_SQL).bind(JSON.stringify(values), at.getTime());
}

/**
 * Sends a delivery again now: PENDING, due now. Returns the delivery (with the
 * attempt number the retry carries: attempts + 1), or no row.
 */
export function requeueDelivery(d1: D1Database, projectId: string, webhookId: string, id: string, at: Date): D1PreparedStatement {
  return d1.prepare(REQUEUE_SQL).bind(id, projectId, webhookId, at.getTime());
}
const REQUEUE_SQL = `UPDATE webhook_deliveries SET status = 'PENDING', next_attempt_at = ?4, queued_at = ?4, updated_at = ?4
  WHERE id = ?1 AND project_id = ?2 AND webhook_id = ?3
  RETURNING *`;

/** The one delivery of a `webhook.test` event (events.ts recordTestEvent, same batch) to its endpoint, queued now. */
export function insertTestDelivery(
  d1: D1Database,
  input: { eventId: string; deliveryId: string; projectId: string; webhookId: string; at: Date },
): D1PreparedStatement {
  return d1.prepare(TEST_DELIVERY_SQL).bind(input.deliveryId, input.projectId, input.webhookId, input.eventId, input.at.getTime());
}
const TEST_DELIVERY_SQL = `INSERT INTO webhook_deliveries (id, project_id, webhook_id, event_id, type, status, attempts, next_attempt_at, queued_at, created_at, updated_at)
  VALUES (?1, ?2, ?3, ?4, 'webhook.test', 'PENDING', 0, ?5, ?5, ?5, ?5) RETURNING *`;

// The cron's safety nets --------------------------------------------------------

/**
 * Attempts claimed before `claimedBefore` that never reported (their
 * invocation ended): each counts as a failed attempt, so the retry schedule
 * (`schedule`, seconds after attempt n at index n - 1) and the failure streak
 * apply as after any failure: PENDING due after its delay (marked queued: the
 * caller sends its message), or FAILED past the schedule. At most `limit`;
 * returns the deliveries with their endpoints, attempts and due times.
 */
export function sweepDeadClaims(d1: D1Database, at: Date, claimedBefore: Date, schedule: readonly number[], error: string, limit: number) {
  return d1.prepare(SWEEP_DEAD_SQL).bind(at.getTime(), claimedBefore.getTime(), JSON.stringify(schedule), error, limit);
}
const DELAY_AFTER = `json_extract(?3, '$[' || (attempts - 1) || ']')`;
const SWEEP_DEAD_SQL = `UPDATE webhook_deliveries SET
    status = CASE WHEN ${DELAY_AFTER} IS NULL THEN 'FAILED' ELSE 'PENDING' END,
    next_attempt_at = CASE WHEN ${DELAY_AFTER} IS NULL THEN NULL ELSE ?1 + ${DELAY_AFTER} * 1000 END,
    last_status_code = NULL, last_error = ?4, claimed_at = NULL, queued_at = ?1, updated_at = ?1
  WHERE id IN (SELECT id FROM webhook_deliveries WHERE claimed_at IS NOT NULL AND claimed_at < ?2 ORDER BY claimed_at LIMIT ?5)
  RETURNING id, project_id, webhook_id, status, attempts, next_attempt_at`;

/** A project's deliveries the drain may queue (?1 project, ?2 now, ?3 overdue-before): due, unclaimed, and no message on its way. */
const DRAINABLE = `project_id = ?1 AND status = 'PENDING' AND next_attempt_at <= ?2 AND claimed_at IS NULL
    AND (queued_at IS NULL OR next_attempt_at < ?3)`;

/**
 * Projects with deliveries for the paced drain (parked over the per-minute
 * cap, or whose message was lost: due before `overdueBefore` and never
 * claimed), the least recently drained first, at most `limit`.
 */
export function projectsToDrain(d1: D1Database, at: Date, overdueBefore: Date, limit: number): D1PreparedStatement {
  return d1.prepare(PROJECTS_TO_DRAIN_SQL).bind(null, at.getTime(), overdueBefore.getTime(), limit);
}
const PROJECTS_TO_DRAIN_SQL = `SELECT p.project_id FROM webhook_pending p WHERE p.pending > 0
    AND EXISTS (SELECT 1 FROM webhook_deliveries WHERE ${DRAINABLE.replaceAll("?1", "p.project_id")})
  ORDER BY p.drained_at LIMIT ?4`;

/**
 * Up to `limit` of a project's drainable deliveries, oldest due first, marked
 * queued now (due now: if the message is lost, the drain takes them again
 * after the grace); `drained` returns them with the attempt number to queue.
 * `rotated` moves the project to the back of the drain's rotation.
 */
export function drainDeliveries(
  d1: D1Database,
  projectId: string,
  at: Date,
  overdueBefore: Date,
  limit: number,
): { drained: D1PreparedStatement; rotated: D1PreparedStatement } {
  return {
    drained: d1.prepare(DRAIN_SQL).bind(projectId, at.getTime(), overdueBefore.getTime(), limit),
    rotated: d1.prepare(DRAINED_AT_SQL).bind(projectId, at.getTime()),
  };
}
const DRAIN_SQL = `UPDATE webhook_deliveries SET queued_at = ?2, next_attempt_at = ?2, updated_at = ?2
  WHERE id IN (SELECT id FROM webhook_deliveries WHERE ${DRAINABLE} ORDER BY next_attempt_at LIMIT ?4)
  RETURNING id, project_id, attempts`;
const DRAINED_AT_SQL = "UPDATE webhook_pending SET drained_at = ?2 WHERE project_id = ?1";

// Retention -----------------------------------------------------------------

/** Deliveries created before `before`, at most `limit` (UUIDv7 ids: an id range). */
export function pruneDeliveries(d1: D1Database, before: Date, limit: number): D1PreparedStatement {
  return d1.prepare(PRUNE_DELIVERIES_SQL).bind(idAtTime(before.getTime()), limit);
}
const PRUNE_DELIVERIES_SQL = "DELETE FROM webhook_deliveries WHERE id IN (SELECT id FROM webhook_deliveries WHERE id < ?1 ORDER BY id LIMIT ?2)";

/** The module's fixed SQL, by name (test/store/statements.test.ts compiles each against the schema). */
export const FIXED_SQL = {
  INSERT_DELIVERIES_SQL,
  FAN_OUT_EVENTS_SQL,
  FAN_OUT_ENDPOINTS_SQL,
  PENDING_SQL,
  ATTEMPT_PAYLOADS_SQL,
  ATTEMPT_ENDPOINTS_SQL,
  CLAIM_SQL,
  PARK_SQL,
  OUTCOMES_SQL,
  REQUEUE_SQL,
  TEST_DELIVERY_SQL,
  SWEEP_DEAD_SQL,
  PROJECTS_TO_DRAIN_SQL,
  DRAIN_SQL,
  DRAINED_AT_SQL,
  PRUNE_DELIVERIES_SQL,
};
