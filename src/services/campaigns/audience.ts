import { and, asc, eq, gt, inArray, lte, type SQL } from "drizzle-orm";
import { getDb, type Database } from "../../db/client";
import { campaigns, contacts, projects, type Campaign, type CampaignStatus } from "../../db/schema";
import { ApiError } from "../../lib/errors";
import { newId } from "../../lib/ids";
import type { Env } from "../../env";
import type { CampaignPageMessage } from "../../messages";
import { compileCondition, ConditionSchema, type Condition } from "../conditions";
import { audienceGates } from "../consent/gates";
import { campaignQuotaFit, nextUtcMidnight } from "../quotas";
import { renderEmails } from "../send/create-emails";
import { WriteBatch } from "../../store/batch";
import { recordCampaignSent } from "../../store/webhooks/events";
import type { AfterCommit } from "../../lib/after-commit";
import { advanceCursor, finishCampaign, queuedPageEmails, holdScheduledCampaign, projectNotPaused, startCampaign, touchCampaign } from "../../store/campaigns";
import { enqueueCampaignPage, enqueueMail } from "../../queues";

/** Contacts walked per audience page (one queue message). */
export const PAGE_SIZE = 500;
/**
 * A SENDING campaign whose walk has not moved for this long gets its next page queued again (a lost
 * message; a page takes seconds, and a page queued twice writes nothing twice). Short enough that a walk
 * killed mid-way resumes within about two minutes (docs/reliability.md).
 */
export const STALLED_WALK_MS = 90 * 1000;
/** Campaigns handled per cron tick and job (each costs a few statements). */
const CRON_LIMIT = 25;

export type { CampaignEmailMessage, CampaignPageMessage } from "../../messages";

/**
 * A campaign's audience (broadcast mail): the contacts the consent gates let through
 * (src/services/consent/gates.ts audienceGates: not suppressed, subscribed, the topic's) and
 * matching the condition (null: every contact). One condition of the page's one query.
 */
export function audienceWhere(projectId: string, condition: Condition | null, now: number, mail: { topicId?: string | null } = {}): SQL {
  return and(audienceGates(projectId, mail), condition ? compileCondition(condition, now) : undefined)!;
}

export function enqueueCampaignPageOf(env: Env, campaign: Pick<Campaign, "id" | "projectId">, after: string | null) {
  return enqueueCampaignPage(env, { campaignId: campaign.id, projectId: campaign.projectId, after });
}

/** A page's emails onto the bulk queue (throws: the page message is retried). */
function enqueueCampaignEmails(env: Env, campaign: Campaign, emailIds: string[]) {
  return enqueueMail(
    env,
    emailIds.map((emailId) => ({ emailId, projectId: campaign.projectId, bulk: true, campaignId: campaign.id })),
    { onFailure: "throw" },
  );
}

/**
 * One audience page: the next PAGE_SIZE contacts (by id, up to the id fixed
 * when sending started) that are in the audience now, rendered and inserted
 * as QUEUED emails together with the cursor's advance (one atomic batch), then
 * queued. A redelivered page inserts nothing twice (unique campaign+contact),
 * re-queues its still-QUEUED emails (claims make that harmless) and does not
 * queue the next page again, because its cursor advance no longer applies.
 */
