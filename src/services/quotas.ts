import { count, eq, sql, type SQL, type SQLWrapper } from "drizzle-orm";
import type { Database } from "../db/client";
import { contacts, projectDailyUsage, projects } from "../db/schema";
import type { Env } from "../env";
import { readConfig } from "../lib/config";
import { ApiError, raisedMessage } from "../lib/errors";

/**
 * Per-project quotas. One tenant must not be able to fill the shared D1 or
 * use up the shared provider account, so every project has generous limits,
 * each a Worker setting (wrangler.toml [vars]) with a default (src/lib/config.ts). Past a
 * stock quota (contacts, domains, stored bytes) a write is refused with 403
 * QUOTA_EXCEEDED; past a daily quota (emails, events, counted per UTC day)
 * with 429 QUOTA_EXCEEDED and Retry-After until the next UTC midnight.
 * README "Limits and quotas" lists them.
 */
export type QuotaName = "QUOTA_CONTACTS" | "QUOTA_EVENTS_PER_DAY" | "QUOTA_EMAILS_PER_DAY" | "QUOTA_DOMAINS" | "QUOTA_STORED_BYTES";

const WHAT: Record<QuotaName, string> = {
  QUOTA_CONTACTS: "contacts",
  QUOTA_EVENTS_PER_DAY: "events per day",
  QUOTA_EMAILS_PER_DAY: "emails per day",
  QUOTA_DOMAINS: "sending domains",
  QUOTA_STORED_BYTES: "bytes of stored mail and data",
};

/** Seconds until the next UTC midnight, when the daily quotas start again. */
export function secondsUntilUtcMidnight(now = new Date()): number {
  const next = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1);
  return Math.max(1, Math.ceil((next - now.getTime()) / 1000));
}

/** The error for a quota that a write would pass. */
export function quotaExceeded(name: QuotaName, limit: number, now = new Date()): ApiError {
  const daily = name === "QUOTA_EMAILS_PER_DAY" || name === "QUOTA_EVENTS_PER_DAY";
  const message = `This project has reached its quota of ${limit} ${WHAT[name]}`;
  if (daily) {
    const retryAfter = secondsUntilUtcMidnight(now);
    return new ApiError("QUOTA_EXCEEDED", message, {
      status: 429,
      headers: { "Retry-After": String(retryAfter) },
      suggestion: `The daily quota starts again at 00:00 UTC (in ${retryAfter} seconds). An operator can raise ${name}.`,
    });
  }
  return new ApiError("QUOTA_EXCEEDED", message, {
    suggestion: `Delete what is no longer needed, or ask an operator to raise ${name}.`,
  });
}

/*
 * The assert* checks run before the write they guard. Two requests racing at
 * the very edge of a quota can both pass (a quota may be passed by one
 * request's worth); the counts read are exact. buildQuotaGuard checks inside
 * the write's own batch instead, which no concurrent request can slip past.
 */

/** Start of the current UTC day, in ms. */
const utcDayStart = (now: Date) => Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
/** The UTC day number project_daily_usage counts under (ms / 86,400,000). */
export const utcDayNumber = (now: Date) => Math.floor(now.getTime() / 86_400_000);

/** Today's count of `kind` for the project, from its usage counter (one row read). */
function countedToday(projectId: SQLWrapper | string, kind: "events" | "emails", now: Date): SQL {
  const column = kind === "events" ? projectDailyUsage.events : projectDailyUsage.emails;
  return sql`coalesce((SELECT ${column} FROM ${projectDailyUsage} WHERE ${projectDailyUsage.projectId} = ${projectId} AND ${projectDailyUsage.day} = ${utcDayNumber(now)}), 0)`;
}

/**
 * QUOTA_EMAILS_PER_DAY / QUOTA_EVENTS_PER_DAY: what the project recorded since
 * 00:00 UTC plus `adding` must stay within the quota, read from the project's
 * daily usage counter (one row, whatever the project's size).
 */
export async function assertDailyQuota(
  db: Database,
  env: Env,
  projectId: string,
  name: "QUOTA_EMAILS_PER_DAY" | "QUOTA_EVENTS_PER_DAY",
  adding: number,
  now = new Date(),
): Promise<void> {
  if (adding <= 0) return;
  const limit = readConfig(env)[name];
  const [{ today }] = await db.all<{ today: number }>(
    sql`SELECT ${countedToday(projectId, name === "QUOTA_EMAILS_PER_DAY" ? "emails" : "events", now)} AS today`,
  );
  if (today + adding > limit) throw quotaExceeded(name, limit, now);
}

/**
 * QUOTA_EVENTS_PER_DAY for the service's own events (opens, clicks, bounces,
 * complaints, unsubscribes): a condition for the statement that writes the
 * event, so the check costs no round trip of its own. True while the project
 * recorded fewer than `limit` events since 00:00 UTC (its daily usage counter,
 * one row). Past the quota the
 * event is not stored; what the event reports (the email's status and counters,
 * the suppression, the unsubscribe) still happens.
 */
