import type { Env } from "../../env";
import { readConfig } from "../../lib/config";
import * as store from "../../store/webhooks";
import { queueDeliveries, queueWebhookEvents } from "./deliver";

/**
 * The cron's safety nets for event webhooks, each bounded per tick:
 * - recorded events never handed to the queue (the request or invocation that
 *   recorded them died before its hand-over) or handed over and lost;
 * - PENDING deliveries long overdue (their message was lost, or the consumer
 *   died after claiming an attempt);
 * - retention: deliveries older than WEBHOOK_RETENTION_DAYS.
 */
const PAGE = 100;
const PAGES_PER_TICK = 10;
/** A request's own hand-over gets this long before the cron takes an event over. */
const HANDOVER_GRACE_MS = 30_000;
/** An event queued this long ago and still not fanned out is queued again. */
const REQUEUE_AFTER_MS = 5 * 60_000;
/** A delivery this far past its due time is queued again. */
const OVERDUE_MS = 2 * 60_000;
const PRUNE_ROWS_PER_TICK = 2000;

export async function drainWebhookOutbox(env: Env, now = new Date()): Promise<number> {
  let total = 0;
  for (let page = 0; page < PAGES_PER_TICK; page++) {
    const { results } = await store
      .claimOutboxEvents(env.DB, now, new Date(now.getTime() - HANDOVER_GRACE_MS), new Date(now.getTime() - REQUEUE_AFTER_MS), PAGE)
      .all<{ id: string; project_id: string }>();
    if (results.length === 0) break;
    const byProject = new Map<string, string[]>();
    for (const row of results) byProject.set(row.project_id, [...(byProject.get(row.project_id) ?? []), row.id]);
    for (const [projectId, ids] of byProject) {
      if (!(await queueWebhookEvents(env, projectId, ids))) {
        await store.unclaimOutboxEvents(env.DB, ids).run();
        return total;
      }
      total += ids.length;
    }
    if (results.length < PAGE) break;
  }
  return total;
}

export async function sweepOverdueDeliveries(env: Env, now = new Date()): Promise<number> {
  const { results } = await store
    .claimOverdueDeliveries(env.DB, now, new Date(now.getTime() - OVERDUE_MS), new Date(now.getTime() + OVERDUE_MS), PAGE * PAGES_PER_TICK)
    .all<{ id: string; project_id: string; attempts: number }>();
  // The attempt after the last one claimed: a claimed-then-abandoned attempt is taken over (store.claimDeliveries).
  await queueDeliveries(
    env,
    results.map((r) => ({ deliveryId: r.id, projectId: r.project_id, attempt: r.attempts + 1 })),
  );
  return results.length;
}

/** Deliveries (and their events) past WEBHOOK_RETENTION_DAYS, and old per-minute counters. */
export async function pruneWebhookDeliveries(env: Env, now = new Date()) {
  const days = readConfig(env).WEBHOOK_RETENTION_DAYS;
  const before = new Date(now.getTime() - days * 86_400_000);
  const results = await env.DB.batch([
    ...store.pruneWebhookHistory(env.DB, before, PRUNE_ROWS_PER_TICK),
    store.pruneMinuteUsage(env.DB, Math.floor(now.getTime() / 60_000) - 1),
  ]);
  return { deliveries: results[0].meta.changes ?? 0, events: results[1].meta.changes ?? 0 };
}

/** The cron job: outbox, overdue deliveries. */
export async function runWebhookJobs(env: Env, now = new Date()) {
  return { events: await drainWebhookOutbox(env, now), overdue: await sweepOverdueDeliveries(env, now) };
}
