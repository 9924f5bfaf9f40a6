import { createRoute } from "@hono/zod-openapi";
import { getDb } from "../db/client";
import { createRouter } from "../lib/router";
import { commonErrors, jsonBody, jsonResponse, securityScheme, success } from "../lib/openapi";
import { addSuppressions, listSuppressions, removeSuppression } from "../services/suppressions";
import {
  AddSuppressionsSchema,
  SuppressionEmailParamSchema,
  SuppressionListQuerySchema,
  SuppressionListResponseSchema,
  SuppressionsAddedSchema,
} from "../schemas/suppressions";

const tags = ["Suppressions"];

const listRoute = createRoute({
  method: "get",
  path: "/suppressions",
  operationId: "listSuppressions",
  tags,
  summary: "List the suppression list",
  description: [
    "The project's suppression list, newest first, cursor pagination (`nextCursor` as `cursor`); filter by `reason` and by `email` (the address or its beginning).",
    "A suppressed address gets no mail of the streams its entry stops, on any path (`/v1/send`, campaigns, workflows, test sends): BOUNCE, COMPLAINT and MANUAL entries stop every stream, UNSUBSCRIBE entries broadcast mail only.",
    "Entries are kept until removed (`DELETE /suppressions/{email}`) or the project is deleted; unsubscribes leave the list when the contact subscribes again.",
  ].join(" "),
  security: securityScheme,
  request: { query: SuppressionListQuerySchema },
  responses: { 200: jsonResponse(SuppressionListResponseSchema, "A page of the list"), ...commonErrors },
});

const addRoute = createRoute({
  method: "post",
  path: "/suppressions",
  operationId: "addSuppressions",
  tags,
  summary: "Suppress addresses",
  description:
    "Adds MANUAL entries (every stream) for up to 1000 addresses in one batch, with an optional `note`. An address already suppressed for every stream keeps its entry; an UNSUBSCRIBE entry becomes MANUAL. Each added address fires `suppression.created` (webhook, and an event on its contact). `QUOTA_SUPPRESSIONS` (default 1,000,000 entries per project): past it nothing is added, 403 QUOTA_EXCEEDED.",
  security: securityScheme,
  request: { body: jsonBody(AddSuppressionsSchema) },
  responses: { 200: jsonResponse(SuppressionsAddedSchema, "How many addresses were added"), ...commonErrors },
});

const deleteRoute = createRoute({
  method: "delete",
  path: "/suppressions/{email}",
  operationId: "deleteSuppression",
  tags,
  summary: "Remove an address from the list",
  description:
    "Removes the entry whatever its reason (`suppression.deleted` fires); 404 when the address is not on the list. Removing an entry does not subscribe a contact again: broadcast mail still needs its marketing subscription.",
  security: securityScheme,
  request: { params: SuppressionEmailParamSchema },
  responses: { 204: { description: "Removed" }, ...commonErrors },
});

export const suppressionsRouter = createRouter()
  .openapi(listRoute, async (c) => {
    const page = await listSuppressions(getDb(c.env.DB), c.get("auth").projectId, c.req.valid("query"));
    return c.json(success(page), 200);
  })
  .openapi(addRoute, async (c) => {
    return c.json(await addSuppressions(getDb(c.env.DB), c.env, c.get("auth").projectId, c.req.valid("json"), c.get("afterCommit")), 200);
  })
  .openapi(deleteRoute, async (c) => {
    await removeSuppression(getDb(c.env.DB), c.env, c.get("auth").projectId, c.req.valid("param").email, c.get("afterCommit"));
    return c.body(null, 204);
  });
