import { and, count, desc, eq, gt, lt, sql, type SQL } from "drizzle-orm";
import { fromRow, type Database } from "../../db/client";
import { campaigns, contactTopics, contacts, emails, events, segments, topics, type Campaign, type CampaignStatus } from "../../db/schema";
import type { Env } from "../../env";
import type { ConfigInput } from "../../lib/config";
import { ApiError } from "../../lib/errors";
import { newId } from "../../lib/ids";
import { decodeCursor, encodeCursor } from "../../lib/pagination";
import { ConditionSchema, type Condition } from "../conditions";
import { contactFromRow, contactsByEmail, getContact } from "../contacts";
import { senderDomain } from "../domains";
import { createEmails } from "../send/create-emails";
import { assertTemplateSyntax } from "../send/render";
import { campaignQuotaError, campaignQuotaFit, writeWithinQuotas } from "../quotas";
import { findSuppressed } from "../suppressions";
import { describeRefusal, refusalOf } from "../consent/gates";
import { assertBroadcastAvailable } from "../../outside/providers";
import { defaultSenderOf, defaultSenderQuery } from "../project-settings";
import type { CampaignInput, CampaignView, CreateCampaignInput } from "../../schemas/campaigns";
import {
  type CampaignContent,
  cancelScheduledCampaign,
  deleteDraftCampaign,
  EDITABLE,
  insertCampaign,
  scheduleCampaign,
  updateCampaignContent,
} from "../../store/campaigns";
import { audienceWhere, startSending } from "./audience";
import { campaignRepliedCount } from "../../store/inbound";

const iso = (d: Date | null) => (d ? d.toISOString() : null);

export function toCampaignView(c: Campaign): CampaignView {
  return {
    id: c.id,
    name: c.name,
    description: c.description ?? null,
    subject: c.subject,
    body: c.body,
    from: c.from,
    fromName: c.fromName ?? null,
    replyTo: c.replyTo ?? null,
    type: c.audienceType,
    audienceType: c.audienceType,
    segmentId: c.segmentId ?? null,
    topicId: c.topicId ?? null,
    audienceFilter: (c.audienceFilter as Condition | null) ?? null,
    status: c.status,
    paused: c.paused,
    scheduledAt: iso(c.scheduledAt),
    sentAt: iso(c.sentAt),
    createdAt: c.createdAt.toISOString(),
    updatedAt: c.updatedAt.toISOString(),
  };
}

/** Checks what the body schema cannot: the sender's domain, the segment's project, the audience's completeness, template syntax. */
async function validateCampaign(db: Database, projectId: string, input: CampaignInput, changed: Partial<CampaignInput>) {
  const missing = [
    input.audienceType === "SEGMENT" &&
      !input.segmentId && { field: "segmentId", message: "segmentId is required when audienceType is SEGMENT", code: "required" },
    input.audienceType === "FILTERED" &&
      !input.audienceFilter && { field: "audienceFilter", message: "audienceFilter is required when audienceType is FILTERED", code: "required" },
  ].filter((e): e is { field: string; message: string; code: string } => Boolean(e));
  if (missing.length > 0) throw ApiError.validation(missing);
  if (changed.subject !== undefined) await assertTemplateSyntax(changed.subject, "subject");
  if (changed.body !== undefined) await assertTemplateSyntax(changed.body, "body");
  if (input.audienceType === "SEGMENT" && changed.segmentId !== undefined) {
    const segment = await db.query.segments.findFirst({ where: and(eq(segments.id, input.segmentId!), eq(segments.projectId, projectId)) });
    if (!segment) throw ApiError.validation([{ field: "segmentId", message: "No segment with this id in this project", code: "not_found" }]);
  }
  if (changed.topicId) {
    const topic = await db.query.topics.findFirst({ where: and(eq(topics.id, changed.topicId), eq(topics.projectId, projectId)) });
    if (!topic) throw ApiError.validation([{ field: "topicId", message: "No topic with this id in this project", code: "not_found" }]);
  }
  if (changed.from !== undefined) await senderDomain(db, projectId, input.from);
}

