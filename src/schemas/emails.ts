import { z } from "@hono/zod-openapi";
import { EMAIL_STATUSES } from "../db/schema";

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
        "QUEUED -> SENDING -> SENT -> DELIVERED -> OPENED -> CLICKED; BOUNCED, COMPLAINED and FAILED are final outcomes",
    }),
    error: z.string().nullable().openapi({ description: "Why the email failed or was last retried" }),
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
  })
  .openapi("Email");
