import { sql, type SQL, type SQLWrapper } from "drizzle-orm";
import { projectDailyUsage } from "../db/schema";
import { readConfig, type ConfigInput } from "../lib/config";
import { ApiError } from "../lib/errors";
import { probesWorkflowTriggers } from "./marks";

/**
 * The guards of the write batches: statements that go first in a batch and
 * abort all of it (a trigger's RAISE) when a quota would be passed or a
 * recipient is suppressed, so no concurrent request slips between check and
 * write and the check costs no round trip. A new guard is one entry in
 * GUARD_NAMES plus its migration (test/store/guards.test.ts compares the two).
 */

/** Every message a trigger of the schema RAISEs, and the migration that raises it. */
export const GUARD_NAMES = [
  "CONTACT_DATA_TOO_LARGE", // 0002: contacts.data over MAX_CONTACT_DATA_BYTES
  "QUOTA_EXCEEDED:QUOTA_CONTACTS", // 0010/0014: quota_checks
  "QUOTA_EXCEEDED:QUOTA_EVENTS_PER_DAY",
  "QUOTA_EXCEEDED:QUOTA_EMAILS_PER_DAY",
  "QUOTA_EXCEEDED:QUOTA_STORED_BYTES",
  "QUOTA_EXCEEDED:QUOTA_R2_STORED_BYTES", // 0029
  "QUOTA_EXCEEDED:QUOTA_PUBLIC_CONTACTS_PER_DAY", // 0018
  "QUOTA_EXCEEDED:QUOTA_PUBLIC_EVENTS_PER_DAY",
  "QUOTA_EXCEEDED:QUOTA_TEMPLATES", // 0019: count caps
  "QUOTA_EXCEEDED:QUOTA_CAMPAIGNS",
  "QUOTA_EXCEEDED:QUOTA_SEGMENTS",
  "QUOTA_EXCEEDED:QUOTA_WORKFLOW_VERSIONS",
  "QUOTA_EXCEEDED:QUOTA_TOPICS", // 0037: quota_checks_topics
  "QUOTA_EXCEEDED:QUOTA_SUPPRESSIONS", // 0036: quota_checks_suppressions
  "QUOTA_EXCEEDED:UNKNOWN",
  "SEND_HAS_SUPPRESSED_RECIPIENTS", // 0014: suppressionGuard
] as const;

export type GuardName = (typeof GUARD_NAMES)[number];

/** Largest stored contact data (JSON bytes), enforced by a trigger on every write (migration 0002). */
export const MAX_CONTACT_DATA_BYTES = 65536;

export type QuotaName =
  | "QUOTA_CONTACTS"
  | "QUOTA_EVENTS_PER_DAY"
  | "QUOTA_EMAILS_PER_DAY"
  | "QUOTA_DOMAINS"
  | "QUOTA_STORED_BYTES"
  | "QUOTA_R2_STORED_BYTES"
  | "QUOTA_PUBLIC_CONTACTS_PER_DAY"
  | "QUOTA_PUBLIC_EVENTS_PER_DAY"
  | "QUOTA_SUPPRESSIONS"
  | CountedQuota;

/** The count caps (a row too many is refused like a stock quota), and the table each counts. */
export type CountedQuota = "QUOTA_TEMPLATES" | "QUOTA_CAMPAIGNS" | "QUOTA_SEGMENTS" | "QUOTA_WORKFLOW_VERSIONS" | "QUOTA_TOPICS";

const WHAT: Record<QuotaName, string> = {
  QUOTA_CONTACTS: "contacts",
  QUOTA_EVENTS_PER_DAY: "events per day",
  QUOTA_EMAILS_PER_DAY: "emails per day",
  QUOTA_DOMAINS: "sending domains",
  QUOTA_STORED_BYTES: "bytes of stored mail and data",
  QUOTA_R2_STORED_BYTES: "bytes kept in object storage (sent email bodies and files)",
  QUOTA_PUBLIC_CONTACTS_PER_DAY: "new contacts per day through a public key",
  QUOTA_PUBLIC_EVENTS_PER_DAY: "events per day through a public key",
  QUOTA_TEMPLATES: "templates",
  QUOTA_CAMPAIGNS: "campaigns",
  QUOTA_SEGMENTS: "segments",
  QUOTA_WORKFLOW_VERSIONS: "stored versions of one workflow",
  QUOTA_TOPICS: "topics",
  QUOTA_SUPPRESSIONS: "suppression list entries",
};