/** Only the audience fields of the chosen type are kept (a FILTERED campaign has no segmentId, and so on). */
const audienceColumns = (input: CampaignInput) => ({
  audienceType: input.audienceType,
  segmentId: input.audienceType === "SEGMENT" ? input.segmentId! : null,
  audienceFilter: input.audienceType === "FILTERED" ? input.audienceFilter! : null,
});

/** The columns a campaign's input sets (create, and PATCH once merged with the campaign as it is). */
const contentColumns = (input: CampaignInput): CampaignContent => ({
  name: input.name,
  description: input.description ?? null,
  subject: input.subject,
  body: input.body,
  from: input.from,
  fromName: input.fromName ?? null,
  replyTo: input.replyTo ?? null,
  topicId: input.topicId ?? null,
  ...audienceColumns(input),
});

/** Within QUOTA_CAMPAIGNS and QUOTA_STORED_BYTES (checked in the insert's batch). */
export async function createCampaign(db: Database, env: ConfigInput, projectId: string, request: CreateCampaignInput): Promise<Campaign> {
  const input = await withDefaultSender(db, projectId, request);
  await validateCampaign(db, projectId, input, input);
  const now = new Date();
  const insert = insertCampaign(db.$client, { id: newId(), projectId, ...contentColumns(input), status: "DRAFT", createdAt: now, updatedAt: now });
  const [rows] = await writeWithinQuotas(db, env, projectId, [insert], { quota: "QUOTA_CAMPAIGNS" });
  return fromRow(campaigns, rows[0]);
}

/** A campaign created without `from` takes the project's default sender (its name too, unless one is given); 422 without one. */
async function withDefaultSender(db: Database, projectId: string, request: CreateCampaignInput): Promise<CampaignInput> {
  if (request.from) return { ...request, from: request.from };
  const [row] = await defaultSenderQuery(db, projectId);
  const sender = defaultSenderOf(row);
  if (!sender) {
    throw ApiError.validation([
      { field: "from", message: "from is required (the project has no default sender: PATCH /project defaultFrom)", code: "required" },
    ]);
  }
  return { ...request, from: sender.email, fromName: request.fromName !== undefined ? request.fromName : (sender.name ?? null) };
}

export async function getCampaign(db: Database, projectId: string, id: string): Promise<Campaign> {
  const campaign = await db.query.campaigns.findFirst({ where: and(eq(campaigns.id, id), eq(campaigns.projectId, projectId)) });
  if (!campaign) throw ApiError.notFound("Campaign");
  return campaign;
}

export { EDITABLE };

export async function updateCampaign(db: Database, env: ConfigInput, projectId: string, id: string, changes: Partial<CampaignInput>): Promise<Campaign> {
  const current = await getCampaign(db, projectId, id);
  if (!EDITABLE.includes(current.status)) {
    throw ApiError.invalidState(`A ${current.status} campaign cannot be changed`, "Only DRAFT and SCHEDULED campaigns can be updated.");
  }
  const merged: CampaignInput = {
    name: changes.name ?? current.name,
    description: changes.description !== undefined ? changes.description : current.description,
    subject: changes.subject ?? current.subject,
    body: changes.body ?? current.body,
    from: changes.from ?? current.from,
    fromName: changes.fromName !== undefined ? changes.fromName : current.fromName,
    replyTo: changes.replyTo !== undefined ? changes.replyTo : current.replyTo,
    audienceType: changes.audienceType ?? current.audienceType,
    segmentId: changes.segmentId !== undefined ? changes.segmentId : current.segmentId,
    audienceFilter: changes.audienceFilter !== undefined ? changes.audienceFilter : (current.audienceFilter as Condition | null),
    topicId: changes.topicId !== undefined ? changes.topicId : current.topicId,
  };
  // A switch of audience type re-checks the segment it now needs.
  const segmentChanged = changes.segmentId !== undefined || (changes.audienceType === "SEGMENT" && current.audienceType !== "SEGMENT");
  await validateCampaign(db, projectId, merged, { ...changes, segmentId: segmentChanged ? merged.segmentId : undefined });
  // The state is checked again in the write: a send that started meanwhile wins.
  const update = updateCampaignContent(db.$client, projectId, id, contentColumns(merged), new Date());
  const [rows] = await writeWithinQuotas(db, env, projectId, [update]);
  if (!rows[0]) throw ApiError.invalidState("The campaign started sending while it was being updated");
  return fromRow(campaigns, rows[0]);
}

