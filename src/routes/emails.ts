import { createRoute } from "@hono/zod-openapi";
import { getDb } from "../db/client";
import { commonErrors, jsonResponse, securityScheme, success } from "../lib/openapi";
import { IdParamSchema } from "../lib/validators";
import { createRouter } from "../lib/router";
import { getEmail, listEmails, toEmailView } from "../services/emails/views";
import { EmailListQuerySchema, EmailListResponseSchema, EmailRecordSchema } from "../schemas/emails";

const tags = ["Emails"];

const listRoute = createRoute({
  method: "get",
  path: "/emails",
  operationId: "listEmails",
  tags,
  summary: "List emails",
  description: "Newest first, cursor pagination. Filter by `status`, `contactId` and `campaignId`.",
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
    const email = await getEmail(getDb(c.env.DB), c.get("auth").projectId, c.req.valid("param").id);
    return c.json(toEmailView(email), 200);
  });
