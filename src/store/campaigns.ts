import { and, eq, inArray, isNotNull, lt, notExists, sql } from "drizzle-orm";
import { getDb } from "../db/client";
import { campaigns, projects, type CampaignStatus } from "../db/schema";

/**
 * The writer of campaigns: their content (a DRAFT or SCHEDULED campaign may
 * change), the moves between statuses (each a conditional UPDATE, so of two
 * racing moves one wins), and the audience walk's cursor. Returned as
 * statements: await one, or add it to a WriteBatch (store/batch.ts).
 */

export type NewCampaign = typeof campaigns.$inferInsert;
/** What a DRAFT or SCHEDULED campaign's PATCH may change. */
export type CampaignContent = Pick<
  NewCampaign,
  "name" | "description" | "subject" | "body" | "from" | "fromName" | "replyTo" | "audienceType" | "segmentId" | "audienceFilter" | "topicId"
>;

/** Statuses in which a campaign's content may change, and from which it may be sent or scheduled. */
export const EDITABLE: CampaignStatus[] = ["DRAFT", "SCHEDULED"];

/** A new campaign; returns its row. */
export function insertCampaign(d1: D1Database, row: NewCampaign) {
  return getDb(d1).insert(campaigns).values(row).returning();
}

/** New content, only while the campaign is DRAFT or SCHEDULED (a send that started meanwhile wins); returns the row, none otherwise. */
export function updateCampaignContent(d1: D1Database, projectId: string, id: string, content: CampaignContent, now: Date) {
  return getDb(d1)
    .update(campaigns)
    .set({ ...content, updatedAt: now })
    .where(and(eq(campaigns.id, id), eq(campaigns.projectId, projectId), inArray(campaigns.status, EDITABLE)))
    .returning();
}

/** Deletes the campaign while it is a DRAFT; returns its id, none otherwise. */
export function deleteDraftCampaign(d1: D1Database, projectId: string, id: string) {
  return getDb(d1)
    .delete(campaigns)
    .where(and(eq(campaigns.id, id), eq(campaigns.projectId, projectId), eq(campaigns.status, "DRAFT")))
    .returning({ id: campaigns.id });
}

/** DRAFT or SCHEDULED -> SCHEDULED at `at`; returns the row, none when it started sending meanwhile. */
export function scheduleCampaign(d1: D1Database, id: string, at: Date, now: Date) {
  return getDb(d1)
    .update(campaigns)
    .set({ status: "SCHEDULED", scheduledAt: at, updatedAt: now })
    .where(and(eq(campaigns.id, id), inArray(campaigns.status, EDITABLE)))
    .returning();
}

/** SCHEDULED -> DRAFT; returns the row, none when it was not SCHEDULED. */
export function cancelScheduledCampaign(d1: D1Database, id: string, now: Date) {
  return getDb(d1)
    .update(campaigns)
    .set({ status: "DRAFT", scheduledAt: null, updatedAt: now })
    .where(and(eq(campaigns.id, id), eq(campaigns.status, "SCHEDULED")))
    .returning();
}

/**
 * The campaign's project is not paused by the reputation breaker: a due
 * campaign of a paused project stays SCHEDULED (nothing written) and starts on
 * the first tick after the resume, instead of writing emails the consumer
 * would only fail.
 */
export function projectNotPaused(d1: D1Database) {
  return notExists(
    getDb(d1)
      .select({ one: sql`1` })
      .from(projects)
      .where(and(eq(projects.id, campaigns.projectId), isNotNull(projects.sendingPausedAt))),
  );
}

/**
 * `fromStatus` -> SENDING, fixing the audience (its condition, and the upper
 * contact id `audienceUpperId`) and resetting the walk. One conditional UPDATE:
 * of two concurrent starts exactly one gets the row back. The cron's start
 * (`fromStatus` ["SCHEDULED"]) also needs the campaign due and its project not paused.
 */
export function startCampaign(d1: D1Database, id: string, start: { fromStatus: CampaignStatus[]; condition: unknown; audienceUpperId: string; now: Date }) {
  const { fromStatus, now } = start;
  const cronStart = fromStatus.length === 1 && fromStatus[0] === "SCHEDULED";
  return getDb(d1)
    .update(campaigns)
    .set({
      status: "SENDING",
      startedAt: now,
      sendCondition: start.condition,
      audienceUpperId: start.audienceUpperId,
      sendCursor: null,
      audienceDone: false,
      updatedAt: now,
    })
    .where(
      and(
        eq(campaigns.id, id),
        inArray(campaigns.status, fromStatus),
        cronStart ? and(lt(campaigns.scheduledAt, new Date(now.getTime() + 1)), projectNotPaused(d1)) : undefined,
      ),
    )
    .returning();
}

