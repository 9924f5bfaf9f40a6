import { count, sql, type SQL } from "drizzle-orm";
import type { Database } from "../db/client";
import { contacts } from "../db/schema";
import type { Env } from "../env";
import { type ConfigInput, readConfig } from "../lib/config";
import { ApiError } from "../lib/errors";
import { type Statement, WriteBatch } from "../store/batch";
import { countedToday, countGuard, type CountedQuota, secondsUntilUtcMidnight, storedBytesGuard } from "../store/guards";

/**
 * Per-project quotas. One tenant must not be able to fill the shared D1 or
 * use up the shared provider account, so every project has generous limits,
 * each a Worker setting (wrangler.toml [vars]) with a default (src/lib/config.ts). Past a
 * stock quota (contacts, domains, stored bytes) a write is refused with 403
 * QUOTA_EXCEEDED; past a daily quota (emails, events, counted per UTC day)
 * with 429 QUOTA_EXCEEDED and Retry-After until the next UTC midnight.
 * docs/configuration.md "Limits and quotas" lists them. Every write checks its quotas
 * inside its own batch (store/guards.ts quotaGuard); a campaign checks its
 * whole audience before it starts (campaignQuotaFit).
 */
/** Start of the current UTC day, in ms. */
const utcDayStart = (now: Date) => Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());

/**
 * QUOTA_EMAILS_PER_DAY for a campaign, all or nothing: whether its audience
 * (contacts matching `audience`, counted up to the quota) fits in what is left
 * of today's quota ("now"), only on a later day ("later"), or never, being
 * larger than the whole daily quota ("never"). A campaign is never half sent
 * because of the quota.
 */
export async function campaignQuotaFit(db: Database, env: Env, projectId: string, audience: SQL, now = new Date()) {
  const limit = readConfig(env).QUOTA_EMAILS_PER_DAY;
  const [[{ today }], [{ recipients }]] = await db.batch([
    db.select({ today: countedToday(projectId, "emails", now).mapWith(Number) }).from(sql`(SELECT 1)`),
    db.select({ recipients: count() }).from(
      db
        .select({ one: sql`1`.as("one") })
        .from(contacts)
        .where(audience)
        .limit(limit + 1)
        .as("audience"),
    ),
  ]);
  const left = Math.max(0, limit - today);
  const fit: "now" | "later" | "never" = recipients > limit ? "never" : recipients > left ? "later" : "now";
  return { fit, recipients, left, limit };
}

/** The refusal of a campaign that does not fit the daily email quota (see campaignQuotaFit). */
export function campaignQuotaError(check: Awaited<ReturnType<typeof campaignQuotaFit>>, now = new Date()): ApiError {
  if (check.fit === "never") {
    return new ApiError(
      "QUOTA_EXCEEDED",
      `The campaign's audience (more than ${check.limit} contacts) is larger than this project's quota of ${check.limit} emails per day`,
      {
        suggestion: "Narrow the audience (a segment or filter), or ask an operator to raise QUOTA_EMAILS_PER_DAY.",
      },
    );
  }
  const retryAfter = secondsUntilUtcMidnight(now);
  return new ApiError(
    "QUOTA_EXCEEDED",
    `The campaign's audience (${check.recipients} contacts) is more than the ${check.left} emails left of today's quota of ${check.limit}`,
    {
      status: 429,
      headers: { "Retry-After": String(retryAfter) },
      suggestion: `Nothing was sent. Send it after 00:00 UTC (in ${retryAfter} seconds), e.g. with scheduledFor, or ask an operator to raise QUOTA_EMAILS_PER_DAY.`,
    },
  );
}

/** The next 00:00 UTC, when the daily quotas start again. */
export const nextUtcMidnight = (now = new Date()) => new Date(utcDayStart(now) + 24 * 60 * 60 * 1000);

/**
 * Writes that store bytes (templates, campaigns, workflows), in one batch with
 * their quota checks: a count cap before them when they add a row, the stored
 * bytes (kept by triggers) after them. Returns each write's rows; past a quota
 * nothing is written and the quota's ApiError is thrown.
 */
export async function writeWithinQuotas(
  db: Database,
  env: ConfigInput,
  projectId: string,
  writes: Statement[],
  cap?: { quota: CountedQuota; owner?: string },
): Promise<Record<string, unknown>[][]> {
  const d1 = db.$client;
  const batch = new WriteBatch(d1);
  if (cap) batch.add(countGuard(d1, env, cap.quota, cap.owner ?? projectId));
  const written = batch.add(...writes);
  batch.add(storedBytesGuard(d1, env, projectId));
  return (await batch.run({ env })).each(written);
}
