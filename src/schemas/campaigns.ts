import { PaginationQuerySchema } from "../lib/pagination";
import * as z from "../lib/zod";
import { successEnvelope } from "../lib/openapi";
import { AUDIENCE_TYPES, CAMPAIGN_STATUSES } from "../db/schema";
import { EmailAddressSchema, headerText } from "../lib/validators";
import { ConditionSchema } from "./conditions";

export const MAX_CAMPAIGN_NAME = 200;
export const MAX_CAMPAIGN_DESCRIPTION = 1000;
export const MAX_CAMPAIGN_SUBJECT = 998;
export const MAX_CAMPAIGN_BODY_BYTES = 512 * 1024;

export const CampaignSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    subject: z.string(),
    body: z.string(),
    from: z.string(),
    fromName: z.string().nullable(),
    replyTo: z.string().nullable(),
    type: z.enum(AUDIENCE_TYPES).openapi({ description: "Repeats audienceType (the spec's sample calls it type)" }),
    audienceType: z.enum(AUDIENCE_TYPES),
    segmentId: z.string().nullable(),
    topicId: z
      .string()
      .nullable()
      .openapi({ description: "The topic the campaign is aimed at: only contacts OPT_IN for it (their choice, or the topic's default) get it" }),
    audienceFilter: z.union([ConditionSchema, z.null()]).openapi({ description: "The audience condition when audienceType is FILTERED, else null" }),
    status: z.enum(CAMPAIGN_STATUSES).openapi({
      description: "DRAFT -> SENDING -> SENT; DRAFT -> SCHEDULED -> SENDING (at scheduledAt, by the cron) -> SENT; SCHEDULED -> DRAFT by cancel",
    }),
    paused: z.boolean().openapi({ description: "A SENDING campaign paused with POST /campaigns/{id}/pause: none of its emails leaves until it is resumed" }),
    scheduledAt: z.string().datetime().nullable(),
    sentAt: z.string().datetime().nullable(),
    createdAt: z.string().datetime(),
    updatedAt: z.string().datetime(),
  })
  .openapi("Campaign");

export const StatsSchema = z
  .object({
    totalRecipients: z.number().int(),
    sentCount: z.number().int().openapi({ description: "Handed to the provider (every status from SENT on)" }),
    deliveredCount: z.number().int().openapi({ description: "Confirmed by provider feedback" }),
    openedCount: z.number().int(),
    clickedCount: z.number().int(),
    bouncedCount: z.number().int(),
    complainedCount: z.number().int(),
    unsubscribedCount: z.number().int(),
    failedCount: z.number().int(),
    repliedCount: z
      .number()
      .int()
      .openapi({ description: "Recipients who replied (received mail linked to their email); auto-replies and delivery reports never count" }),
    openRate: z.number(),
    clickRate: z.number(),
    bounceRate: z.number(),
    deliveryRate: z.number(),
    complaintRate: z.number(),
    unsubscribeRate: z.number(),
    replyRate: z.number(),
  })
  .openapi("CampaignStats", {
    description:
      "Counts are recipients (two opens by one person are one open); rates are percentages of sentCount, two decimals, 0 when nothing was sent; test emails never count",
  });

const body = z
  .string()
  .min(1)
  .refine((value) => new TextEncoder().encode(value).length <= MAX_CAMPAIGN_BODY_BYTES, { message: `Body may be at most ${MAX_CAMPAIGN_BODY_BYTES / 1024} KB` })
  .openapi({ description: "HTML with {{variables}}; an unsubscribe link is added at the end when the body has no {{unsubscribeUrl}}" });

