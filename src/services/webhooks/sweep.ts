import type { Env } from "../../env";
import { readConfig } from "../../lib/config";
import { enqueueDeliveries, enqueueWebhookEvents } from "../../queues";
import { WriteBatch } from "../../store/batch";
import { drainDeliveries, projectsToDrain, pruneDeliveries, sweepDeadClaims } from "../../store/webhooks/deliveries";
import { claimOutboxEvents, pruneEvents, unclaimOutboxEvents } from "../../store/webhooks/events";
import { attemptsLeft, CLAIM_MS, DEAD_ATTEMPT_ERROR, endpointsFailedStatements, RETRY_SCHEDULE_SECONDS } from "./attempts";

/**
 * The cron's sweep of event webhooks (as send/sweep.ts is the send queue's),
 * each job bounded per tick:
 * - recorded events never handed to the queue (the request or invocation that
 *   recorded them died before its hand-over) or handed over and lost;
 * - attempts claimed and never reported (the invocation died mid-call): each
 *   counts as a failed attempt and its next one is queued with the schedule's
 *   delay, so every delivery reaches SUCCEEDED or FAILED by itself (the crash
 *   is counted at most CLAIM_MS plus a tick after it, then the schedule goes on);
 * - the paced drain: per project, due deliveries with no message on its way
 *   (parked over the per-minute cap, or their message was lost) are queued, as
 *   many as the project's cap has left this minute, so queue messages follow
 *   the calls made, not the backlog;
 * - retention: deliveries older than WEBHOOK_RETENTION_DAYS.
 */
const PAGE = 100;
const PAGES_PER_TICK = 10;
/** A request's own hand-over gets this long before the cron takes an event over. */
const HANDOVER_GRACE_MS = 30_000;
/** An event queued this long ago and still not fanned out is queued again. */
const REQUEUE_AFTER_MS = 5 * 60_000;
/** A delivery whose message is this far past its due time is taken as lost and queued again. */
const OVERDUE_MS = 2 * 60_000;
/** The drain's bounds per tick: projects visited, messages per project and in all. */
const DRAIN_PROJECTS_PER_TICK = 50;
const DRAIN_PER_PROJECT = 1000;
const DRAIN_MESSAGES_PER_TICK = 5000;
const DEAD_CLAIMS_PER_TICK = 1000;
const PRUNE_ROWS_PER_TICK = 2000;

export async function drainWebhookOutbox(env: Env, now = new Date()): Promise<number> {
  let total = 0;
  for (let page = 0; page < PAGES_PER_TICK; page++) {
    const { results } = await claimOutboxEvents(
      env.DB,
      now,
      new Date(now.getTime() - HANDOVER_GRACE_MS),
      new Date(now.getTime() - REQUEUE_AFTER_MS),
      PAGE,
    ).all<{ id: string; project_id: string }>();
    if (results.length === 0) break;
    const byProject = new Map<string, string[]>();
    for (const row of results) byProject.set(row.project_id, [...(byProject.get(row.project_id) ?? []), row.id]);
    for (const [projectId, ids] of byProject) {
      if (
        !(await enqueueWebhookEvents(
          env,
          ids.map((id) => ({ id, projectId })),
        ))
      ) {
        await unclaimOutboxEvents(env.DB, ids).run();
        return total;
      }
      total += ids.length;
    }
    if (results.length < PAGE) break;
  }
  return total;
}

/** Attempts that never reported, as failed attempts (the schedule and the endpoints' failure streak apply). */
export async function sweepDeadAttempts(env: Env, now = new Date()): Promise<number> {
  const { results } = await sweepDeadClaims(
    env.DB,
    now,
    new Date(now.getTime() - CLAIM_MS),
    RETRY_SCHEDULE_SECONDS,
    DEAD_ATTEMPT_ERROR,
    DEAD_CLAIMS_PER_TICK,
  ).all<{ id: string; project_id: string; webhook_id: string; status: string; attempts: number; next_attempt_at: number | null }>();
  const webhookIds = [...new Set(results.map((r) => r.webhook_id))];
  if (webhookIds.length > 0) await env.DB.batch(endpointsFailedStatements(env, webhookIds, now));
  // The next attempts go with the schedule's delay at once (if this send fails, the drain takes them once overdue).
  await enqueueDeliveries(
    env,
    results
      .filter((r) => r.status === "PENDING" && r.next_attempt_at !== null)
      .map((r) => ({
        deliveryId: r.id,
        projectId: r.project_id,
        attempt: r.attempts + 1,
        delaySeconds: Math.max(0, Math.ceil((r.next_attempt_at! - now.getTime()) / 1000)),
      })),
  );
  return results.length;
}

/** The paced drain: per project, what its per-minute cap has left of its due deliveries, queued. */
export async function drainDueDeliveries(env: Env, now = new Date()): Promise<number> {
  const overdueBefore = new Date(now.getTime() - OVERDUE_MS);
  const { results: projects } = await projectsToDrain(env.DB, now, overdueBefore, DRAIN_PROJECTS_PER_TICK).all<{ project_id: string }>();
  let total = 0;
  for (const { project_id: projectId } of projects) {
    const take = Math.min(await attemptsLeft(env, projectId, now.getTime()), DRAIN_PER_PROJECT, DRAIN_MESSAGES_PER_TICK - total);
    const { drained, rotated } = drainDeliveries(env.DB, projectId, now, overdueBefore, take);
    const batch = new WriteBatch(env.DB);
    const part = batch.add(drained);
    batch.add(rotated);
    const rows = (await batch.run()).rows(part) as { id: string; attempts: number }[];
    await enqueueDeliveries(
      env,
      rows.map((r) => ({ deliveryId: r.id, projectId, attempt: r.attempts + 1 })),
    );
    total += rows.length;
    if (total >= DRAIN_MESSAGES_PER_TICK) break;
  }
  return total;
}

/** Deliveries (and their events) past WEBHOOK_RETENTION_DAYS. */
export async function pruneWebhookDeliveries(env: Env, now = new Date()) {
  const days = readConfig(env).WEBHOOK_RETENTION_DAYS;
  const before = new Date(now.getTime() - days * 86_400_000);
  // Deliveries first: an event is pruned a day after its deliveries.
  const batch = new WriteBatch(env.DB);
  const deliveries = batch.add(pruneDeliveries(env.DB, before, PRUNE_ROWS_PER_TICK));
  const events = batch.add(pruneEvents(env.DB, before, PRUNE_ROWS_PER_TICK));
  const result = await batch.run();
  return { deliveries: result.changes(deliveries), events: result.changes(events) };
}

/** The cron job: outbox, attempts that never reported, the paced drain. */
export async function runWebhookJobs(env: Env, now = new Date()) {
  const events = await drainWebhookOutbox(env, now);
  const dead = await sweepDeadAttempts(env, now);
  return { events, dead, drained: await drainDueDeliveries(env, now) };
}
