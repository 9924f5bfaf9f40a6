import { createRoute } from "@hono/zod-openapi";
import { getDb } from "../db/client";
import { commonErrors, jsonBody, jsonResponse, securityScheme, success } from "../lib/openapi";
import { IdParamSchema } from "../lib/validators";
import { PaginationQuerySchema } from "../lib/pagination";
import { createRouter } from "../lib/router";
import { createSegment, deleteSegment, getSegment, listSegmentMembers, listSegments, updateSegment, viewOf } from "../services/segments";
import { SegmentSchema, CreateSegmentSchema, UpdateSegmentSchema, SegmentListResponseSchema, SegmentMemberListResponseSchema } from "../schemas/segments";

const tags = ["Segments"];

const listRoute = createRoute({
  method: "get",
  path: "/segments",
  operationId: "listSegments",
  tags,
  summary: "List segments",
  description: "Newest first, cursor pagination; each segment carries its live `memberCount`.",
  security: securityScheme,
  request: { query: PaginationQuerySchema },
  responses: { 200: jsonResponse(SegmentListResponseSchema, "A page of segments"), ...commonErrors },
});

const createSegmentRoute = createRoute({
  method: "post",
  path: "/segments",
  operationId: "createSegment",
  tags,
  summary: "Create a segment",
  description: "A bad condition is a 422 naming the bad part, e.g. `condition.groups.0.filters.1.operator`.",
  security: securityScheme,
  request: { body: jsonBody(CreateSegmentSchema) },
  responses: { 201: jsonResponse(SegmentSchema, "The new segment"), ...commonErrors },
});

const getRoute = createRoute({
  method: "get",
  path: "/segments/{id}",
  operationId: "getSegment",
  tags,
  summary: "Get a segment",
  security: securityScheme,
  request: { params: IdParamSchema },
  responses: { 200: jsonResponse(SegmentSchema, "The segment"), ...commonErrors },
});

const updateRoute = createRoute({
  method: "patch",
  path: "/segments/{id}",
  operationId: "updateSegment",
  tags,
  summary: "Update a segment",
  description: "Only the fields given change. A campaign already SENDING keeps the condition it started with.",
  security: securityScheme,
  request: { params: IdParamSchema, body: jsonBody(UpdateSegmentSchema) },
  responses: { 200: jsonResponse(SegmentSchema, "The updated segment"), ...commonErrors },
});

const deleteRoute = createRoute({
  method: "delete",
  path: "/segments/{id}",
  operationId: "deleteSegment",
  tags,
  summary: "Delete a segment",
  description: "400 INVALID_STATE while a DRAFT, SCHEDULED or SENDING campaign uses it.",
  security: securityScheme,
  request: { params: IdParamSchema },
  responses: { 204: { description: "Deleted" }, ...commonErrors },
});

const membersRoute = createRoute({
  method: "get",
  path: "/segments/{id}/contacts",
  operationId: "listSegmentContacts",
  tags,
  summary: "List a segment's members",
  description: "The contacts matching the segment now, subscribed or not; newest first, cursor pagination; `total` is the member count.",
  security: securityScheme,
  request: { params: IdParamSchema, query: PaginationQuerySchema },
  responses: { 200: jsonResponse(SegmentMemberListResponseSchema, "A page of members"), ...commonErrors },
});

export const segmentsRouter = createRouter()
  .openapi(listRoute, async (c) => {
    const page = await listSegments(getDb(c.env.DB), c.get("auth").projectId, c.req.valid("query"));
    return c.json(success(page), 200);
  })
  .openapi(createSegmentRoute, async (c) => {
    const db = getDb(c.env.DB);
    const segment = await createSegment(db, c.env, c.get("auth").projectId, c.req.valid("json"));
    return c.json(await viewOf(db, segment), 201);
  })
  .openapi(getRoute, async (c) => {
    const db = getDb(c.env.DB);
    return c.json(await viewOf(db, await getSegment(db, c.get("auth").projectId, c.req.valid("param").id)), 200);
  })
  .openapi(updateRoute, async (c) => {
    const db = getDb(c.env.DB);
    const segment = await updateSegment(db, c.get("auth").projectId, c.req.valid("param").id, c.req.valid("json"));
    return c.json(await viewOf(db, segment), 200);
  })
  .openapi(deleteRoute, async (c) => {
    await deleteSegment(getDb(c.env.DB), c.get("auth").projectId, c.req.valid("param").id);
    return c.body(null, 204);
  })
  .openapi(membersRoute, async (c) => {
    const page = await listSegmentMembers(getDb(c.env.DB), c.get("auth").projectId, c.req.valid("param").id, c.req.valid("query"));
    return c.json(success(page), 200);
  });
