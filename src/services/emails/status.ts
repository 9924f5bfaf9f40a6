import { and, eq, sql, type SQL } from "drizzle-orm";
import type { Database } from "../../db/client";
import { emails, events, projects, type EmailStatus, type JsonObject } from "../../db/schema";
import { newId } from "../../lib/ids";
import { eventsPerDay, underDailyEventQuota } from "../quotas";

/**
 * Email status bookkeeping. A status only moves forward:
 * QUEUED < SENDING < SENT < DELIVERED < OPENED < CLICKED, and the final
 * outcomes FAILED < BOUNCED < COMPLAINED rank above all of them, so a
 * complaint after an open still ends as COMPLAINED while a late delivery
 * report or open never undoes a bounce.
 */
export const STATUS_RANK: Record<EmailStatus, number> = {
  QUEUED: 0,
  SENDING: 1,
  SENT: 2,
  DELIVERED: 3,
  OPENED: 4,
  CLICKED: 5,
  FAILED: 6,
  BOUNCED: 7,
  COMPLAINED: 8,
};

/** The status after `next` happened to an email in status `current`. */
export const advanceStatus = (current: EmailStatus, next: EmailStatus): EmailStatus => (STATUS_RANK[current] < STATUS_RANK[next] ? next : current);

/** SQL expression: the rank of the emails.status column. */
export function statusRankSql(column: SQL | typeof emails.status = emails.status): SQL<number> {
  const cases = Object.entries(STATUS_RANK).map(([status, rank]) => sql`WHEN ${status} THEN ${sql.raw(String(rank))}`);
  return sql<number>`(CASE ${column} ${sql.join(cases, sql` `)} ELSE -1 END)`;
}

/**
 * SQL expression for `SET status = ...` in an UPDATE of emails: `next` when
 * it ranks above the current status, the current status otherwise. With
 * `from`, only a status ranked at least `from` moves (e.g. opens and clicks
 * leave QUEUED/SENDING alone, so the consumer's conditional
 * `WHERE status = 'SENDING'` write of SENT still applies).
 */
export function advanceStatusSql(next: EmailStatus, options: { from?: EmailStatus } = {}): SQL<EmailStatus> {
  const rank = statusRankSql();
  const moves =
    options.from === undefined
      ? sql`${rank} < ${sql.raw(String(STATUS_RANK[next]))}`
      : sql`${rank} < ${sql.raw(String(STATUS_RANK[next]))} AND ${rank} >= ${sql.raw(String(STATUS_RANK[options.from]))}`;
  return sql<EmailStatus>`(CASE WHEN ${moves} THEN ${next} ELSE ${emails.status} END)`;
}

export type Engagement = "OPENED" | "CLICKED";

/**
 * Opens and clicks of one email within this window of the last counted one
 * are not counted again: mail-privacy proxies and link scanners fetch the
 * pixel and every link several times within seconds, and a person reloading
 * the page is one engagement, not two.
 */
export const ENGAGEMENT_DEDUP_WINDOW_MS = 60_000;

/**
 * Records an open or a click in one atomic batch: the counter goes up, the
 * first-time timestamp is set once, the status advances (only from SENT or
 * later: an email still QUEUED/SENDING is the consumer's to move), and an
 * `email.opened` / `email.clicked` event (with `{url}` for clicks) is stored
 * for the email's contact. Nothing is recorded for a project with tracking
 * off, nor for a repeat within ENGAGEMENT_DEDUP_WINDOW_MS of the email's last
 * counted open (or click). Returns false when nothing was recorded (unknown
 * email, tracking off, a repeat). Past the project's events-per-day quota the
 * open or click is counted but its event is not stored.
 */
export async function recordEngagement(
  db: Database,
  emailId: string,
  kind: Engagement,
  details: { url?: string } = {},
  now = new Date(),
  eventQuota = eventsPerDay(undefined),
): Promise<boolean> {
  const name = kind === "OPENED" ? "email.opened" : "email.clicked";
  const data = kind === "CLICKED" && details.url !== undefined ? { url: details.url } : {};
  const counters =
    kind === "OPENED"
      ? { opens: sql`${emails.opens} + 1`, openedAt: sql`COALESCE(${emails.openedAt}, ${now.getTime()})`, lastOpenedAt: now }
      : { clicks: sql`${emails.clicks} + 1`, clickedAt: sql`COALESCE(${emails.clickedAt}, ${now.getTime()})`, lastClickedAt: now };
  const last = kind === "OPENED" ? emails.lastOpenedAt : emails.lastClickedAt;
  const windowStart = now.getTime() - ENGAGEMENT_DEDUP_WINDOW_MS;
  // The event is written first, while the email row still shows the previous
  // counted engagement; the UPDATE then moves it to now. Both check the same
  // condition, so a repeat inside the window records neither.
  // The project's tracking switch is part of both statements: one round trip, no separate lookup.
  const tracked = sql`EXISTS (SELECT 1 FROM ${projects} WHERE ${projects.id} = ${emails.projectId} AND ${projects.trackingEnabled} = 1) AND (${last} IS NULL OR ${last} <= ${windowStart})`;
  const [, updated] = await db.batch([
    buildEmailEventInsert(db, emailId, name, data, now, eventQuota, tracked),
    db
      .update(emails)
      .set({ ...counters, status: advanceStatusSql(kind, { from: "SENT" }), updatedAt: now })
      .where(and(eq(emails.id, emailId), tracked))
      .returning({ id: emails.id }),
  ]);
  return updated.length > 0;
}

/**
 * An event for the contact of an email, as one INSERT ... SELECT from the
 * email row (so it also works inside a batch, and inserts nothing for an
 * unknown email, nor past the project's events-per-day quota `eventQuota`).
 * `onlyIf` adds a condition, e.g. "not recorded before".
 */
export function buildEmailEventInsert(db: Database, emailId: string, name: string, data: JsonObject, now: Date, eventQuota: number, onlyIf?: SQL) {
  return db.insert(events).select(
    db
      .select({
        id: sql`${newId()}`.as("id"),
        projectId: emails.projectId,
        contactId: emails.contactId,
        name: sql`${name}`.as("name"),
        data: sql`${JSON.stringify(data)}`.as("data"),
        emailId: emails.id,
        createdAt: sql`${now.getTime()}`.as("created_at"),
      })
      .from(emails)
      .where(and(eq(emails.id, emailId), onlyIf, underDailyEventQuota(emails.projectId, eventQuota, now))),
  );
}
