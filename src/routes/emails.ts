import { createRoute } from "@hono/zod-openapi";
import { getDb } from "../db/client";
import { commonErrors, jsonResponse, securityScheme, success } from "../lib/openapi";
import { IdParamSchema } from "../lib/validators";
import { createRouter } from "../lib/router";
import { getEmailOrArchived, listEmails, toEmailView } from "../services/emails/views";
import { sentHtml } from "../services/emails/sent-html";
import { EmailDetailSchema, EmailListQuerySchema, EmailListResponseSchema } from "../schemas/emails";

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
  summary: "Get an email, its delivery status and the HTML it was sent with",
  description:
    "`html` is the HTML as sent (variables filled, tracking applied), kept EMAIL_HTML_RETENTION_DAYS (default 30) after sending, then `null`; lists do not repeat it. Any email within its retention (`EMAIL_RETENTION_DAYS`, default 365 days) is found: one older than the hot window (`EMAIL_HOT_DAYS`, default 90) is read from its day archive in R2 and carries `archived: true`. 404 for an unknown id.",
  security: securityScheme,
  request: { params: IdParamSchema },
  responses: { 200: jsonResponse(EmailDetailSchema, "The email"), ...commonErrors },
});

export const emailsRouter = createRouter()
  .openapi(listRoute, async (c) => {
    const page = await listEmails(getDb(c.env.DB), c.get("auth").projectId, c.req.valid("query"));
    return c.json(success(page), 200);
  })
  .openapi(getRoute, async (c) => {
    const { email, archived } = await getEmailOrArchived(getDb(c.env.DB), c.env.STORAGE, c.get("auth").projectId, c.req.valid("param").id);
    return c.json({ ...toEmailView(email), html: await sentHtml(c.env.STORAGE, email, c.env), ...(archived ? { archived } : {}) }, 200);
  });
