import * as z from "../lib/zod";
import { EMAIL_STATUSES } from "../db/schema";
import { GATES, STREAMS } from "./consent";
import { listEnvelope } from "../lib/openapi";
import { PaginationQuerySchema } from "../lib/pagination";
import { idQuery } from "../lib/validators";

const timestamp = z.string().datetime().nullable();

export const EmailRecordSchema = z
  .object({
    id: z.string(),
    contactId: z.string().nullable(),
    templateId: z.string().nullable(),
    campaignId: z.string().nullable(),
    from: z.string(),
    fromName: z.string().nullable(),
    to: z.string(),
    replyTo: z.string().nullable(),
    subject: z.string(),
    status: z.enum(EMAIL_STATUSES).openapi({
      description:
        "QUEUED -> SENDING -> SENT -> DELIVERED -> OPENED -> CLICKED; BOUNCED, COMPLAINED and FAILED are final outcomes. FAILED with an `error` starting `Outcome unknown:` means the provider call got no answer (or its sender stopped after the call started): it is never sent again, and becomes SENT (then DELIVERED, BOUNCED, ...) if the provider's events show it took the message (docs/reliability.md).",
    }),
    stream: z.enum(STREAMS).openapi({
      description:
        'TRANSACTIONAL or BROADCAST (campaigns, topic mail, MARKETING templates, `/v1/send` with `stream: "broadcast"`): broadcast mail carries List-Unsubscribe, goes only to subscribed contacts and through the broadcast provider',
    }),
    error: z.string().nullable().openapi({
      description: "Why the email failed or was last retried (`Outcome unknown: ...`: see status; a consent gate's refusal starts with its name, see `gate`)",
    }),
    gate: z.enum(GATES).nullable().openapi({
      description:
        "The consent gate that refused the email (FAILED, not sent): SUPPRESSED (on the suppression list for its stream), UNSUBSCRIBED (the contact's marketing subscription), TOPIC (the topic's); null otherwise",
    }),
    messageId: z.string().openapi({ description: "Message-ID header (without angle brackets)" }),
    providerMessageId: z.string().nullable(),
    attempts: z.number().int(),
    opens: z.number().int(),
    clicks: z.number().int(),
    queuedAt: timestamp,
    sentAt: timestamp,
    deliveredAt: timestamp,
    openedAt: timestamp,
    clickedAt: timestamp,
    bouncedAt: timestamp,
    complainedAt: timestamp,
    failedAt: timestamp,
    createdAt: z.string().datetime(),
    updatedAt: z.string().datetime(),
    archived: z.boolean().optional().openapi({
      description:
        "Present (true) only when the email is older than the hot window (`EMAIL_HOT_DAYS`, default 90 days) and was read from its day archive in R2: a snapshot as it was when archived (its `contactId` may name a contact deleted since; later opens and clicks are not counted). Lists never show archived emails; `GET /exports/emails` streams them.",
    }),
  })
  .openapi("Email");

/** What GET /emails shows of an email record (the rendered body is not repeated in lists). */
export type EmailView = z.infer<typeof EmailRecordSchema>;

/** GET /emails/{id}: the record and the HTML it was sent with, while that is kept. */
export const EmailDetailSchema = EmailRecordSchema.extend({
  html: z.string().nullable().openapi({
    description:
      "The HTML as sent: variables filled, open and click tracking applied (before sending: as it will be sent, without tracking; mail that failed keeps the HTML it would have been sent with). Kept EMAIL_HTML_RETENTION_DAYS (default 30) after sending, then `null`. Lists do not repeat it.",
  }),
}).openapi("EmailDetail");
export type EmailDetailView = z.infer<typeof EmailDetailSchema>;

export const EmailListQuerySchema = PaginationQuerySchema.extend({
  status: z
    .enum(EMAIL_STATUSES)
    .optional()
    .openapi({ param: { name: "status", in: "query" } }),
  contactId: idQuery("contactId"),
  campaignId: idQuery("campaignId", "Only this campaign's emails (test sends are not linked to it)"),
});
export type EmailListQuery = z.infer<typeof EmailListQuerySchema>;

export const EmailListResponseSchema = listEnvelope(EmailRecordSchema);
