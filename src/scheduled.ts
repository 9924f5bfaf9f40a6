import { getDb } from "./db/client";
import { controlDb, shardEnv, shardIds } from "./db/shards";
import type { Env } from "./env";
import { HandOver } from "./hand-over";
import type { AfterCommit } from "./lib/after-commit";
import { runCampaignJobs } from "./services/campaigns/audience";
import { releaseUnverifiedDomains, runDomainChecks } from "./services/domains";
import { sweepStuckEmails } from "./services/send/sweep";
import { purgeExpiredIdempotencyKeys } from "./store/idempotency";
import { reconcileUsageCounters, runRetention } from "./services/retention";
import { dispatchAllWorkflowTriggers } from "./services/workflows/triggers";
import { runWebhookJobs } from "./services/webhooks/sweep";
import { runReputationCheck } from "./services/reputation";
import { runImportJobs } from "./services/contact-imports/recovery";
import { runObjectExpiry } from "./services/storage/expiry";
import { runArchive } from "./services/archive/run";
import { shardsInMoves } from "./services/shards/moving";

/** One scheduled job: runs on every Cron Trigger tick (wrangler.toml [triggers]); what its writes record leaves through the tick's door. */
export type ScheduledJob = (env: Env, now: Date, afterCommit: AfterCommit) => Promise<unknown>;

/**
 * The jobs of the cron tick, in order. Each is bounded (a few subrequests per
 * run) and one job's failure does not stop the others. Add new jobs here.
 */
export const SCHEDULED_JOBS: Record<string, ScheduledJob> = {
  domainChecks: (env, now, afterCommit) => runDomainChecks(getDb(controlDb(env)), env, now, afterCommit),
  unverifiedDomains: (env, now) => releaseUnverifiedDomains(getDb(controlDb(env)), env, now),
  stuckEmails: (env, now, afterCommit) => sweepStuckEmails(env, now, { afterCommit }),
  campaigns: (env, now, afterCommit) => runCampaignJobs(env, now, afterCommit),
  idempotencyKeys: (env, now) => purgeExpiredIdempotencyKeys(env.DB, now),
  retention: (env, now) => runRetention(env, now),
  // R2: expired days out of the r2_usage ledger; locally (no lifecycle rules) the expired objects too.
  objectExpiry: (env, now) => runObjectExpiry(env, now),
  // Records older than the hot window (EMAIL_HOT_DAYS) to R2 day archives, on every shard.
  archive: (env, now) => runArchive(env, now),
  usageCounters: (env, now) => reconcileUsageCounters(env, now),
  // Workflow triggers from paths that do not hand them over themselves (see src/app.ts).
  workflowTriggers: (env) => dispatchAllWorkflowTriggers(env),
  // Webhook events and deliveries whose hand-over or message was lost.
  webhooks: (env, now) => runWebhookJobs(env, now),
  // Contact imports: dead uploads dropped, chunk ranges of failed imports deleted, lost chunks queued again.
  imports: (env, now) => runImportJobs(env, now),
  // Pauses projects whose bounce or complaint rate passed the limit (one statement over the window's counters).
  reputation: (env, now) => runReputationCheck(env, now),
};

/** The jobs that work on the control database (domains) and run once per tick; every other job runs once per data shard. */
export const CONTROL_JOBS: ReadonlySet<string> = new Set(["domainChecks", "unverifiedDomains"]);

/**
 * Runs every scheduled job for this tick; `now` is the tick's scheduled time. A data job runs
 * once per data shard (src/db/shards.ts), each run with that shard's env and its own bound,
 * so a tick's work grows with the shards, never one shard's with another's. Results are keyed
 * by job (shard 0, or a control job) and `job@shard` for the other shards.
 */
export async function runScheduledJobs(env: Env, controller: Pick<ScheduledController, "scheduledTime">) {
  const now = new Date(controller.scheduledTime);
  const results: Record<string, unknown> = {};
  const handOver = new HandOver(env);
  // A move copies between two shards: their project jobs wait for the next tick after it (src/services/shards/moving.ts).
  const moving = await shardsInMoves(env);
  for (const [name, job] of Object.entries(SCHEDULED_JOBS)) {
    for (const shard of CONTROL_JOBS.has(name) ? [0] : shardIds(env)) {
      const key = shard === 0 ? name : `${name}@${shard}`;
      const skipped = CONTROL_JOBS.has(name) ? undefined : moving.get(shard);
      if (skipped) {
        results[key] = { skipped };
        continue;
      }
      try {
        results[key] = await job(shardEnv(env, shard), now, handOver);
      } catch (err) {
        console.error(`scheduled job ${key} failed`, err);
        results[key] = { error: err instanceof Error ? err.message : String(err) };
      }
      // Each job's hand-over before the next job runs (the webhook and workflow drains come later in the tick).
      await handOver.flush();
    }
  }
  return results;
}
