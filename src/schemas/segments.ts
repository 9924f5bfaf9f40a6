import * as z from "../lib/zod";
import { listEnvelope } from "../lib/openapi";
import { EmailAddressSchema, headerText } from "../lib/validators";
import { SEGMENT_TYPES } from "../db/schema";
import { ConditionSchema } from "./conditions";

export const MAX_SEGMENT_NAME = 200;
export const MAX_SEGMENT_DESCRIPTION = 1000;
/** Addresses per POST or DELETE /segments/{id}/members (Plunk's bound). */
export const MAX_MEMBER_EMAILS = 500;

export const SegmentSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    type: z.enum(SEGMENT_TYPES).openapi({ description: "DYNAMIC: the contacts matching `condition`; STATIC: a list, members added and removed by email" }),
    condition: z.union([ConditionSchema, z.null()]).openapi({ description: "The condition of a DYNAMIC segment; null for a STATIC one" }),
    memberCount: z.number().int().openapi({ description: "Live: every contact matching the condition (STATIC: every member), subscribed or not" }),
    createdAt: z.string().datetime(),
    updatedAt: z.string().datetime(),
  })
  .openapi("Segment");

export const MemberSchema = z.object({
  id: z.string(),
  email: z.string(),
  subscribed: z.boolean(),
  data: z.record(z.string(), z.unknown()),
  createdAt: z.string().datetime(),
  updatedAt: z.string().datetime(),
});

const fields = {
  name: headerText(MAX_SEGMENT_NAME).min(1).openapi({ example: "Pro users" }),
  description: z.string().trim().max(MAX_SEGMENT_DESCRIPTION).nullable().optional(),
  condition: ConditionSchema,
};
export const CreateSegmentSchema = z
  .object({
    name: fields.name,
    description: fields.description,
    type: z.enum(SEGMENT_TYPES).default("DYNAMIC").openapi({ description: "DYNAMIC (the default) needs a condition; STATIC takes none" }),
    condition: fields.condition.optional(),
  })
  .strict()
  .superRefine((input, ctx) => {
    if (input.type === "DYNAMIC" && !input.condition) ctx.addIssue({ code: "custom", path: ["condition"], message: "A DYNAMIC segment needs a condition" });
    if (input.type === "STATIC" && input.condition)
      ctx.addIssue({ code: "custom", path: ["condition"], message: "A STATIC segment takes no condition: add members with POST /segments/{id}/members" });
  })
  .openapi("CreateSegment");
export const UpdateSegmentSchema = z
  .object({ name: fields.name.optional(), description: fields.description, condition: fields.condition.optional() })
  .strict()
  .openapi("UpdateSegment");

/** A segment as the API shows it. */
export type SegmentView = z.infer<typeof SegmentSchema>;
export const SegmentListResponseSchema = listEnvelope(SegmentSchema);
export const SegmentMemberListResponseSchema = listEnvelope(MemberSchema);
export type CreateSegmentRequest = z.infer<typeof CreateSegmentSchema>;

export const SegmentMembersRequestSchema = z
  .object({
    emails: z
      .array(EmailAddressSchema)
      .min(1)
      .max(MAX_MEMBER_EMAILS)
      .openapi({ description: `At most ${MAX_MEMBER_EMAILS} addresses` }),
    createMissing: z.boolean().default(false).openapi({ description: "Create a (subscribed) contact for an address that has none, and add it" }),
  })
  .strict()
  .openapi("SegmentMembersRequest");
export type SegmentMembersRequest = z.infer<typeof SegmentMembersRequestSchema>;
export const RemoveSegmentMembersRequestSchema = z
  .object({
    emails: z
      .array(EmailAddressSchema)
      .min(1)
      .max(MAX_MEMBER_EMAILS)
      .openapi({ description: `At most ${MAX_MEMBER_EMAILS} addresses` }),
  })
  .strict()
  .openapi("RemoveSegmentMembersRequest");
export const SegmentMembersAddedSchema = z
  .object({
    added: z.number().int().openapi({ description: "Contacts that became members (an address already a member is not counted)" }),
    missing: z.array(z.string()).openapi({ description: "Addresses with no contact in the project, not added (empty with createMissing)" }),
  })
  .openapi("SegmentMembersAdded");
export const SegmentMembersRemovedSchema = z
  .object({ removed: z.number().int().openapi({ description: "Members removed (an address that was not a member is not counted)" }) })
  .openapi("SegmentMembersRemoved");
export type UpdateSegmentRequest = z.infer<typeof UpdateSegmentSchema>;
