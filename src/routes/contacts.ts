import { createRoute } from "@hono/zod-openapi";
import { getDb } from "../db/client";
import { createRouter } from "../lib/router";
import { commonErrors, jsonBody, jsonResponse, securityScheme } from "../lib/openapi";
import { IdParamSchema } from "../lib/validators";
import { deleteContact, getContact, listContacts, toContactView, updateContact, upsertContact } from "../services/contacts";
import {
  ContactListQuerySchema,
  ContactListResponseSchema,
  ContactSchema,
  UpdateContactRequestSchema,
  UpsertContactRequestSchema,
  UpsertedContactSchema,
} from "../schemas/contacts";

const tags = ["Contacts"];

const listRoute = createRoute({
  method: "get",
  path: "/contacts",
  operationId: "listContacts",
  tags,
  summary: "List contacts",
  description:
    "Newest first. Keyset (cursor) pagination: pass the returned `cursor` to get the next page; it is null on the last page. Contacts added while paging never make a row appear twice or go missing.",
  security: securityScheme,
  request: {
    query: ContactListQuerySchema,
  },
  responses: {
    200: jsonResponse(ContactListResponseSchema, "A page of contacts"),
    ...commonErrors,
  },
});

const upsertRoute = createRoute({
  method: "post",
  path: "/contacts",
  operationId: "upsertContact",
  tags,
  summary: "Create or update a contact",
  description:
    "Upsert by email (case-insensitive; stored lower-case). `data` is merged into the existing data; a key set to null is removed. 201 when the contact was created, 200 when an existing one was updated.",
  security: securityScheme,
  request: {
    body: jsonBody(UpsertContactRequestSchema),
  },
  responses: {
    200: jsonResponse(UpsertedContactSchema, "An existing contact was updated"),
    201: jsonResponse(UpsertedContactSchema, "A new contact was created"),
    ...commonErrors,
  },
});

const getRoute = createRoute({
  method: "get",
  path: "/contacts/{id}",
  operationId: "getContact",
  tags,
  summary: "Get a contact",
  security: securityScheme,
  request: { params: IdParamSchema },
  responses: { 200: jsonResponse(ContactSchema, "The contact"), ...commonErrors },
});

const updateRoute = createRoute({
  method: "patch",
  path: "/contacts/{id}",
  operationId: "updateContact",
  tags,
  summary: "Update a contact",
  description: "`data` is merged into the existing data; a key set to null is removed.",
  security: securityScheme,
  request: {
    params: IdParamSchema,
    body: jsonBody(UpdateContactRequestSchema),
  },
  responses: { 200: jsonResponse(ContactSchema, "The updated contact"), ...commonErrors },
});

const deleteRoute = createRoute({
  method: "delete",
  path: "/contacts/{id}",
  operationId: "deleteContact",
  tags,
  summary: "Delete a contact and its events",
  security: securityScheme,
  request: { params: IdParamSchema },
  responses: { 204: { description: "Deleted" }, ...commonErrors },
});

export const contactsRouter = createRouter()
  .openapi(listRoute, async (c) => {
    const page = await listContacts(getDb(c.env.DB), c.get("auth").projectId, c.req.valid("query"));
    return c.json({ contacts: page.items.map(toContactView), cursor: page.nextCursor, hasMore: page.hasMore, total: page.total }, 200);
  })
  .openapi(upsertRoute, async (c) => {
    const input = c.req.valid("json");
    const { contact, isNew } = await upsertContact(getDb(c.env.DB), c.env, c.get("auth").projectId, input, c.get("afterCommit"));
    const body = { ...toContactView(contact), _meta: { isNew, isUpdate: !isNew } };
    return isNew ? c.json(body, 201) : c.json(body, 200);
  })
  .openapi(getRoute, async (c) => {
    const contact = await getContact(getDb(c.env.DB), c.get("auth").projectId, c.req.valid("param").id);
    return c.json(toContactView(contact), 200);
  })
  .openapi(updateRoute, async (c) => {
    const { projectId } = c.get("auth");
    const contact = await updateContact(getDb(c.env.DB), c.env, projectId, c.req.valid("param").id, c.req.valid("json"), c.get("afterCommit"));
    return c.json(toContactView(contact), 200);
  })
  .openapi(deleteRoute, async (c) => {
    await deleteContact(getDb(c.env.DB), c.get("auth").projectId, c.req.valid("param").id, c.get("afterCommit"));
    return c.body(null, 204);
  });
