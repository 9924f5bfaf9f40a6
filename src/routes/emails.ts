import { createRoute } from "@hono/zod-openapi";
import { getDb } from "../db/client";
import { commonErrors, jsonResponse, securityScheme, success } from "../lib/openapi";
import { IdParamSchema } from "../lib/validators";
import { createRouter } from "../lib/router";
import { getEmailOrArchived, listEmails, toEmailView } from "../services/emails/views";
import { EmailListQuerySchema, EmailListResponseSchema, EmailRecordSchema } from "../schemas/emails";

const tags = ["Emails"];

const listRoute = createRoute({
  method: "get",
  path: "/emails",
  operationId: "listEmails",
  tags,
  summary: "List emails",
  description:
    "Newest first, cursor pagination. Filter by `status`, `contactId` and `campaignId`. Covers the hot window: emails of the last `EMAIL_HOT_DAYS` (default 90) days; older ones are archived (read one with `GET /emails/{id}`, a date range with `GET /exports/emails`).",
  security: securityScheme,
  request: {
    query: EmailListQuerySchema,
  },
  responses: { 200: jsonResponse(EmailListResponseSchema, "A page of emails"), ...commonErrors },
});

const getRoute = createRoute({
  method: "get",
  path: "/emails/{id}",
  operationId: "getEmail",
  tags,
  summary: "Get an email and its delivery status",
  description:
    "Any email within its retention (`EMAIL_RETENTION_DAYS`, default 365 days) is found: one older than the hot window (`EMAIL_HOT_DAYS`, default 90) is read from its day archive in R2 and carries `archived: true`. 404 for an unknown id.",
  security: securityScheme,
  request: { params: IdParamSchema },
  responses: { 200: jsonResponse(EmailRecordSchema, "The email"), ...commonErrors },
});

export const emailsRouter = createRouter()
  .openapi(listRoute, async (c) => {
    const page = await listEmails(getDb(c.env.DB), c.get("auth").projectId, c.req.valid("query"));
    return c.json(success(page), 200);
  })
  .openapi(getRoute, async (c) => {
    const { email, archived } = await getEmailOrArchived(getDb(c.env.DB), c.env.STORAGE, c.get("auth").projectId, c.req.valid("param").id);
    return c.json(archived ? { ...toEmailView(email), archived } : toEmailView(email), 200);
  });