const fields = {
  name: headerText(MAX_CAMPAIGN_NAME).min(1),
  description: z.string().trim().max(MAX_CAMPAIGN_DESCRIPTION).nullable().optional(),
  subject: headerText(MAX_CAMPAIGN_SUBJECT).min(1),
  body,
  from: EmailAddressSchema.openapi({ description: "On a VERIFIED domain of the project (403 DOMAIN_NOT_VERIFIED otherwise)" }),
  fromName: headerText(200).min(1).nullable().optional(),
  replyTo: EmailAddressSchema.nullable()
    .optional()
    .openapi({ type: ["string", "null"], description: "Reply-to address; null clears it" }),
  audienceType: z.enum(AUDIENCE_TYPES),
  segmentId: z.string().min(1).max(64).nullable().optional().openapi({ description: "Required when audienceType is SEGMENT" }),
  audienceFilter: ConditionSchema.nullable().optional().openapi({ description: "Required when audienceType is FILTERED" }),
  audienceCondition: ConditionSchema.nullable().optional().openapi({ description: "Alias of audienceFilter (Plunk's name)" }),
  topicId: z.string().min(1).max(64).nullable().optional().openapi({
    description:
      "Aim the campaign at a topic (a topic of this project, 422 otherwise): of the audience, only contacts OPT_IN for it get the mail (List-Id names the topic; its unsubscribe opts out of that topic only). null: no topic",
  }),
};

/** `audienceCondition` (Plunk's name) is accepted for `audienceFilter`. */
export const withAlias = <T extends { audienceFilter?: unknown; audienceCondition?: unknown }>(input: T) => {
  const { audienceCondition, ...rest } = input;
  return { ...rest, audienceFilter: rest.audienceFilter !== undefined ? rest.audienceFilter : audienceCondition };
};

export const CreateCampaignSchema = z
  .object({
    ...fields,
    from: fields.from.optional().openapi({
      description:
        "On a VERIFIED domain of the project (403 DOMAIN_NOT_VERIFIED otherwise). Left out: the project's default sender (`PATCH /project` defaultFrom), 422 naming `from` when it has none",
    }),
  })
  .strict()
  .openapi("CreateCampaign");
export const UpdateCampaignSchema = z
  .object({
    name: fields.name.optional(),
    description: fields.description,
    subject: fields.subject.optional(),
    body: fields.body.optional(),
    from: fields.from.optional(),
    fromName: fields.fromName,
    replyTo: fields.replyTo,
    audienceType: fields.audienceType.optional(),
    segmentId: fields.segmentId,
    audienceFilter: fields.audienceFilter,
    audienceCondition: fields.audienceCondition,
    topicId: fields.topicId,
  })
  .strict()
  .openapi("UpdateCampaign");

export const SendSchema = z
  .object({
    scheduledFor: z
      .string()
      .datetime({ offset: true, message: "scheduledFor must be an ISO 8601 date-time, e.g. 2030-01-01T09:00:00Z" })
      .nullable()
      .optional()
      .openapi({ description: "Future ISO 8601 date-time: SCHEDULED until then; omitted or null: send now" }),
  })
  .strict();

/** A campaign as the API shows it. */
export type CampaignView = z.infer<typeof CampaignSchema>;
/** A campaign's fields once `audienceCondition` (Plunk's name) has become `audienceFilter`. */
export type CampaignInput = Omit<z.infer<typeof CreateCampaignSchema>, "audienceCondition" | "from"> & { from: string };
/** A create request as validated: `from` may be left to the project's default sender. */
export type CreateCampaignInput = Omit<z.infer<typeof CreateCampaignSchema>, "audienceCondition">;
export const CampaignResponseSchema = successEnvelope(CampaignSchema);
export const CampaignStatsResponseSchema = successEnvelope(StatsSchema);

/** GET /campaigns pages by `page` (Plunk) or by `cursor`. */
export const CampaignListQuerySchema = PaginationQuerySchema.extend({
  page: z.coerce
    .number()
    .int()
    .min(1)
    .max(100000)
    .optional()
    .openapi({ param: { name: "page", in: "query" } }),
  status: z
    .enum(CAMPAIGN_STATUSES)
    .optional()
    .openapi({ param: { name: "status", in: "query" } }),
});

export const CampaignListResponseSchema = z.object({
  campaigns: z.array(CampaignSchema),
  page: z.number().int(),
  pageSize: z.number().int(),
  total: z.number().int(),
  totalPages: z.number().int(),
  hasMore: z.boolean(),
  nextCursor: z.string().nullable(),
});