export async function deleteCampaign(db: Database, projectId: string, id: string): Promise<void> {
  const current = await getCampaign(db, projectId, id);
  if (current.status !== "DRAFT") {
    throw ApiError.invalidState(
      `A ${current.status} campaign cannot be deleted`,
      current.status === "SCHEDULED" ? "Cancel it first (POST /campaigns/{id}/cancel)." : undefined,
    );
  }
  const deleted = await deleteDraftCampaign(db.$client, projectId, id);
  if (deleted.length === 0) throw ApiError.invalidState("The campaign left DRAFT while it was being deleted");
}

/** The audience condition of a campaign now (a SEGMENT campaign reads its segment). */
async function resolveAudience(db: Database, campaign: Campaign): Promise<Condition | null> {
  if (campaign.audienceType === "ALL") return null;
  if (campaign.audienceType === "FILTERED") return ConditionSchema.parse(campaign.audienceFilter);
  const segment = campaign.segmentId
    ? await db.query.segments.findFirst({ where: and(eq(segments.id, campaign.segmentId), eq(segments.projectId, campaign.projectId)) })
    : undefined;
  if (!segment) throw ApiError.invalidState("The campaign's segment no longer exists", "Choose another audience with PATCH /campaigns/{id}.");
  return ConditionSchema.parse(segment.condition);
}

/**
 * The audience must not be empty, and must fit the emails-per-day quota: all
 * of it in what is left today when sending now, in one day when scheduled
 * (checked again when it starts; see runCampaignJobs).
 */
async function assertAudienceSendable(db: Database, env: Env, campaign: Campaign, condition: Condition | null, now: Date, scheduled: boolean) {
  const quota = await campaignQuotaFit(
    db,
    env,
    campaign.projectId,
    audienceWhere(campaign.projectId, condition, now.getTime(), { topicId: campaign.topicId }),
    now,
  );
  if (quota.fit === "never" || (!scheduled && quota.fit === "later")) throw campaignQuotaError(quota, now);
  if (quota.recipients === 0) {
    throw ApiError.invalidState(
      "The campaign's audience is empty: no subscribed, unsuppressed contact matches it",
      "Add contacts or choose another audience before sending.",
    );
  }
}

/** POST /campaigns/{id}/send: now (SENDING) or at `scheduledFor` (SCHEDULED). */
export async function sendCampaign(db: Database, env: Env, projectId: string, id: string, scheduledFor: Date | null): Promise<Campaign> {
  const campaign = await getCampaign(db, projectId, id);
  if (!EDITABLE.includes(campaign.status)) {
    throw ApiError.invalidState(`A ${campaign.status} campaign cannot be sent`, "Only DRAFT and SCHEDULED campaigns can be sent or scheduled.");
  }
  const now = new Date();
  if (scheduledFor && scheduledFor.getTime() <= now.getTime()) {
    throw ApiError.validation([{ field: "scheduledFor", message: "scheduledFor must be in the future", code: "too_small" }]);
  }
  await senderDomain(db, projectId, campaign.from);
  // Campaigns are broadcast mail: refused (409) where no provider carries it (Cloudflare Email Service alone).
  assertBroadcastAvailable(env);
  const condition = await resolveAudience(db, campaign);
  await assertAudienceSendable(db, env, campaign, condition, now, scheduledFor !== null);
  if (scheduledFor) {
    const [scheduled] = await scheduleCampaign(db.$client, id, scheduledFor, now);
    if (!scheduled) throw ApiError.invalidState("The campaign started sending meanwhile");
    return scheduled;
  }
  const started = await startSending(db, env, campaign, condition, now);
  if (!started) throw ApiError.invalidState("The campaign started sending meanwhile");
  return started;
}

