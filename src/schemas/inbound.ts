import * as z from "../lib/zod";
import { INBOUND_MATCHES, INBOUND_STATUSES } from "../db/inbound-schema";
import { listEnvelope } from "../lib/openapi";
import { PaginationQuerySchema } from "../lib/pagination";
import { idQuery } from "../lib/validators";

/** Received mail (CONTRACT "Inbound email"; src/services/inbound/). */

export const InboundAttachmentSchema = z
  .object({
    filename: z.string().nullable().openapi({ description: "As the message names it; null when it names none" }),
    contentType: z.string().openapi({ example: "application/pdf" }),
    size: z.number().int().openapi({ description: "Decoded bytes" }),
  })
  .openapi("InboundAttachment");

export const InboundMessageSchema = z
  .object({
    id: z.string(),
    emailId: z.string().nullable().openapi({ description: "The email this message answers (see match); null when it answers none we know" }),
    contactId: z
      .string()
      .nullable()
      .openapi({ description: "The answered email's contact, else the project's contact with the From address; receiving mail never creates a contact" }),
    from: z.string().nullable().openapi({ description: "The From header's address (lower case); null until parsed", example: "ada@example.com" }),
    fromName: z.string().nullable().openapi({ description: "The From header's display name" }),
    to: z.string().openapi({ description: "The address it was delivered to (envelope recipient)", example: "r+0190f0a4...@in.example.net" }),
    subject: z.string().nullable(),
    match: z.enum(INBOUND_MATCHES).openapi({
      description:
        "How it was linked to emailId: TOKEN (sent to the email's signed reply address), HEADERS (In-Reply-To or References names one of this project's emails), NONE",
    }),
    autoReply: z.boolean().openapi({
      description:
        "An auto-reply, out-of-office or delivery report (Auto-Submitted, Precedence, X-Autoreply, an empty envelope sender, multipart/report): never counted as a reply and records no event",
    }),
    size: z.number().int().openapi({ description: "Bytes of the raw message" }),
    strippedText: z.string().nullable().openapi({ description: "The reply without quoted history and signature (at most 16 KB); null until parsed" }),
    status: z.enum(INBOUND_STATUSES).openapi({ description: "RECEIVED (stored, not parsed yet), PARSED, FAILED (see error; the raw message stays)" }),
    error: z.string().nullable(),
    createdAt: z.string().datetime(),
  })
  .openapi("InboundMessage");
export type InboundMessageView = z.infer<typeof InboundMessageSchema>;

export const InboundMessageDetailSchema = InboundMessageSchema.extend({
  text: z.string().nullable().openapi({ description: "The text body (at most 64 KB; from the HTML when there is no text part)" }),
  messageId: z.string().nullable().openapi({ description: "The Message-ID header, with its angle brackets" }),
  inReplyTo: z.string().nullable(),
  references: z.array(z.string()).openapi({ description: "The References header's ids (the last 100)" }),
  attachments: z.array(InboundAttachmentSchema).openapi({ description: "Metadata only; GET /inbound/{id}/attachments/{n} downloads one" }),
}).openapi("InboundMessageDetail");
export type InboundMessageDetailView = z.infer<typeof InboundMessageDetailSchema>;

export const InboundListQuerySchema = PaginationQuerySchema.extend({
  emailId: idQuery("emailId", "Only replies to this email"),
  contactId: idQuery("contactId", "Only this contact's messages"),
  campaignId: idQuery("campaignId", "Only replies to this campaign's emails"),
});
export type InboundListQuery = z.infer<typeof InboundListQuerySchema>;

export const RepliesQuerySchema = PaginationQuerySchema;

export const InboundListResponseSchema = listEnvelope(InboundMessageSchema);

export const AttachmentParamSchema = z.object({
  id: z
    .string()
    .min(1)
    .max(64)
    .openapi({ param: { name: "id", in: "path" } }),
  n: z.coerce
    .number()
    .int()
    .min(0)
    .max(1000)
    .openapi({ param: { name: "n", in: "path" }, description: "The attachment's position in `attachments`, from 0" }),
});
