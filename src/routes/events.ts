import { createRoute, z } from "@hono/zod-openapi";
import { getDb } from "../db/client";
import { createRouter } from "../lib/router";
import { commonErrors, jsonResponse, listEnvelope, securityScheme, successEnvelope } from "../lib/openapi";
import { PaginationQuerySchema } from "../lib/pagination";
import { listEventNames, listEvents } from "../services/events";
import { EventNameSchema, MAX_EVENT_NAME } from "./track-events";

const EventSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    contactId: z.string().nullable(),
    email: z.string().nullable().openapi({ description: "The contact's email" }),
    data: z.record(z.string(), z.unknown()),
    emailId: z.string().nullable().openapi({ description: "The email this event belongs to, for events recorded by sends" }),
    createdAt: z.string().datetime(),
  })
  .openapi("Event");

const tags = ["Events"];

const listRoute = createRoute({
  method: "get",
  path: "/events",
  tags,
  summary: "List events",
  description: "Newest first, cursor pagination: pass `nextCursor` as `cursor` for the next page; it is null on the last page. Filter by exact event `name` and/or `contactId`.",
  security: securityScheme,
  request: {
    query: PaginationQuerySchema.extend({
      name: EventNameSchema.optional().openapi({
        param: { name: "name", in: "query" },
        description: `Only events with exactly this name (trimmed, 1-${MAX_EVENT_NAME} characters)`,
      }),
      contactId: z
        .string()
        .min(1)
        .max(64)
        .optional()
        .openapi({ param: { name: "contactId", in: "query" }, description: "Only events of this contact" }),
    }),
  },
  responses: { 200: jsonResponse(listEnvelope(EventSchema), "A page of events"), ...commonErrors },
});

const namesRoute = createRoute({
  method: "get",
  path: "/events/names",
  tags,
  summary: "List distinct event names",
  description: "Every distinct event name of the project, sorted by name, in one page; `counts` gives the number of events per name.",
  security: securityScheme,
  responses: {
    200: jsonResponse(
      successEnvelope(
        z.object({
          items: z.array(z.string()),
          nextCursor: z.null(),
          hasMore: z.literal(false),
          total: z.number().int(),
          counts: z.record(z.string(), z.number().int()),
        }),
      ),
      "The distinct event names",
    ),
    ...commonErrors,
  },
});

export const eventsRouter = createRouter()
  .openapi(listRoute, async (c) => {
    const page = await listEvents(getDb(c.env.DB), c.get("auth").projectId, c.req.valid("query"));
    return c.json({ success: true as const, data: page }, 200);
  })
  .openapi(namesRoute, async (c) => {
    const { names, counts } = await listEventNames(getDb(c.env.DB), c.get("auth").projectId);
    return c.json(
      { success: true as const, data: { items: names, nextCursor: null, hasMore: false as const, total: names.length, counts } },
      200,
    );
  });