export async function cancelCampaign(db: Database, projectId: string, id: string): Promise<Campaign> {
  const campaign = await getCampaign(db, projectId, id);
  const [cancelled] = await cancelScheduledCampaign(db.$client, id, new Date());
  if (!cancelled) {
    throw ApiError.invalidState(`Only a SCHEDULED campaign can be cancelled; this one is ${campaign.status}`);
  }
  return cancelled;
}

/**
 * POST /campaigns/{id}/test: one email to `address`, subject prefixed
 * "[TEST] ", rendered with the data of the contact `contactId` when given (a
 * contact of this project, else 404 before anything is sent), otherwise with
 * that address's contact's data when the address is a contact of the project.
 * Not linked to the campaign (never counted in its stats) and not tracked; it
 * travels with transactional mail, carrying the campaign's topic (List-Id, its unsubscribe).
 */
export async function sendTestEmail(
  db: Database,
  env: Env,
  projectId: string,
  id: string,
  address: string,
  requestUrl?: string,
  contactId?: string,
): Promise<string> {
  const campaign = await getCampaign(db, projectId, id);
  const sender = await senderDomain(db, projectId, campaign.from);
  assertBroadcastAvailable(env);
  const email = address.trim().toLowerCase();
  const [suppressed, [recipient], topic, [defaults]] = await Promise.all([
    findSuppressed(db, projectId, [email]),
    contactsByEmail(db.$client, projectId, [email])
      .all()
      .then((r) => r.results.map(contactFromRow)),
    campaign.topicId ? testTopic(db, campaign.topicId, email) : null,
    defaultSenderQuery(db, projectId),
  ]);
  // The four gates for the campaign's mail (broadcast). An address that is no contact of the project (the
  // sender's own inbox) meets only gate 1; a contact meets 3 and 4 as it would in the audience.
  const suppression = suppressed.get(email);
  const refusal = refusalOf({
    stream: "BROADCAST",
    suppression,
    subscribed: recipient ? recipient.subscribed : true,
    topic: recipient && campaign.topicId ? { topicId: campaign.topicId, defaultSubscription: topic?.defaultSubscription, choice: topic?.choice ?? null } : null,
  });
  if (refusal) {
    const why =
      refusal.gate === "SUPPRESSED" ? `${address} is on the suppression list (${suppression!.reason})` : `${address} is a contact the campaign would not reach`;
    throw new ApiError("INVALID_STATE", `${why}: ${describeRefusal(refusal)}`, {
      errors: [{ field: "email", code: refusal.gate, message: describeRefusal(refusal) }],
      suggestion:
        refusal.gate === "SUPPRESSED"
          ? "Send the test to another address, or remove it from the suppression list (DELETE /suppressions/{email})."
          : "Send the test to another address (one that is no contact, or a contact the campaign reaches), or render it with that contact's data (contactId).",
    });
  }
  const contact = contactId ? await getContact(db, projectId, contactId) : recipient;
  // A test send is an email like any other: it counts toward the daily and stored-bytes quotas.
  const queued = await createEmails(
    db.$client,
    env,
    {
      projectId,
      from: campaign.from,
      fromName: campaign.fromName,
      replyTo: campaign.replyTo,
      senderDomain: sender,
      subject: campaign.subject,
      subjectPrefix: "[TEST] ",
      html: campaign.body,
      unsubscribeFooter: defaults?.unsubscribeFooter,
      marketing: true,
      tracked: false,
      topicId: campaign.topicId ?? null,
    },
    [{ to: address, data: contact?.data ?? {} }],
    { requestUrl },
  );
  return queued.emails[0].id;
}

/** The campaign's topic's default and the address's contact's choice for it (a deleted topic: undefined default, nobody through). */
async function testTopic(db: Database, topicId: string, email: string) {
  const [row] = await db
    .select({ defaultSubscription: topics.defaultSubscription, choice: contactTopics.status })
    .from(topics)
    .leftJoin(contacts, and(eq(contacts.projectId, topics.projectId), eq(contacts.email, email)))
    .leftJoin(contactTopics, and(eq(contactTopics.topicId, topics.id), eq(contactTopics.contactId, contacts.id)))
    .where(eq(topics.id, topicId))
    .limit(1);
  return row ?? null;
}