const DAILY: ReadonlySet<QuotaName> = new Set(["QUOTA_EMAILS_PER_DAY", "QUOTA_EVENTS_PER_DAY", "QUOTA_PUBLIC_CONTACTS_PER_DAY", "QUOTA_PUBLIC_EVENTS_PER_DAY"]);

/** Seconds until the next UTC midnight, when the daily quotas start again. */
export function secondsUntilUtcMidnight(now = new Date()): number {
  const next = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1);
  return Math.max(1, Math.ceil((next - now.getTime()) / 1000));
}

/** The UTC day number project_daily_usage counts under (ms / 86,400,000). */
export const utcDayNumber = (now: Date) => Math.floor(now.getTime() / 86_400_000);

/**
 * The error for a quota that a write would pass: 403 for a stock quota
 * (contacts, domains, stored bytes), 429 with Retry-After until the next UTC
 * midnight for a daily one (emails, events).
 */
export function quotaExceeded(name: QuotaName, limit: number, now = new Date()): ApiError {
  const daily = DAILY.has(name);
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

/** Today's count of `kind` for the project, from its usage counter (one row read). */
export function countedToday(projectId: SQLWrapper | string, kind: "events" | "emails", now: Date): SQL {
  const column = kind === "events" ? projectDailyUsage.events : projectDailyUsage.emails;
  return sql`coalesce((SELECT ${column} FROM ${projectDailyUsage} WHERE ${projectDailyUsage.projectId} = ${projectId} AND ${projectDailyUsage.day} = ${utcDayNumber(now)}), 0)`;
}

/**
 * QUOTA_EVENTS_PER_DAY for the service's own events (opens, clicks, bounces,
 * complaints, unsubscribes): a condition of the statement that writes the
 * event. Past the quota the event is not stored; what it reports still happens.
 */
export function underDailyEventQuota(projectId: SQLWrapper | string, env: ConfigInput | undefined, now = new Date()): SQL {
  return sql`${countedToday(projectId, "events", now)} < ${readConfig(env ?? {}).QUOTA_EVENTS_PER_DAY}`;
}

/** What one write batch adds, for the quotas it could pass. */
export interface QuotaUse {
  /** Addresses the batch upserts as contacts (lower-case); those that are not contacts yet count. */
  contacts?: string[];
  eventsToday?: number;
  emailsToday?: number;
  /** A public key's write: its addresses (new ones count) and events, against its own daily quotas. */
  publicKey?: { contacts: string[]; events: number };
  /**
   * At most the bytes the batch adds to what the 0019 triggers count: checked up front, the
   * project's stored bytes plus this against QUOTA_STORED_BYTES, in place of a storedBytesGuard
   * last in the batch (one statement fewer, for writes whose size is known before they run).
   * With `contacts`, the contact.* webhook events the write may record are bounded here too
   * (CONTACT_SNAPSHOT_BOUND): each a snapshot of the contact as the write leaves it.
   */
  storedBytesAtMost?: number;
  /** Bytes the write will add in R2 (a send's HTML, which goes there once sent), against QUOTA_R2_STORED_BYTES. */
  r2Bytes?: number;
}

/**
 * The contact.* webhook events one contact write may store (W1), at most: when an enabled
 * endpoint of the project subscribes to a contact.* type, two snapshots per named contact
 * (contact.created or .updated, and .subscribed or .unsubscribed), each its data as stored
 * plus the write's bytes (at most MAX_CONTACT_DATA_BYTES), its address and the payload's
 * fixed fields (SNAPSHOT_OVERHEAD_BYTES). Parameters: project, max data, bytes added, overhead,
 * addresses (JSON), project.
 */
const SNAPSHOT_OVERHEAD_BYTES = 300;
const CONTACT_SNAPSHOT_BOUND = `CASE WHEN EXISTS (SELECT 1 FROM webhook_endpoints w WHERE w.project_id = ? AND w.enabled = 1
      AND (w.events = '[]' OR EXISTS (SELECT 1 FROM json_each(w.events) WHERE value LIKE 'contact.%')))
    THEN 2 * (SELECT coalesce(sum(min(?, coalesce(length(CAST(c.data AS BLOB)), 2) + ?) + ? + length(CAST(a.value AS BLOB))), 0)
      FROM json_each(?) AS a LEFT JOIN contacts c ON c.project_id = ? AND c.email = a.value)
    ELSE 0 END`;

/**
 * The quota checks of a write batch as one statement that goes first in it:
 * an INSERT into quota_checks of (quota, used, limit) rows whose trigger
 * aborts the batch when one would be passed. Null when nothing is to be
 * checked. Run the batch with runGuarded for the API's error.
 */
export function quotaGuard(d1: D1Database, env: ConfigInput, projectId: string, use: QuotaUse, now = new Date()): D1PreparedStatement | null {
  const config = readConfig(env);
  const quotas: GuardedQuota[] = [];
  const params: unknown[] = [];
  const addresses = [...new Set(use.contacts ?? [])];
  if (addresses.length > 0) {
    quotas.push("QUOTA_CONTACTS");
    params.push(addresses.length, projectId, addresses.length, config.QUOTA_CONTACTS, projectId, JSON.stringify(addresses));
  }
  for (const [name, adding] of [
    ["QUOTA_EVENTS_PER_DAY", use.eventsToday ?? 0],
    ["QUOTA_EMAILS_PER_DAY", use.emailsToday ?? 0],
  ] as const) {
    if (adding <= 0) continue;
    quotas.push(name);
    params.push(projectId, utcDayNumber(now), adding, config[name]);
  }
  if (use.publicKey) {
    const fresh = [...new Set(use.publicKey.contacts)];
    const day = utcDayNumber(now);
    if (fresh.length > 0) {
      quotas.push("QUOTA_PUBLIC_CONTACTS_PER_DAY");
      params.push(fresh.length, projectId, day, fresh.length, config.QUOTA_PUBLIC_CONTACTS_PER_DAY, projectId, JSON.stringify(fresh));
    }
    if (use.publicKey.events > 0) {
      quotas.push("QUOTA_PUBLIC_EVENTS_PER_DAY");
      params.push(projectId, day, use.publicKey.events, config.QUOTA_PUBLIC_EVENTS_PER_DAY);
    }
  }
  if (use.storedBytesAtMost !== undefined && addresses.length > 0) {
    quotas.push("QUOTA_STORED_BYTES_WITH_SNAPSHOTS");
    params.push(
      projectId,
      use.storedBytesAtMost,
      projectId,
      MAX_CONTACT_DATA_BYTES,
      use.storedBytesAtMost,
      SNAPSHOT_OVERHEAD_BYTES,
      JSON.stringify(addresses),
      projectId,
    );
    params.push(config.QUOTA_STORED_BYTES);
  } else if (use.storedBytesAtMost !== undefined) {
    quotas.push("QUOTA_STORED_BYTES");
    params.push(projectId, use.storedBytesAtMost, config.QUOTA_STORED_BYTES);
  }
  if (use.r2Bytes !== undefined) {
    quotas.push("QUOTA_R2_STORED_BYTES");
    params.push(projectId, use.r2Bytes, config.QUOTA_R2_STORED_BYTES);
  }
  if (quotas.length === 0) return null;
  return d1.prepare(quotaGuardSql(quotas)).bind(...params);
}

type GuardedQuota = Exclude<QuotaName, "QUOTA_DOMAINS" | "QUOTA_SUPPRESSIONS" | CountedQuota> | "QUOTA_STORED_BYTES_WITH_SNAPSHOTS";

/** One (quota, used, limit) SELECT per quota, its parameters in quotaGuard's order. */
const QUOTA_ROWS: Record<GuardedQuota, string> = {
  // Existing contacts cost nothing; only when one would be created is the project's total read.
  QUOTA_CONTACTS: `SELECT 'QUOTA_CONTACTS', CASE WHEN existing.n < ? THEN coalesce((SELECT contacts FROM project_usage WHERE project_id = ?), 0) + ? - existing.n ELSE 0 END, ?
       FROM (SELECT count(*) AS n FROM contacts WHERE project_id = ? AND email IN (SELECT value FROM json_each(?))) AS existing`,
  QUOTA_EVENTS_PER_DAY: "SELECT 'QUOTA_EVENTS_PER_DAY', coalesce((SELECT events FROM project_daily_usage WHERE project_id = ? AND day = ?), 0) + ?, ?",
  QUOTA_EMAILS_PER_DAY: "SELECT 'QUOTA_EMAILS_PER_DAY', coalesce((SELECT emails FROM project_daily_usage WHERE project_id = ? AND day = ?), 0) + ?, ?",
  QUOTA_PUBLIC_CONTACTS_PER_DAY: `SELECT 'QUOTA_PUBLIC_CONTACTS_PER_DAY', CASE WHEN existing.n < ? THEN coalesce((SELECT public_contacts FROM project_daily_usage WHERE project_id = ? AND day = ?), 0) + ? - existing.n ELSE 0 END, ?
       FROM (SELECT count(*) AS n FROM contacts WHERE project_id = ? AND email IN (SELECT value FROM json_each(?))) AS existing`,
  QUOTA_PUBLIC_EVENTS_PER_DAY:
    "SELECT 'QUOTA_PUBLIC_EVENTS_PER_DAY', coalesce((SELECT public_events FROM project_daily_usage WHERE project_id = ? AND day = ?), 0) + ?, ?",
  QUOTA_STORED_BYTES: "SELECT 'QUOTA_STORED_BYTES', coalesce((SELECT stored_bytes FROM projects WHERE id = ?), 0) + ?, ?",
  // What the project keeps in R2 (projects.r2_stored_bytes, kept by the r2_usage triggers of 0027), apart from D1.
  QUOTA_R2_STORED_BYTES: "SELECT 'QUOTA_R2_STORED_BYTES', coalesce((SELECT r2_stored_bytes FROM projects WHERE id = ?), 0) + ?, ?",
  QUOTA_STORED_BYTES_WITH_SNAPSHOTS: `SELECT 'QUOTA_STORED_BYTES', coalesce((SELECT stored_bytes FROM projects WHERE id = ?), 0) + ? + ${CONTACT_SNAPSHOT_BOUND}, ?`,
};

/**
 * QUOTA_STORED_BYTES, as the LAST statement of a batch that stores bytes:
 * projects.stored_bytes is kept by D1 triggers (migration 0019) on every
 * insert, update and delete of what is counted, so after the batch's writes it
 * already holds what they add; past the quota the whole batch is rolled back.
 */
export function storedBytesGuard(d1: D1Database, env: ConfigInput, projectId: string): D1PreparedStatement {
  return d1.prepare(STORED_BYTES_GUARD_SQL).bind(projectId, readConfig(env).QUOTA_STORED_BYTES);
}
const STORED_BYTES_GUARD_SQL = "INSERT INTO quota_checks (quota, used, quota_limit) SELECT 'QUOTA_STORED_BYTES', stored_bytes, ?2 FROM projects WHERE id = ?1";

/**
 * QUOTA_R2_STORED_BYTES on its own, for a batch without a quotaGuard (a campaign page): what the
 * project keeps in R2 plus `adding` bytes; past the quota the whole batch is rolled back.
 */
export function r2StoredBytesGuard(d1: D1Database, env: ConfigInput, projectId: string, adding: number): D1PreparedStatement {
  return d1.prepare(R2_STORED_BYTES_GUARD_SQL).bind(projectId, adding, readConfig(env).QUOTA_R2_STORED_BYTES);
}
const R2_STORED_BYTES_GUARD_SQL =
  "INSERT INTO quota_checks (quota, used, quota_limit) SELECT 'QUOTA_R2_STORED_BYTES', r2_stored_bytes + ?2, ?3 FROM projects WHERE id = ?1";

/**
 * A count cap, as a statement before the insert it guards (same batch): the
 * rows there are (the project's templates, campaigns, segments; one
 * workflow's versions for QUOTA_WORKFLOW_VERSIONS, `owner` its id) plus the one added.
 */
export function countGuard(d1: D1Database, env: ConfigInput, quota: CountedQuota, owner: string): D1PreparedStatement {
  return d1.prepare(COUNT_GUARD_SQL[quota]).bind(owner, readConfig(env)[quota]);
}
const countGuardSql = (quota: CountedQuota, table: string, column: string) =>
  `INSERT INTO quota_checks (quota, used, quota_limit) SELECT '${quota}', count(*) + 1, ?2 FROM ${table} WHERE ${column} = ?1`;
const COUNT_GUARD_SQL: Record<CountedQuota, string> = {
  QUOTA_TEMPLATES: countGuardSql("QUOTA_TEMPLATES", "templates", "project_id"),
  QUOTA_CAMPAIGNS: countGuardSql("QUOTA_CAMPAIGNS", "campaigns", "project_id"),
  QUOTA_SEGMENTS: countGuardSql("QUOTA_SEGMENTS", "segments", "project_id"),
  QUOTA_WORKFLOW_VERSIONS: countGuardSql("QUOTA_WORKFLOW_VERSIONS", "workflow_versions", "workflow_id"),
  QUOTA_TOPICS: countGuardSql("QUOTA_TOPICS", "topics", "project_id"),
};

const quotaGuardSql = (quotas: readonly GuardedQuota[]) =>
  `INSERT INTO quota_checks (quota, used, quota_limit) ${quotas.map((q) => QUOTA_ROWS[q]).join(" UNION ALL ")}`;

/** The project's suppressions among these addresses (lower-case), the list bound as one JSON parameter; which mail each stops is consent/gates.ts's call. */
export function suppressionsOf(d1: D1Database, projectId: string, addresses: string[]): D1PreparedStatement {
  return d1.prepare(SUPPRESSIONS_OF_SQL).bind(projectId, JSON.stringify(addresses));
}
const SUPPRESSIONS_OF_SQL = "SELECT email, reason, stream FROM suppressions WHERE project_id = ?1 AND email IN (SELECT value FROM json_each(?2))";

/**
 * A write batch's first statement when it did not read the suppressions:
 * aborts the batch with SEND_HAS_SUPPRESSED_RECIPIENTS when any of these
 * addresses is suppressed for mail of `stream` (quota_checks, migration 0014;
 * for TRANSACTIONAL mail only entries of every stream count: gate 1 of consent/gates.ts).
 */
export function suppressionGuard(d1: D1Database, projectId: string, addresses: string[], stream: "TRANSACTIONAL" | "BROADCAST"): D1PreparedStatement {
  return d1.prepare(SUPPRESSION_GUARD_SQL).bind(projectId, JSON.stringify(addresses), stream);
}
const SUPPRESSION_GUARD_SQL = `INSERT INTO quota_checks (quota, used, quota_limit) SELECT 'SUPPRESSED_RECIPIENTS', count(*), 0
  FROM suppressions WHERE project_id = ?1 AND email IN (SELECT value FROM json_each(?2)) AND (stream = 'ALL' OR ?3 = 'BROADCAST')`;

/**
 * A write batch's last statement: whether the project's workflow outbox
 * holds rows (the triggers of migration 0006 write them when a contact or an
 * event of the batch starts a workflow), so the caller hands them over at once.
 */
export function outboxProbe(d1: D1Database, projectId: string): D1PreparedStatement {
  return probesWorkflowTriggers(d1.prepare(OUTBOX_PROBE_SQL).bind(projectId), projectId);
}
const OUTBOX_PROBE_SQL = "SELECT id FROM workflow_trigger_outbox WHERE project_id = ?1 LIMIT 1";

/** The message of `err` and of the errors in its `cause` chain (D1 wraps the SQLite error a RAISE produced). */
function messagesOf(err: unknown): string[] {
  const out: string[] = [];
  for (let e = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) out.push(e instanceof Error ? e.message : String(e));
  return out;
}

/** The guard whose RAISE aborted this batch, or null. */
export function raisedGuard(err: unknown): GuardName | null {
  const text = messagesOf(err).join("\n");
  for (const name of GUARD_NAMES) if (new RegExp(`\\b${name}\\b`).test(text)) return name;
  return null;
}

/** Whether a batch failed on the unique index of `table` (a concurrent duplicate). */
export const isUniqueViolation = (err: unknown, table: string) => messagesOf(err).some((m) => m.includes(`UNIQUE constraint failed: ${table}`));

/**
 * The API's error for a guard's abort, or null when `err` is not one (or is
 * the suppression guard's, which its caller handles): a quota as
 * quotaExceeded, the contact data cap as a 422 on `data`.
 */
export function guardError(err: unknown, env: ConfigInput | undefined, now = new Date()): ApiError | null {
  const name = raisedGuard(err);
  if (name === null) return null;
  if (name === "CONTACT_DATA_TOO_LARGE") {
    return ApiError.validation([
      {
        field: "data",
        message: `A contact's data may be at most ${MAX_CONTACT_DATA_BYTES} bytes as JSON (after merging with what is stored)`,
        code: "too_big",
      },
    ]);
  }
  // Not the client's error: the send that wrote nothing takes the reading path, which lists the suppressed.
  if (name === "SEND_HAS_SUPPRESSED_RECIPIENTS") return null;
  const quota = name.slice("QUOTA_EXCEEDED:".length);
  if (!(quota in WHAT)) return new ApiError("QUOTA_EXCEEDED", "This project has reached a quota");
  return quotaExceeded(quota as QuotaName, readConfig(env ?? {})[quota as QuotaName], now);
}

/** Runs a write batch that starts with guards, turning a guard's abort into the API's error. */
export async function runGuarded<T>(env: ConfigInput, run: () => Promise<T>, now = new Date()): Promise<T> {
  try {
    return await run();
  } catch (err) {
    throw guardError(err, env, now) ?? err;
  }
}

/** The module's fixed SQL, by name (test/store/statements.test.ts compiles each against the schema); quotaGuard with every quota. */
export const FIXED_SQL = {
  SUPPRESSIONS_OF_SQL,
  SUPPRESSION_GUARD_SQL,
  OUTBOX_PROBE_SQL,
  STORED_BYTES_GUARD_SQL,
  R2_STORED_BYTES_GUARD_SQL,
  ...Object.fromEntries(Object.entries(COUNT_GUARD_SQL).map(([quota, text]) => [`COUNT_GUARD_SQL_${quota}`, text])),
  QUOTA_GUARD_SQL: quotaGuardSql(["QUOTA_CONTACTS", "QUOTA_EVENTS_PER_DAY", "QUOTA_EMAILS_PER_DAY", "QUOTA_R2_STORED_BYTES"]),
  QUOTA_GUARD_PUBLIC_SQL: quotaGuardSql(["QUOTA_CONTACTS", "QUOTA_EVENTS_PER_DAY", "QUOTA_PUBLIC_CONTACTS_PER_DAY", "QUOTA_PUBLIC_EVENTS_PER_DAY"]),
  QUOTA_GUARD_SNAPSHOTS_SQL: quotaGuardSql(["QUOTA_CONTACTS", "QUOTA_STORED_BYTES_WITH_SNAPSHOTS"]),
};
