import { createRoute, z } from "@hono/zod-openapi";
import { getDb } from "../db/client";
import { EMAIL_STATUSES } from "../db/schema";
import { commonErrors, jsonResponse, listEnvelope, securityScheme } from "../lib/openapi";
import { IdParamSchema } from "../lib/validators";
import { PaginationQuerySchema } from "../lib/pagination";
import { createRouter } from "../lib/router";
import { getEmail, listEmails, toEmailView } from "../services/emails/views";

const timestamp = z.string().datetime().nullable();

const EmailRecordSchema = z
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

const tags = ["Emails"];

const listRoute = createRoute({
  method: "get",
  path: "/emails",
  tags,
  summary: "List emails",
  description: "Newest first, cursor pagination. Filter by `status`, `contactId` and `campaignId`.",
  security: securityScheme,
  request: {
    query: PaginationQuerySchema.extend({
      status: z.enum(EMAIL_STATUSES).optional().openapi({ param: { name: "status", in: "query" } }),
      contactId: z.string().min(1).max(64).optional().openapi({ param: { name: "contactId", in: "query" } }),
      campaignId: z.string().min(1).max(64).optional().openapi({ param: { name: "campaignId", in: "query" }, description: "Only this campaign's emails (test sends are not linked to it)" }),
    }),
  },
  responses: { 200: jsonResponse(listEnvelope(EmailRecordSchema), "A page of emails"), ...commonErrors },
});

const getRoute = createRoute({
  method: "get",
  path: "/emails/{id}",
  tags,
  summary: "Get an email and its delivery status",
  security: securityScheme,
  request: { params: IdParamSchema },
  responses: { 200: jsonResponse(EmailRecordSchema, "The email"), ...commonErrors },
});

export const emailsRouter = createRouter()
  .openapi(listRoute, async (c) => {
    const page = await listEmails(getDb(c.env.DB), c.get("auth").projectId, c.req.valid("query"));
    return c.json({ success: true as const, data: page }, 200);
  })
  .openapi(getRoute, async (c) => {
    const email = await getEmail(getDb(c.env.DB), c.get("auth").projectId, c.req.valid("param").id);
    return c.json(toEmailView(email), 200);
  });
