import * as z from "../lib/zod";
import { SUPPRESSION_REASONS, SUPPRESSION_STREAMS } from "../db/schema";
import { listEnvelope } from "../lib/openapi";
import { PaginationQuerySchema } from "../lib/pagination";
import { EmailAddressSchema } from "../lib/validators";

/** The suppression list (CONTRACT "Suppressions and streams"; src/services/consent/gates.ts). */

/** Most addresses one POST /suppressions takes. */
export const MAX_SUPPRESSIONS_PER_REQUEST = 1000;
export const MAX_SUPPRESSION_NOTE = 500;

export const SuppressionSchema = z
  .object({
    email: z.string().openapi({ description: "The address, lower case" }),
    reason: z.enum(SUPPRESSION_REASONS).openapi({
      description:
        "BOUNCE (a permanent bounce), COMPLAINT (marked as spam), MANUAL (POST /suppressions): every stream; UNSUBSCRIBE (the contact unsubscribed, by link, one-click, the API, an import or a workflow): broadcast mail only",
    }),
    stream: z
      .enum(SUPPRESSION_STREAMS)
      .openapi({ description: "Which mail the entry stops: ALL, or BROADCAST only (a password reset still reaches someone who unsubscribed)" }),
    note: z.string().nullable().openapi({ description: "The note it was added with; for a bounce or complaint, what the provider said" }),
    createdAt: z.string().datetime(),
  })
  .openapi("Suppression");

export const SuppressionListQuerySchema = PaginationQuerySchema.extend({
  reason: z
    .enum(SUPPRESSION_REASONS)
    .optional()
    .openapi({ param: { name: "reason", in: "query" }, description: "Only entries with this reason" }),
  email: z
    .string()
    .trim()
    .max(254)
    .optional()
    .openapi({ param: { name: "email", in: "query" }, description: "Only this address, or the addresses that start with it (case-insensitive)" }),
});

export const SuppressionListResponseSchema = listEnvelope(SuppressionSchema);

export const AddSuppressionsSchema = z
  .object({
    emails: z
      .array(EmailAddressSchema)
      .min(1)
      .max(MAX_SUPPRESSIONS_PER_REQUEST)
      .openapi({ description: `1 to ${MAX_SUPPRESSIONS_PER_REQUEST} addresses (repeats count once)` }),
    note: z
      .string()
      .trim()
      .max(MAX_SUPPRESSION_NOTE)
      .optional()
      .openapi({ description: `Why (at most ${MAX_SUPPRESSION_NOTE} characters), shown with each entry` }),
  })
  .openapi("AddSuppressions");

export const SuppressionsAddedSchema = z
  .object({ added: z.number().int().openapi({ description: "Addresses newly suppressed for every stream (already suppressed ones are left as they are)" }) })
  .openapi("SuppressionsAdded");

export const SuppressionEmailParamSchema = z.object({
  email: z
    .string()
    .min(1)
    .max(254)
    .openapi({ param: { name: "email", in: "path" }, example: "ada@example.com", description: "The address (URL-encoded; case-insensitive)" }),
});
