import { createRoute } from "@hono/zod-openapi";
import { getDb } from "../db/client";
import { createRouter } from "../lib/router";
import { commonErrors, jsonBody, jsonResponse, securityScheme, success } from "../lib/openapi";
import { IdParamSchema } from "../lib/validators";
import { PaginationQuerySchema } from "../lib/pagination";
import { createTemplate, deleteTemplate, getTemplate, listTemplates, toTemplateView, updateTemplate } from "../services/templates";
import { CreateTemplateSchema, TemplateListResponseSchema, TemplateSchema, UpdateTemplateSchema } from "../schemas/templates";

const tags = ["Templates"];

const listRoute = createRoute({
  method: "get",
  path: "/templates",
  operationId: "listTemplates",
  tags,
  summary: "List templates",
  description: "Newest first, cursor pagination: pass `nextCursor` as `cursor` for the next page; it is null on the last page.",
  security: securityScheme,
  request: { query: PaginationQuerySchema },
  responses: { 200: jsonResponse(TemplateListResponseSchema, "A page of templates"), ...commonErrors },
});

const createTemplateRoute = createRoute({
  method: "post",
  path: "/templates",
  operationId: "createTemplate",
  tags,
  summary: "Create a template",
  security: securityScheme,
  request: { body: jsonBody(CreateTemplateSchema) },
  responses: { 201: jsonResponse(TemplateSchema, "The new template"), ...commonErrors },
});

const getRoute = createRoute({
  method: "get",
  path: "/templates/{id}",
  operationId: "getTemplate",
  tags,
  summary: "Get a template",
  security: securityScheme,
  request: { params: IdParamSchema },
  responses: { 200: jsonResponse(TemplateSchema, "The template"), ...commonErrors },
});

const updateRoute = createRoute({
  method: "patch",
  path: "/templates/{id}",
  operationId: "updateTemplate",
  tags,
  summary: "Update a template",
  description:
    "Only the fields given change; `from`, `fromName` and `replyTo` can be set to null to clear them. An empty object returns the template unchanged.",
  security: securityScheme,
  request: { params: IdParamSchema, body: jsonBody(UpdateTemplateSchema) },
  responses: { 200: jsonResponse(TemplateSchema, "The updated template"), ...commonErrors },
});

const deleteRoute = createRoute({
  method: "delete",
  path: "/templates/{id}",
  operationId: "deleteTemplate",
  tags,
  summary: "Delete a template",
  description: "400 INVALID_STATE while it is the project's double opt-in confirmation (PATCH /project) and double opt-in is on.",
  security: securityScheme,
  request: { params: IdParamSchema },
  responses: { 204: { description: "Deleted" }, ...commonErrors },
});

export const templatesRouter = createRouter()
  .openapi(listRoute, async (c) => {
    const page = await listTemplates(getDb(c.env.DB), c.get("auth").projectId, c.req.valid("query"));
    return c.json(success({ items: page.items.map(toTemplateView), nextCursor: page.nextCursor, hasMore: page.hasMore, total: page.total }), 200);
  })
  .openapi(createTemplateRoute, async (c) => {
    const template = await createTemplate(getDb(c.env.DB), c.env, c.get("auth").projectId, c.req.valid("json"));
    return c.json(toTemplateView(template), 201);
  })
  .openapi(getRoute, async (c) => {
    const template = await getTemplate(getDb(c.env.DB), c.get("auth").projectId, c.req.valid("param").id);
    return c.json(toTemplateView(template), 200);
  })
  .openapi(updateRoute, async (c) => {
    const { projectId } = c.get("auth");
    const template = await updateTemplate(getDb(c.env.DB), c.env, projectId, c.req.valid("param").id, c.req.valid("json"));
    return c.json(toTemplateView(template), 200);
  })
  .openapi(deleteRoute, async (c) => {
    await deleteTemplate(getDb(c.env.DB), c.get("auth").projectId, c.req.valid("param").id);
    return c.body(null, 204);
  });
