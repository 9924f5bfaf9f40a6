import { createRoute, z } from "@hono/zod-openapi";
import { getDb } from "../db/client";
import { createRouter } from "../lib/router";
import { commonErrors, jsonBody, jsonResponse, listEnvelope, securityScheme } from "../lib/openapi";
import { EmailAddressSchema, headerText, IdParamSchema } from "../lib/validators";
import { PaginationQuerySchema } from "../lib/pagination";
import {
  createTemplate,
  deleteTemplate,
  getTemplate,
  listTemplates,
  toTemplateView,
  updateTemplate,
} from "../services/templates";

export const MAX_TEMPLATE_NAME = 200;
/** RFC 5322's line length limit: the subject becomes a mail header. */
export const MAX_TEMPLATE_SUBJECT = 998;
export const MAX_TEMPLATE_FROM_NAME = 200;
export const MAX_TEMPLATE_BODY_BYTES = 512 * 1024;

/** Single-line, non-empty text that is safe to put in a mail header. */
const requiredHeaderText = (max: number) => headerText(max).min(1);

const TemplateTypeSchema = z.enum(["TRANSACTIONAL", "MARKETING"]).openapi({
  description: "MARKETING templates are only sent to subscribed contacts",
});

const TemplateSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    subject: z.string(),
    body: z.string().openapi({ description: "HTML" }),
    type: TemplateTypeSchema,
    from: z.string().email().nullable(),
    fromName: z.string().nullable(),
    replyTo: z.string().email().nullable(),
    createdAt: z.string().datetime(),
    updatedAt: z.string().datetime(),
  })
  .openapi("Template");

const templateFields = {
  name: requiredHeaderText(MAX_TEMPLATE_NAME).openapi({ example: "Welcome", description: `1-${MAX_TEMPLATE_NAME} characters` }),
  subject: requiredHeaderText(MAX_TEMPLATE_SUBJECT).openapi({
    example: "Welcome, {{firstName ?? friend}}",
    description: `1-${MAX_TEMPLATE_SUBJECT} characters, no line breaks; may use {{variables}}`,
  }),
  body: z
    .string()
    .min(1)
    .refine((value) => new TextEncoder().encode(value).length <= MAX_TEMPLATE_BODY_BYTES, {
      message: `Body may be at most ${MAX_TEMPLATE_BODY_BYTES / 1024} KB`,
    })
    .openapi({ example: "<p>Hello {{firstName}}</p>", description: "HTML, at most 512 KB; may use {{variables}}" }),
  type: TemplateTypeSchema,
  from: EmailAddressSchema.nullable()
    .optional()
    .openapi({
      type: ["string", "null"],
      description: "Default sender address for sends with this template (needs a verified domain when sending); null clears it",
    }),
  fromName: requiredHeaderText(MAX_TEMPLATE_FROM_NAME)
    .nullable()
    .optional()
    .openapi({ description: "Default sender display name, no line breaks; null clears it" }),
  replyTo: EmailAddressSchema.nullable()
    .optional()
    .openapi({ type: ["string", "null"], description: "Default reply-to address; null clears it" }),
};

const CreateTemplateSchema = z.object(templateFields).openapi("CreateTemplate");
const UpdateTemplateSchema = z
  .object({
    name: templateFields.name.optional(),
    subject: templateFields.subject.optional(),
    body: templateFields.body.optional(),
    type: templateFields.type.optional(),
    from: templateFields.from,
    fromName: templateFields.fromName,
    replyTo: templateFields.replyTo,
  })
  .openapi("UpdateTemplate");

const tags = ["Templates"];

const listRoute = createRoute({
  method: "get",
  path: "/templates",
  tags,
  summary: "List templates",
  description: "Newest first, cursor pagination: pass `nextCursor` as `cursor` for the next page; it is null on the last page.",
  security: securityScheme,
  request: { query: PaginationQuerySchema },
  responses: { 200: jsonResponse(listEnvelope(TemplateSchema), "A page of templates"), ...commonErrors },
});

const createTemplateRoute = createRoute({
  method: "post",
  path: "/templates",
  tags,
  summary: "Create a template",
  security: securityScheme,
  request: { body: jsonBody(CreateTemplateSchema) },
  responses: { 201: jsonResponse(TemplateSchema, "The new template"), ...commonErrors },
});

const getRoute = createRoute({
  method: "get",
  path: "/templates/{id}",
  tags,
  summary: "Get a template",
  security: securityScheme,
  request: { params: IdParamSchema },
  responses: { 200: jsonResponse(TemplateSchema, "The template"), ...commonErrors },
});

const updateRoute = createRoute({
  method: "patch",
  path: "/templates/{id}",
  tags,
  summary: "Update a template",
  description: "Only the fields given change; `from`, `fromName` and `replyTo` can be set to null to clear them. An empty object returns the template unchanged.",
  security: securityScheme,
  request: { params: IdParamSchema, body: jsonBody(UpdateTemplateSchema) },
  responses: { 200: jsonResponse(TemplateSchema, "The updated template"), ...commonErrors },
});

const deleteRoute = createRoute({
  method: "delete",
  path: "/templates/{id}",
  tags,
  summary: "Delete a template",
  security: securityScheme,
  request: { params: IdParamSchema },
  responses: { 204: { description: "Deleted" }, ...commonErrors },
});

export const templatesRouter = createRouter()
  .openapi(listRoute, async (c) => {
    const page = await listTemplates(getDb(c.env.DB), c.get("auth").projectId, c.req.valid("query"));
    return c.json(
      {
        success: true as const,
        data: { items: page.items.map(toTemplateView), nextCursor: page.nextCursor, hasMore: page.hasMore, total: page.total },
      },
      200,
    );
  })
  .openapi(createTemplateRoute, async (c) => {
    const template = await createTemplate(getDb(c.env.DB), c.get("auth").projectId, c.req.valid("json"));
    return c.json(toTemplateView(template), 201);
  })
  .openapi(getRoute, async (c) => {
    const template = await getTemplate(getDb(c.env.DB), c.get("auth").projectId, c.req.valid("param").id);
    return c.json(toTemplateView(template), 200);
  })
  .openapi(updateRoute, async (c) => {
    const { projectId } = c.get("auth");
    const template = await updateTemplate(getDb(c.env.DB), projectId, c.req.valid("param").id, c.req.valid("json"));
    return c.json(toTemplateView(template), 200);
  })
  .openapi(deleteRoute, async (c) => {
    await deleteTemplate(getDb(c.env.DB), c.get("auth").projectId, c.req.valid("param").id);
    return c.body(null, 204);
  });
