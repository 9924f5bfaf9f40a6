import { newId } from "../../lib/ids";
import { recordEmailWebhookEvents } from "../../store/webhooks/events";
import { sql } from "drizzle-orm";
import type { Database } from "../../db/client";
import { emails, projects } from "../../db/schema";
import type { AfterCommit } from "../../lib/after-commit";
import type { ConfigInput } from "../../lib/config";
import { WriteBatch } from "../../store/batch";
import { advanceStatusSql, updateEmail } from "../../store/emails";
import { insertEmailEvent } from "../../store/events";

export { advanceStatus, STATUS_RANK } from "../../store/emails";

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
  env?: ConfigInput,
  /** Where the webhook event (email.opened / email.clicked) leaves (the request's door). */
  afterCommit?: AfterCommit,
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
  // The webhook event goes after the UPDATE: only when it counted this engagement (set the last-engagement time to now).
  const webhook = recordEmailWebhookEvents(
    db.$client,
    [{ id: newId(), emailId, type: name, when: kind === "OPENED" ? "set:last_opened_at" : "set:last_clicked_at", extra: data }],
    now,
  );
  const batch = new WriteBatch(db.$client);
  batch.add(insertEmailEvent(db.$client, env, emailId, name, data, now, tracked));
  const updated = batch.add(updateEmail(db.$client, emailId, { ...counters, status: advanceStatusSql(kind, { from: "SENT" }), updatedAt: now }, tracked));
  batch.add(webhook);
  return (await batch.run({ afterCommit })).rows(updated).length > 0;
}
