import { createRoute } from "@hono/zod-openapi";
import { getDb } from "../db/client";
import { commonErrors, jsonBody, jsonResponse, securityScheme, success } from "../lib/openapi";
import { IdParamSchema } from "../lib/validators";
import { PaginationQuerySchema } from "../lib/pagination";
import { createRouter } from "../lib/router";
import {
  addMembers,
  createSegment,
  deleteSegment,
  getSegment,
  listSegmentMembers,
  listSegments,
  removeMembers,
  updateSegment,
  viewOf,
} from "../services/segments";
import {
  SegmentSchema,
  CreateSegmentSchema,
  UpdateSegmentSchema,
  SegmentListResponseSchema,
  SegmentMemberListResponseSchema,
  SegmentMembersRequestSchema,
  RemoveSegmentMembersRequestSchema,
  SegmentMembersAddedSchema,
  SegmentMembersRemovedSchema,
} from "../schemas/segments";

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
  description:
    "`type` DYNAMIC (the default): the contacts matching `condition`; a bad condition is a 422 naming the bad part, e.g. `condition.groups.0.filters.1.operator`. " +
    '`type` STATIC: a list with no condition, its members added and removed by email (POST/DELETE /segments/{id}/members). A filter `{field: "segment", operator: "equals", value: <static segment id>}` matches that list\'s members.',
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

const addMembersRoute = createRoute({
  method: "post",
  path: "/segments/{id}/members",
  operationId: "addSegmentMembers",
  tags,
  summary: "Add members to a static segment",
  description:
    "At most 500 addresses per call, in one batch. An address with no contact is listed in `missing` and not added, unless `createMissing` creates a subscribed contact for it (QUOTA_CONTACTS applies). An address already a member is left as it is. A DYNAMIC segment: 400 INVALID_STATE.",
  security: securityScheme,
  request: { params: IdParamSchema, body: jsonBody(SegmentMembersRequestSchema) },
  responses: { 200: jsonResponse(SegmentMembersAddedSchema, "How many became members, and the addresses with no contact"), ...commonErrors },
});

const removeMembersRoute = createRoute({
  method: "delete",
  path: "/segments/{id}/members",
  operationId: "removeSegmentMembers",
  tags,
  summary: "Remove members from a static segment",
  description: "At most 500 addresses per call; the contacts stay. Deleting a contact removes it from every segment. A DYNAMIC segment: 400 INVALID_STATE.",
  security: securityScheme,
  request: { params: IdParamSchema, body: jsonBody(RemoveSegmentMembersRequestSchema) },
  responses: { 200: jsonResponse(SegmentMembersRemovedSchema, "How many members were removed"), ...commonErrors },
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
  })
  .openapi(addMembersRoute, async (c) => {
    return c.json(await addMembers(getDb(c.env.DB), c.env, c.get("auth").projectId, c.req.valid("param").id, c.req.valid("json"), c.get("afterCommit")), 200);
  })
  .openapi(removeMembersRoute, async (c) => {
    return c.json(await removeMembers(getDb(c.env.DB), c.get("auth").projectId, c.req.valid("param").id, c.req.valid("json").emails), 200);
  });
