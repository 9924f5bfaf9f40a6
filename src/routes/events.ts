import { createRoute } from "@hono/zod-openapi";
import { getDb } from "../db/client";
import { createRouter } from "../lib/router";
import { commonErrors, jsonResponse, securityScheme, success } from "../lib/openapi";
import { listEventNames, listEvents } from "../services/events";
import { EventListQuerySchema, EventListResponseSchema, EventNamesResponseSchema } from "../schemas/events";

const tags = ["Events"];

const listRoute = createRoute({
  method: "get",
  path: "/events",
  operationId: "listEvents",
  tags,
  summary: "List events",
  description:
    "Newest first, cursor pagination: pass `nextCursor` as `cursor` for the next page; it is null on the last page. Filter by exact event `name` and/or `contactId`. Covers the hot window: events of the last `EMAIL_HOT_DAYS` (default 90) days; older ones are archived (`GET /exports/events` streams a date range).",
  security: securityScheme,
  request: {
    query: EventListQuerySchema,
  },
  responses: { 200: jsonResponse(EventListResponseSchema, "A page of events"), ...commonErrors },
});

const namesRoute = createRoute({
  method: "get",
  path: "/events/names",
  operationId: "listEventNames",
  tags,
  summary: "List distinct event names",
  description:
    "Every distinct event name of the project, sorted by name, in one page; `counts` gives the number of events per name. Covers the hot window (`EMAIL_HOT_DAYS`, default 90 days): names and counts of archived events are not included.",
  security: securityScheme,
  responses: {
    200: jsonResponse(EventNamesResponseSchema, "The distinct event names"),
    ...commonErrors,
  },
});

export const eventsRouter = createRouter()
  .openapi(listRoute, async (c) => {
    const page = await listEvents(getDb(c.env.DB), c.get("auth").projectId, c.req.valid("query"));
    return c.json(success(page), 200);
  })
  .openapi(namesRoute, async (c) => {
    const { names, counts } = await listEventNames(getDb(c.env.DB), c.get("auth").projectId);
    return c.json(success({ items: names, nextCursor: null, hasMore: false as const, total: names.length, counts }), 200);
  });
