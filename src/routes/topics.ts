import { createRoute } from "@hono/zod-openapi";
import { getDb } from "../db/client";
import { commonErrors, jsonBody, jsonResponse, securityScheme, success } from "../lib/openapi";
import { PaginationQuerySchema } from "../lib/pagination";
import { createRouter } from "../lib/router";
import { IdParamSchema } from "../lib/validators";
import {
  ContactTopicListResponseSchema,
  CreateTopicSchema,
  TopicListResponseSchema,
  TopicSchema,
  UpdateContactTopicsSchema,
  UpdateTopicSchema,
} from "../schemas/topics";
import { createTopic, deleteTopic, getTopic, listContactTopics, listTopics, toTopicView, updateContactTopics, updateTopic } from "../services/topics";

const tags = ["Topics"];

const listRoute = createRoute({
  method: "get",
  path: "/topics",
  operationId: "listTopics",
  tags,
  summary: "List topics",
  description: "Newest first, cursor pagination.",
  security: securityScheme,
  request: { query: PaginationQuerySchema },
  responses: { 200: jsonResponse(TopicListResponseSchema, "A page of topics"), ...commonErrors },
});

const createTopicRoute = createRoute({
  method: "post",
  path: "/topics",
  operationId: "createTopic",
  tags,
  summary: "Create a topic",
  description:
    "A topic is what a contact agreed to receive (Resend Topics, Loops mailing lists). `key` (`^[a-z0-9][a-z0-9_-]{0,49}$`) is unique per project (409 CONFLICT when taken) and, like `defaultSubscription`, cannot be changed later. `visibility` defaults to PRIVATE (shown on the preference page only to contacts in it, as Loops does). At most QUOTA_TOPICS (100) per project: 403 QUOTA_EXCEEDED.",
  security: securityScheme,
  request: { body: jsonBody(CreateTopicSchema) },
  responses: { 201: jsonResponse(TopicSchema, "The new topic"), ...commonErrors },
});

const getRoute = createRoute({
  method: "get",
  path: "/topics/{id}",
  operationId: "getTopic",
  tags,
  summary: "Get a topic",
  security: securityScheme,
  request: { params: IdParamSchema },
  responses: { 200: jsonResponse(TopicSchema, "The topic"), ...commonErrors },
});

const updateRoute = createRoute({
  method: "patch",
  path: "/topics/{id}",
  operationId: "updateTopic",
  tags,
  summary: "Update a topic",
  description: "Only the fields given change: name, description, visibility, doubleOptIn. `key` and `defaultSubscription` are immutable (422).",
  security: securityScheme,
  request: { params: IdParamSchema, body: jsonBody(UpdateTopicSchema) },
  responses: { 200: jsonResponse(TopicSchema, "The updated topic"), ...commonErrors },
});

const deleteRoute = createRoute({
  method: "delete",
  path: "/topics/{id}",
  operationId: "deleteTopic",
  tags,
  summary: "Delete a topic",
  description: "Deletes the topic and every contact's choice for it. A campaign still aimed at it sends to nobody.",
  security: securityScheme,
  request: { params: IdParamSchema },
  responses: { 204: { description: "Deleted" }, ...commonErrors },
});

const contactTopicsRoute = createRoute({
  method: "get",
  path: "/contacts/{id}/topics",
  operationId: "listContactTopics",
  tags,
  summary: "A contact's topics",
  description:
    "Every topic of the project with the contact's subscription: its own choice (`explicit: true`) or the topic's default. One page (a project has at most 100 topics), oldest topic first.",
  security: securityScheme,
  request: { params: IdParamSchema },
  responses: { 200: jsonResponse(ContactTopicListResponseSchema, "The contact's topics"), ...commonErrors },
});

const updateContactTopicsRoute = createRoute({
  method: "patch",
  path: "/contacts/{id}/topics",
  operationId: "updateContactTopics",
  tags,
  summary: "Set a contact's topics",
  description:
    "Sets the contact's choice for each topic given by key; topics not named keep theirs. An OPT_IN for a topic with `doubleOptIn` is PENDING until the contact confirms. Each change records an event (`topic.opted_in`, `topic.opted_out`, `topic.pending`) and one `contact.topics.updated` webhook event. An unknown key is a 422 naming `topics.<n>.key`. Answers every topic, as GET does.",
  security: securityScheme,
  request: { params: IdParamSchema, body: jsonBody(UpdateContactTopicsSchema) },
  responses: { 200: jsonResponse(ContactTopicListResponseSchema, "The contact's topics"), ...commonErrors },
});

export const topicsRouter = createRouter()
  .openapi(listRoute, async (c) => {
    const page = await listTopics(getDb(c.env.DB), c.get("auth").projectId, c.req.valid("query"));
    return c.json(success(page), 200);
  })
  .openapi(createTopicRoute, async (c) => {
    const topic = await createTopic(getDb(c.env.DB), c.env, c.get("auth").projectId, c.req.valid("json"));
    return c.json(toTopicView(topic), 201);
  })
  .openapi(getRoute, async (c) => {
    return c.json(toTopicView(await getTopic(getDb(c.env.DB), c.get("auth").projectId, c.req.valid("param").id)), 200);
  })
  .openapi(updateRoute, async (c) => {
    const topic = await updateTopic(getDb(c.env.DB), c.get("auth").projectId, c.req.valid("param").id, c.req.valid("json"));
    return c.json(toTopicView(topic), 200);
  })
  .openapi(deleteRoute, async (c) => {
    await deleteTopic(getDb(c.env.DB), c.get("auth").projectId, c.req.valid("param").id);
    return c.body(null, 204);
  })
  .openapi(contactTopicsRoute, async (c) => {
    return c.json(success(await listContactTopics(getDb(c.env.DB), c.get("auth").projectId, c.req.valid("param").id)), 200);
  })
  .openapi(updateContactTopicsRoute, async (c) => {
    const db = getDb(c.env.DB);
    const list = await updateContactTopics(db, c.env, c.get("auth").projectId, c.req.valid("param").id, c.req.valid("json"), c.get("afterCommit"));
    return c.json(success(list), 200);
  });
