import { and, eq } from "drizzle-orm";
import { getDb, type Database } from "../../db/client";
import { campaigns, type Campaign } from "../../db/schema";
import type { Env } from "../../env";
import { ApiError } from "../../lib/errors";
import type { CampaignResumeMessage } from "../../messages";
import { enqueueCampaignPage, enqueueCampaignResume, enqueueMail } from "../../queues";
import { queuedCampaignEmails, setCampaignPaused } from "../../store/campaigns";

/**
 * Pausing and resuming a SENDING campaign (CONTRACT "Tracking control and pausing").
 *
 * - Paused: the claim (store/emails.ts CLAIM_SQL) takes no email of the campaign, so none leaves;
 *   a message of one is acknowledged and the email stays QUEUED. The audience walk writes no page
 *   (audience.ts handleCampaignPage), and the cron does not re-queue a paused walk. The status stays
 *   SENDING (one of the spec's four), with `paused: true`.
 * - Resumed: `paused` is cleared, the walk's next page is queued again (if the walk was not done),
 *   and the campaign's emails still QUEUED are queued again, RESUME_PAGE at a time, each page one
 *   message on the bulk queue (handleCampaignResume). Each recipient gets the email once: an email
 *   is sent only by the claim that moves it from QUEUED to SENDING, so a message queued twice (the
 *   old one and the resume's) or redelivered sends nothing twice.
 */

/** Emails queued again per resume message. */
export const RESUME_PAGE = 500;

async function campaignOf(db: Database, projectId: string, id: string): Promise<Campaign> {
  const [campaign] = await db
    .select()
    .from(campaigns)
    .where(and(eq(campaigns.id, id), eq(campaigns.projectId, projectId)))
    .limit(1);
  if (!campaign) throw ApiError.notFound("Campaign");
  return campaign;
}

const conflict = (message: string, suggestion: string) => new ApiError("CONFLICT", message, { suggestion });

/** SENDING -> paused; 409 CONFLICT when the campaign is not SENDING or is paused already. */
export async function pauseCampaign(db: Database, projectId: string, id: string): Promise<Campaign> {
  const campaign = await campaignOf(db, projectId, id);
  const [paused] = await setCampaignPaused(db.$client, projectId, id, true, new Date());
  if (paused) return paused;
  if (campaign.paused) throw conflict("The campaign is paused already", "Resume it with POST /campaigns/{id}/resume.");
  throw conflict(`Only a SENDING campaign can be paused; this one is ${campaign.status}`, "A DRAFT or SCHEDULED campaign sends nothing until it is sent.");
}

/** Paused -> sending again; 409 CONFLICT when the campaign is not paused. */
export async function resumeCampaign(db: Database, env: Env, projectId: string, id: string): Promise<Campaign> {
  const campaign = await campaignOf(db, projectId, id);
  const [resumed] = await setCampaignPaused(db.$client, projectId, id, false, new Date());
  if (!resumed) {
    throw conflict(
      campaign.status === "SENDING" ? "The campaign is not paused" : `Only a paused SENDING campaign can be resumed; this one is ${campaign.status}`,
      "Pause a SENDING campaign with POST /campaigns/{id}/pause.",
    );
  }
  await Promise.all([
    enqueueCampaignResume(env, { campaignId: id, projectId, after: null }),
    resumed.audienceDone ? undefined : enqueueCampaignPage(env, { campaignId: id, projectId, after: resumed.sendCursor }),
  ]);
  return resumed;
}

/**
 * One resume message: the next RESUME_PAGE emails of the campaign still QUEUED (by id) onto the bulk
 * queue, and the next message after them. Paused again meanwhile, or finished: nothing.
 */
export async function handleCampaignResume(env: Env, message: CampaignResumeMessage): Promise<void> {
  const db = getDb(env.DB);
  const [campaign] = await db
    .select({ status: campaigns.status, paused: campaigns.paused })
    .from(campaigns)
    .where(and(eq(campaigns.id, message.campaignId), eq(campaigns.projectId, message.projectId)))
    .limit(1);
  if (campaign?.status !== "SENDING" || campaign.paused) return;
  const { results } = await queuedCampaignEmails(env.DB, message.campaignId, message.after, RESUME_PAGE).all<{ id: string; project_id: string }>();
  await enqueueMail(
    env,
    results.map((row) => ({ emailId: row.id, projectId: row.project_id, bulk: true, campaignId: message.campaignId })),
    { onFailure: "throw" },
  );
  if (results.length === RESUME_PAGE) await enqueueCampaignResume(env, { ...message, after: results[results.length - 1].id });
}
