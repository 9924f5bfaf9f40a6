import * as z from "../lib/zod";
import { listEnvelope } from "../lib/openapi";
import { headerText } from "../lib/validators";
import { ConditionSchema } from "./conditions";

export const MAX_SEGMENT_NAME = 200;
export const MAX_SEGMENT_DESCRIPTION = 1000;

export const SegmentSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    condition: ConditionSchema,
    memberCount: z.number().int().openapi({ description: "Live: every contact matching the condition, subscribed or not" }),
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
export const CreateSegmentSchema = z.object(fields).strict().openapi("CreateSegment");
export const UpdateSegmentSchema = z
  .object({ name: fields.name.optional(), description: fields.description, condition: fields.condition.optional() })
  .strict()
  .openapi("UpdateSegment");

/** A segment as the API shows it. */
export type SegmentView = z.infer<typeof SegmentSchema>;
export const SegmentListResponseSchema = listEnvelope(SegmentSchema);
export const SegmentMemberListResponseSchema = listEnvelope(MemberSchema);
export type CreateSegmentRequest = z.infer<typeof CreateSegmentSchema>;
export type UpdateSegmentRequest = z.infer<typeof UpdateSegmentSchema>;