export async function handleCampaignPage(env: Env, message: CampaignPageMessage, afterCommit: AfterCommit): Promise<void> {
  const db = getDb(env.DB);
  // A plain select: drizzle builds a relational query (findFirst) anew on every call.
  const [read] = await db
    .select({ campaign: campaigns, unsubscribeFooter: projects.unsubscribeFooter })
    .from(campaigns)
    .leftJoin(projects, eq(projects.id, campaigns.projectId))
    .where(and(eq(campaigns.id, message.campaignId), eq(campaigns.projectId, message.projectId)))
    .limit(1);
  const campaign = read?.campaign;
  // A paused campaign writes no page: the resume queues the walk's next page again (pause.ts).
  if (campaign?.status !== "SENDING" || !campaign.audienceUpperId || campaign.paused) return;
  const condition = campaign.sendCondition ? ConditionSchema.parse(campaign.sendCondition) : null;
  const startedAt = campaign.startedAt?.getTime() ?? Date.now();
  const page = await db
    .select({ id: contacts.id, email: contacts.email, data: contacts.data })
    .from(contacts)
    .where(
      and(
        audienceWhere(campaign.projectId, condition, startedAt, { topicId: campaign.topicId }),
        message.after ? gt(contacts.id, message.after) : undefined,
        lte(contacts.id, campaign.audienceUpperId),
      ),
    )
    .orderBy(asc(contacts.id))
    .limit(PAGE_SIZE);

  const last = page.length > 0 ? page[page.length - 1].id : message.after;
  const done = page.length < PAGE_SIZE;
  const now = Date.now();
  // The cursor advances only from where this page started: a redelivered page changes nothing here.
  const advance = advanceCursor(env.DB, campaign.id, message.after, last ?? null, done, now);
  // This page's emails still QUEUED (all of them the first time; the unsent ones on a redelivery).
  const queued = queuedPageEmails(env.DB, campaign.id, message.after, last ?? null);
  // No count quotas: the whole audience was checked when the campaign started (campaignQuotaFit).
  // Stored bytes are checked: past QUOTA_STORED_BYTES the page writes nothing and the walk waits
  // (the cron re-queues a stalled walk) until retention or deletes free space. Unique
  // campaign+contact: a redelivered page writes nothing twice.
  const emails = await renderEmails(
    env,
    {
      projectId: campaign.projectId,
      sendId: campaign.id,
      campaignId: campaign.id,
      from: campaign.from,
      fromName: campaign.fromName,
      replyTo: campaign.replyTo,
      senderDomain: campaign.from.split("@")[1],
      subject: campaign.subject,
      html: campaign.body,
      // Marketing mail: without {{unsubscribeUrl}} the body gets the project's footer (createEmails).
      unsubscribeFooter: read.unsubscribeFooter,
      marketing: true,
      bulk: true,
      topicId: campaign.topicId,
    },
    page.map((contact) => ({ to: contact.email, contactId: contact.id, data: contact.data ?? {} })),
    { quotas: false },
  );
  const batch = new WriteBatch(env.DB);
  emails.add(batch);
  const advancedPart = batch.add(advance);
  const queuedPart = batch.add(queued);
  const written = await batch.run({ env, now: emails.now, afterCommit }).catch((err: unknown) => {
    if (err instanceof ApiError && err.code === "QUOTA_EXCEEDED") {
      console.warn(`campaign ${campaign.id} paused: ${err.message}`);
      return null;
    }
    throw err;
  });
  if (!written) return;
  const advanced = written.rows(advancedPart).length > 0;
  const toSend = written.rows(queuedPart).map((r) => String(r.id));

  // The next page is queued with this page's emails, not after them: the queue then always holds a
  // full batch, and the walk stays one page ahead of the sends instead of waiting for them.
  await Promise.all([enqueueCampaignEmails(env, campaign, toSend), advanced && !done ? enqueueCampaignPageOf(env, campaign, last) : undefined]);
  if (advanced && done) await finalizeCampaigns(env.DB, [campaign.id], afterCommit);
}

/**
 * SENDING -> SENT once every page is written and no email of the campaign is
 * still QUEUED or SENDING (each is SENT or later, or FAILED). Idempotent.
 * Each campaign's campaign.sent leaves through `afterCommit` (the cron
 * re-queues it if that fails).
 */
export async function finalizeCampaigns(d1: D1Database, campaignIds: string[], afterCommit: AfterCommit): Promise<void> {
  if (campaignIds.length === 0) return;
  const now = new Date();
  const batch = new WriteBatch(d1);
  for (const id of campaignIds) batch.add(recordCampaignSent(d1, { id: newId(), campaignId: id, at: now }), finishCampaign(d1, id, now));
  await batch.run({ afterCommit });
}

/**
 * Moves a DRAFT or SCHEDULED campaign to SENDING (one conditional UPDATE, so
 * of two concurrent starts, by API or cron, exactly one wins) and queues the
 * first audience page. Returns the campaign, or undefined when another start won.
 */
export async function startSending(
  db: Database,
  env: Env,
  campaign: Campaign,
  condition: Condition | null,
  now = new Date(),
  fromStatus: CampaignStatus[] = ["DRAFT", "SCHEDULED"],
) {
  // The cron only starts a scheduled campaign that is due, and not while its project's sending is paused.
  const [started] = await startCampaign(db.$client, campaign.id, { fromStatus, condition, audienceUpperId: newId(), now });
  if (!started) return undefined;
  await enqueueCampaignPageOf(env, started, null);
  return started;
}