export function underDailyEventQuota(projectId: SQLWrapper | string, limit: number, now = new Date()): SQL {
  return sql`${countedToday(projectId, "events", now)} < ${limit}`;
}

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

const DEFAULTS = {};
/** The configured QUOTA_EVENTS_PER_DAY, or its default when no env is at hand (scripts, tests). */
export const eventsPerDay = (env: Env | undefined) => readConfig(env ?? DEFAULTS).QUOTA_EVENTS_PER_DAY;

/** QUOTA_STORED_BYTES: the project's stored mail plus `adding` bytes must stay within the quota. */
export async function assertStoredBytesQuota(db: Database, env: Env, projectId: string, adding: number): Promise<void> {
  const limit = readConfig(env).QUOTA_STORED_BYTES;
  const [project] = await db.select({ storedBytes: projects.storedBytes }).from(projects).where(eq(projects.id, projectId));
  if ((project?.storedBytes ?? 0) + adding > limit) throw quotaExceeded("QUOTA_STORED_BYTES", limit);
}

/** What one write batch adds, for the quotas it could pass. */
export interface QuotaUse {
  /** Addresses the batch upserts as contacts (lower-case, distinct); those that are not contacts yet count. */
  contacts?: string[];
  eventsToday?: number;
  emailsToday?: number;
  storedBytes?: number;
}

/**
 * The quota checks of a write batch as one statement that goes first in the
 * batch: an INSERT into quota_checks of (quota, used, limit) rows (one SELECT each) whose trigger
 * (migration 0010) aborts the whole batch when a quota would be passed. Counted
 * inside the batch's transaction, so the check costs no round trip of its own
 * and no concurrent request slips between check and write. Null when nothing
 * is to be checked. Run the batch with runGuardedBatch for the error.
 */
export function buildQuotaGuard(db: Database, env: Env, projectId: string, use: QuotaUse, now = new Date()): D1PreparedStatement | null {
  // Fixed SQL fragments bound positionally: nothing is built by the query
  // builder on the request path. The usage counters are read, never counted.
  const config = readConfig(env);
  const rows: string[] = [];
  const params: unknown[] = [];
  const addresses = [...new Set(use.contacts ?? [])];
  if (addresses.length > 0) {
    // Existing contacts cost nothing; only when one would be created is the project's total read.
    rows.push(
      `SELECT 'QUOTA_CONTACTS', CASE WHEN existing.n < ? THEN coalesce((SELECT contacts FROM project_usage WHERE project_id = ?), 0) + ? - existing.n ELSE 0 END, ?
       FROM (SELECT count(*) AS n FROM contacts WHERE project_id = ? AND email IN (SELECT value FROM json_each(?))) AS existing`,
    );
    params.push(addresses.length, projectId, addresses.length, config.QUOTA_CONTACTS, projectId, JSON.stringify(addresses));
  }
  for (const [name, column, adding] of [
    ["QUOTA_EVENTS_PER_DAY", "events", use.eventsToday ?? 0],
    ["QUOTA_EMAILS_PER_DAY", "emails", use.emailsToday ?? 0],
  ] as const) {
    if (adding <= 0) continue;
    rows.push(`SELECT '${name}', coalesce((SELECT ${column} FROM project_daily_usage WHERE project_id = ? AND day = ?), 0) + ?, ?`);
    params.push(projectId, utcDayNumber(now), adding, config[name]);
  }
  if ((use.storedBytes ?? 0) > 0) {
    rows.push("SELECT 'QUOTA_STORED_BYTES', coalesce((SELECT stored_bytes FROM projects WHERE id = ?), 0) + ?, ?");
    params.push(projectId, use.storedBytes, config.QUOTA_STORED_BYTES);
  }
  if (rows.length === 0) return null;
  return db.$client.prepare(`INSERT INTO quota_checks (quota, used, quota_limit) ${rows.join(" UNION ALL ")}`).bind(...params);
}

/** The quota error a batch with a buildQuotaGuard statement was aborted with, or null. */
export function quotaGuardError(err: unknown, env: Env, now = new Date()): ApiError | null {
  const match = raisedMessage(err, /QUOTA_EXCEEDED:(QUOTA_[A-Z_]+)/);
  if (!match || !(match[1] in WHAT)) return null;
  const name = match[1] as QuotaName;
  return quotaExceeded(name, readConfig(env)[name], now);
}

/** Runs a write batch (db.batch or runBatch) that starts with a quota guard, turning its abort into the quota's error. */
export async function runGuardedBatch<T>(env: Env, run: () => Promise<T>, now = new Date()): Promise<T> {
  try {
    return await run();
  } catch (err) {
    throw quotaGuardError(err, env, now) ?? err;
  }
}

/** The statement that adds `bytes` to the project's stored-bytes count (run in the same batch as the write). */
export function addStoredBytes(db: Database, projectId: string, bytes: number) {
  return db
    .update(projects)
    .set({ storedBytes: sql`${projects.storedBytes} + ${bytes}` })
    .where(eq(projects.id, projectId));
}
