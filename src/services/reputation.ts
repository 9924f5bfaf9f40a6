import { getDb, runBatch } from "../db/client";
import { controlDb } from "../db/shards";
import { mirrorSendingPause } from "../store/projects";
import type { Env } from "../env";
import { readConfig, type ConfigInput } from "../lib/config";
import { ApiError } from "../lib/errors";
import { WriteBatch } from "../store/batch";
import { ownerResume, pauseProjectsPastLimits, pruneReputation, sendingStatusOf, type ReputationLimits, type SendingStatusRow } from "../store/reputation";

/**
 * The reputation breaker: one tenant's bad list must not get the shared SES
 * account paused. D1 triggers count per project and UTC day the emails sent,
 * permanent bounces and complaints (project_reputation); each cron tick pauses
 * every project whose window (REPUTATION_WINDOW_DAYS, today included) holds at
 * least REPUTATION_MIN_SENT sent emails and a bounce rate above
 * REPUTATION_MAX_BOUNCE_RATE or a complaint rate above
 * REPUTATION_MAX_COMPLAINT_RATE. A paused project's sends are 403
 * SENDING_PAUSED (the auth middleware reads the pause with the key, so it costs
 * no extra D1 round trip) and its queued mail fails at the claim. It stays
 * paused until resumed: by the operator (`npm run project -- resume <id>`), or
 * once per window by the owner (POST /project/sending/resume). A resume starts
 * a fresh window (the project's counters are cleared).
 */

const DAY_MS = 86_400_000;
/** Counter rows pruned per tick, at most (a bounded DELETE). */
const PRUNE_PER_TICK = 1_000;

const dayOf = (ms: number) => Math.floor(ms / DAY_MS);

function limitsOf(env: ConfigInput, now: number): ReputationLimits {
  const config = readConfig(env);
  return {
    fromDay: dayOf(now) - (config.REPUTATION_WINDOW_DAYS - 1),
    windowDays: config.REPUTATION_WINDOW_DAYS,
    minSent: config.REPUTATION_MIN_SENT,
    maxBounceRate: config.REPUTATION_MAX_BOUNCE_RATE,
    maxComplaintRate: config.REPUTATION_MAX_COMPLAINT_RATE,
  };
}

/** The cron job: pauses the projects past a limit and prunes counter days before the window. One batch. */
export async function runReputationCheck(env: Env, now: Date): Promise<{ paused: number }> {
  const limits = limitsOf(env, now.getTime());
  const batch = new WriteBatch(env.DB);
  const pause = batch.add(pauseProjectsPastLimits(env.DB, limits, now.getTime()));
  batch.add(pruneReputation(env.DB, limits.fromDay, PRUNE_PER_TICK));
  const paused = (await batch.run()).rows(pause) as { id: string; reason: string }[];
  for (const project of paused) console.warn(`reputation breaker: sending paused for project ${project.id}: ${project.reason}`);
  // The API key lookup reads the pause from the control database: a shard's pauses are copied there.
  const control = controlDb(env);
  if (paused.length > 0 && control !== env.DB)
    await runBatch(
      getDb(control),
      paused.map((p) => mirrorSendingPause(control, p.id, now, p.reason, now)),
    );
  return { paused: paused.length };
}

/** What GET /project/sending answers. */
export interface SendingStatus {
  paused: boolean;
  pausedAt: Date | null;
  reason: string | null;
  window: { days: number; sent: number; bounced: number; complained: number };
  limits: { minSent: number; maxBounceRate: number; maxComplaintRate: number };
}

function statusOf(row: SendingStatusRow | null, limits: ReputationLimits): SendingStatus {
  return {
    paused: row?.pausedAt != null,
    pausedAt: row?.pausedAt != null ? new Date(row.pausedAt) : null,
    reason: row?.reason ?? null,
    window: { days: limits.windowDays, sent: row?.sent ?? 0, bounced: row?.bounced ?? 0, complained: row?.complained ?? 0 },
    limits: { minSent: limits.minSent, maxBounceRate: limits.maxBounceRate, maxComplaintRate: limits.maxComplaintRate },
  };
}

export async function getSendingStatus(env: Env, projectId: string, now = Date.now()): Promise<SendingStatus> {
  const limits = limitsOf(env, now);
  return statusOf(await sendingStatusOf(env.DB, projectId, limits.fromDay).first<SendingStatusRow>(), limits);
}

/**
 * The owner's resume: a paused project sends again with a fresh window, once
 * per window (a second resume within REPUTATION_WINDOW_DAYS of the last one is
 * 403 SENDING_PAUSED: only the operator can). Not paused: nothing changes.
 */
export async function resumeSending(env: Env, projectId: string, now = Date.now()): Promise<SendingStatus> {
  const limits = limitsOf(env, now);
  const batch = new WriteBatch(env.DB);
  batch.add(...ownerResume(env.DB, projectId, now, now - limits.windowDays * DAY_MS));
  const after = batch.add(sendingStatusOf(env.DB, projectId, limits.fromDay));
  const [row] = (await batch.run()).rows(after) as unknown as SendingStatusRow[];
  const status = statusOf(row ?? null, limits);
  const control = controlDb(env);
  if (!status.paused && control !== env.DB) await mirrorSendingPause(control, projectId, null, null, new Date(now)).run();
  if (status.paused) {
    throw new ApiError("SENDING_PAUSED", `Sending is paused for this project and was already resumed through the API in the last ${limits.windowDays} days`, {
      suggestion: "Ask the operator of this service to run `npm run project -- resume <projectId>` once the list is cleaned.",
    });
  }
  return status;
}

/** The 403 a paused project's send gets. */
export function sendingPausedError(reason: string | null): ApiError {
  return new ApiError("SENDING_PAUSED", `Sending is paused for this project: ${reason ?? "bounce or complaint rate too high"}`, {
    suggestion:
      "See GET /project/sending. Remove the addresses that bounce or complain, then resume with POST /project/sending/resume (once per window) or ask the operator (`npm run project -- resume <projectId>`).",
  });
}