/**
 * Cron: starts each due SCHEDULED campaign exactly once (the conditional
 * UPDATE in startSending is the claim), re-queues the next page of a walk
 * whose message was lost, and finishes campaigns whose last emails ended
 * outside the bulk consumer (dead letters, the sweep).
 */
export async function runCampaignJobs(env: Env, now: Date, afterCommit: AfterCommit) {
  const db = getDb(env.DB);
  const due = await db
    .select()
    .from(campaigns)
    .where(and(eq(campaigns.status, "SCHEDULED"), lte(campaigns.scheduledAt, now), projectNotPaused(env.DB)))
    .orderBy(asc(campaigns.scheduledAt))
    .limit(CRON_LIMIT);
  let started = 0;
  for (const campaign of due) {
    try {
      const condition = await audienceOf(db, campaign);
      if (await heldByQuota(db, env, campaign, condition, now)) continue;
      if (await startSending(db, env, campaign, condition, now, ["SCHEDULED"])) started++;
    } catch (err) {
      console.error("starting scheduled campaign failed", campaign.id, err);
    }
  }
  const sending = await db.select().from(campaigns).where(eq(campaigns.status, "SENDING")).orderBy(asc(campaigns.updatedAt)).limit(CRON_LIMIT);
  const stalled = sending.filter((c) => !c.audienceDone && !c.paused && c.updatedAt.getTime() < now.getTime() - STALLED_WALK_MS);
  for (const campaign of stalled) await requeueNextPage(db, env, campaign, now);
  await finalizeCampaigns(
    env.DB,
    sending.filter((c) => c.audienceDone).map((c) => c.id),
    afterCommit,
  );
  return { started, resumed: stalled.length };
}

/**
 * A due campaign whose audience does not fit what is left of today's
 * emails-per-day quota is not started (never half sent): it is postponed to
 * the next 00:00 UTC (scheduledAt moves), or, if it is larger than a whole
 * day's quota, goes back to DRAFT. Returns whether it was held.
 */
async function heldByQuota(db: Database, env: Env, campaign: Campaign, condition: Condition | null, now: Date): Promise<boolean> {
  const quota = await campaignQuotaFit(
    db,
    env,
    campaign.projectId,
    audienceWhere(campaign.projectId, condition, now.getTime(), { topicId: campaign.topicId }),
    now,
  );
  if (quota.fit === "now") return false;
  console.error("scheduled campaign held by the emails-per-day quota", campaign.id, quota);
  await holdScheduledCampaign(db.$client, campaign.id, quota.fit === "later" ? nextUtcMidnight(now) : null, now);
  return true;
}

/** The audience condition of a scheduled campaign at start (a deleted segment: nobody, the campaign ends SENT with no recipients). */
async function audienceOf(db: Database, campaign: Campaign): Promise<Condition | null> {
  if (campaign.audienceType === "ALL") return null;
  if (campaign.audienceType === "FILTERED") return ConditionSchema.parse(campaign.audienceFilter);
  const segment = campaign.segmentId
    ? await db.query.segments.findFirst({ where: (s, { eq: e, and: a }) => a(e(s.id, campaign.segmentId!), e(s.projectId, campaign.projectId)) })
    : undefined;
  if (!segment) return { logic: "AND", groups: [{ filters: [{ field: "email", operator: "notExists" }] }] };
  return ConditionSchema.parse(segment.condition);
}

async function requeueNextPage(db: Database, env: Env, campaign: Campaign, now: Date) {
  await touchCampaign(db.$client, campaign.id, now);
  await enqueueCampaignPageOf(env, campaign, campaign.sendCursor);
}

/**
 * The stuck-mail sweep found queued emails of these campaigns whose messages were lost: the queue lost
 * what it held (a crash), so the walk's next page, queued with them, is likely lost too. Each campaign
 * still walking its audience gets its next page queued again now rather than after STALLED_WALK_MS (a
 * page queued twice writes nothing twice).
 */
export async function resumeWalks(env: Env, campaignIds: string[], now = new Date()): Promise<number> {
  if (campaignIds.length === 0) return 0;
  const db = getDb(env.DB);
  const walking = await db
    .select()
    .from(campaigns)
    .where(
      and(
        inArray(campaigns.id, campaignIds.slice(0, CRON_LIMIT)),
        eq(campaigns.status, "SENDING"),
        eq(campaigns.audienceDone, false),
        eq(campaigns.paused, false),
      ),
    );
  for (const campaign of walking) await requeueNextPage(db, env, campaign, now);
  return walking.length;
}