const SENT_STATUSES = ["SENT", "DELIVERED", "OPENED", "CLICKED", "BOUNCED", "COMPLAINED"] as const;

const rate = (part: number, whole: number) => (whole > 0 ? Math.round((part / whole) * 10000) / 100 : 0);

/** Recipient counts of a campaign (one email per recipient, so rows are people) and rates as percentages of sentCount. */
export async function campaignStats(db: Database, projectId: string, id: string) {
  await getCampaign(db, projectId, id);
  const nonNull = (column: SQL) => sql<number>`coalesce(sum(${column} IS NOT NULL), 0)`;
  const [[row], [unsubscribed]] = await db.batch([
    db
      .select({
        totalRecipients: count(),
        sentCount: sql<number>`coalesce(sum(${emails.status} IN ${SENT_STATUSES}), 0)`,
        deliveredCount: nonNull(sql`${emails.deliveredAt}`),
        openedCount: nonNull(sql`${emails.openedAt}`),
        clickedCount: nonNull(sql`${emails.clickedAt}`),
        bouncedCount: nonNull(sql`${emails.bouncedAt}`),
        complainedCount: nonNull(sql`${emails.complainedAt}`),
        failedCount: sql<number>`coalesce(sum(${emails.status} = 'FAILED'), 0)`,
        // Recipients who replied (received mail linked to their email; auto-replies and delivery reports excluded).
        repliedCount: campaignRepliedCount(id),
      })
      .from(emails)
      .where(eq(emails.campaignId, id)),
    db
      .select({ n: sql<number>`count(DISTINCT ${events.contactId})` })
      .from(events)
      .where(and(eq(events.name, "contact.unsubscribed"), sql`${events.emailId} IN (SELECT id FROM emails WHERE campaign_id = ${id})`)),
  ]);
  const counts = { ...row, unsubscribedCount: unsubscribed?.n ?? 0 };
  return {
    ...counts,
    openRate: rate(counts.openedCount, counts.sentCount),
    clickRate: rate(counts.clickedCount, counts.sentCount),
    bounceRate: rate(counts.bouncedCount, counts.sentCount),
    deliveryRate: rate(counts.deliveredCount, counts.sentCount),
    complaintRate: rate(counts.complainedCount, counts.sentCount),
    unsubscribeRate: rate(counts.unsubscribedCount, counts.sentCount),
    replyRate: rate(counts.repliedCount, counts.sentCount),
  };
}

export interface ListCampaignsQuery {
  limit: number;
  page?: number;
  cursor?: string;
  status?: CampaignStatus;
}

/**
 * GET /campaigns: newest first. Pages by `cursor` (keyset on the UUIDv7 id,
 * stable while campaigns are added) or by `page` (offset); `page` in the answer
 * is the page number either way.
 */
export async function listCampaigns(db: Database, projectId: string, query: ListCampaignsQuery) {
  const where = and(eq(campaigns.projectId, projectId), query.status ? eq(campaigns.status, query.status) : undefined);
  const after = decodeCursor(query.cursor);
  const page = query.page ?? 1;
  const rowsQuery = db
    .select()
    .from(campaigns)
    .where(after ? and(where, lt(campaigns.id, after)) : where)
    .orderBy(desc(campaigns.id))
    .limit(query.limit + 1)
    .offset(after ? 0 : (page - 1) * query.limit);
  const [rows, [{ total }], [{ before }]] = await db.batch([
    rowsQuery,
    db.select({ total: count() }).from(campaigns).where(where),
    // With a cursor, the page number follows from how many rows come before it.
    db
      .select({ before: count() })
      .from(campaigns)
      .where(after ? and(where, gt(campaigns.id, after)) : sql`0`),
  ]);
  const hasMore = rows.length > query.limit;
  const items = rows.slice(0, query.limit);
  const pageNumber = after ? Math.floor((before + 1) / query.limit) + 1 : page;
  return {
    campaigns: items.map(toCampaignView),
    page: pageNumber,
    pageSize: query.limit,
    total,
    totalPages: Math.ceil(total / query.limit),
    hasMore,
    nextCursor: hasMore ? encodeCursor(items[items.length - 1].id) : null,
  };
}