/**
 * The audience walk's cursor moves to `last` (`done`: every page written),
 * only from where the page started (`after`): a redelivered page changes
 * nothing. Returns `id` when it moved.
 */
export function advanceCursor(d1: D1Database, id: string, after: string | null, last: string | null, done: boolean, now: number): D1PreparedStatement {
  return d1.prepare(ADVANCE_SQL).bind(last, done ? 1 : 0, now, id, after);
}
const ADVANCE_SQL = `UPDATE campaigns SET send_cursor = ?1, audience_done = ?2, updated_at = ?3
  WHERE id = ?4 AND status = 'SENDING' AND send_cursor IS ?5 RETURNING id`;

/** The `id`s of a page's emails (contacts in (`after`, `last`]) still QUEUED: read in the page's batch, after its inserts. */
export function queuedPageEmails(d1: D1Database, campaignId: string, after: string | null, last: string | null): D1PreparedStatement {
  return d1.prepare(QUEUED_PAGE_SQL).bind(campaignId, after ?? "", last ?? "");
}
const QUEUED_PAGE_SQL = "SELECT id FROM emails WHERE campaign_id = ?1 AND contact_id > ?2 AND contact_id <= ?3 AND status = 'QUEUED'";

/** SENDING -> SENT once every page is written and no email of the campaign is QUEUED or SENDING any more. Idempotent. */
export function finishCampaign(d1: D1Database, id: string, now: Date) {
  return getDb(d1)
    .update(campaigns)
    .set({ status: "SENT", sentAt: now, updatedAt: now, paused: false })
    .where(
      and(
        eq(campaigns.id, id),
        eq(campaigns.status, "SENDING"),
        eq(campaigns.audienceDone, true),
        sql`NOT EXISTS (SELECT 1 FROM emails WHERE emails.campaign_id = ${id} AND emails.status IN ('QUEUED', 'SENDING'))`,
      ),
    );
}

/** A due campaign the day's quota cannot take: postponed to `until` (still SCHEDULED), or back to DRAFT when `until` is null. */
export function holdScheduledCampaign(d1: D1Database, id: string, until: Date | null, now: Date) {
  return getDb(d1)
    .update(campaigns)
    .set(until ? { scheduledAt: until, updatedAt: now } : { status: "DRAFT", scheduledAt: null, updatedAt: now })
    .where(and(eq(campaigns.id, id), eq(campaigns.status, "SCHEDULED")));
}

/** The walk moved (its next page was queued again): the stall clock restarts. */
export function touchCampaign(d1: D1Database, id: string, now: Date) {
  return getDb(d1).update(campaigns).set({ updatedAt: now }).where(eq(campaigns.id, id));
}

/**
 * Pauses (`paused` true) or resumes a SENDING campaign of the project; returns the row, none when it is
 * not SENDING or already in that state (one conditional UPDATE: of two racing calls one wins).
 */
export function setCampaignPaused(d1: D1Database, projectId: string, id: string, paused: boolean, now: Date) {
  return getDb(d1)
    .update(campaigns)
    .set({ paused, updatedAt: now })
    .where(and(eq(campaigns.id, id), eq(campaigns.projectId, projectId), eq(campaigns.status, "SENDING"), eq(campaigns.paused, !paused)))
    .returning();
}

/** The next `limit` emails of a campaign still QUEUED, by id after `after` (the resume's walk; emails_campaign_pending_idx). */
export function queuedCampaignEmails(d1: D1Database, campaignId: string, after: string | null, limit: number): D1PreparedStatement {
  return d1.prepare(QUEUED_CAMPAIGN_SQL).bind(campaignId, after ?? "", limit);
}
const QUEUED_CAMPAIGN_SQL = "SELECT id, project_id FROM emails WHERE campaign_id = ?1 AND status = 'QUEUED' AND id > ?2 ORDER BY id LIMIT ?3";

/** The module's fixed SQL, by name (test/store/statements.test.ts compiles each against the schema). */
export const FIXED_SQL = { ADVANCE_SQL, QUEUED_PAGE_SQL, QUEUED_CAMPAIGN_SQL };
