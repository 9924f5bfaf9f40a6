import { createRoute } from "@hono/zod-openapi";
import * as z from "../lib/zod";
import { getDb } from "../db/client";
import { createRouter } from "../lib/router";
import { commonErrors, jsonBody, jsonResponse, securityScheme, success } from "../lib/openapi";
import { IdParamSchema, idQuery } from "../lib/validators";
import { PaginationQuerySchema } from "../lib/pagination";
import { createWorkflow, deleteWorkflow, getWorkflow, listWorkflows, toWorkflowView, updateWorkflow, workflowStats } from "../services/workflows/definitions";
import { getExecution, listExecutions, toExecutionView } from "../services/workflows/executions";
import {
  CreatedWorkflowSchema,
  CreateWorkflowSchema,
  ExecutionSchema,
  ExecutionStatusSchema,
  UpdateWorkflowSchema,
  WorkflowSchema,
  WorkflowListResponseSchema,
  ExecutionListResponseSchema,
} from "../schemas/workflows";

const tags = ["Workflows"];

const DEFINITION_RULES = [
  "Steps are checked when written, and any problem is a 422 whose `errors[].field` names the step (`steps.3.next`, `steps.1.config.templateId`): an unknown step type or config, a `next` or branch naming a missing step, a cycle, a step not reachable from the first, a template that is unknown, another project's or has no from address, a delay or timeout over 365 days, more than 100 steps, and (outside development) a WEBHOOK URL that is not https or names a private, loopback or link-local address.",
  "SEND_EMAIL creates an ordinary email record (GET /emails) and queues it: tracking, unsubscribe links, suppression and the send rate apply; a MARKETING template is skipped for an unsubscribed contact and a suppressed address is skipped, both recorded in the execution's history. MARKETING mail is bulk mail (it travels like campaign mail and yields the send rate to transactional mail); TRANSACTIONAL mail travels like /v1/send. One email per execution and step, however often the step is retried; past the emails-per-day quota the step is SKIPPED with the reason. Template variables come from the contact's data at the time of sending.",
  "WAIT_FOR_EVENT resumes when the contact's event with that name is tracked after the wait began (with `replyTo` on email.received: only a reply to the email that SEND_EMAIL step sent); CONDITION evaluates the condition language on the contact as it is at that moment; WEBHOOK posts the rendered body signed with the workflow's secret (Standard Webhooks: `webhook-id`, `webhook-timestamp`, `webhook-signature`), retried with back-off, and the execution is FAILED after the last retry.",
  "`allowReentry: false` (default): a contact with any execution of this workflow, running or finished, never starts another. `true`: a contact can walk it again, but never has two running at a time.",
  "`allowPublicEvents: false` (default): events recorded with a public key (pk_) neither start the workflow nor resume its waits; set it to true to let a browser page drive it.",
].join("\n\n");

const listRoute = createRoute({
  method: "get",
  path: "/workflows",
  operationId: "listWorkflows",
  tags,
  summary: "List workflows",
  description: "Newest first, cursor pagination; each with its executions counted by status in `stats`.",
  security: securityScheme,
  request: { query: PaginationQuerySchema },
  responses: { 200: jsonResponse(WorkflowListResponseSchema, "A page of workflows"), ...commonErrors },
});

const createWorkflowRoute = createRoute({
  method: "post",
  path: "/workflows",
  operationId: "createWorkflow",
  tags,
  summary: "Create a workflow",
  description: [
    'A new workflow is disabled unless `enabled: true` is sent. A top-level `eventName` (Plunk\'s create body) is shorthand for `trigger: {type: "EVENT", eventName}`.',
    "The response carries `webhookSecret` once; it is never shown again.",
    DEFINITION_RULES,
  ].join("\n\n"),
  security: securityScheme,
  request: { body: jsonBody(CreateWorkflowSchema) },
  responses: { 201: jsonResponse(CreatedWorkflowSchema, "The new workflow, with its webhook secret"), ...commonErrors },
});

const getRoute = createRoute({
  method: "get",
  path: "/workflows/{id}",
  operationId: "getWorkflow",
  tags,
  summary: "Get a workflow",
  security: securityScheme,
  request: { params: IdParamSchema },
  responses: { 200: jsonResponse(WorkflowSchema, "The workflow"), ...commonErrors },
});

const updateRoute = createRoute({
  method: "patch",
  path: "/workflows/{id}",
  operationId: "updateWorkflow",
  tags,
  summary: "Update a workflow",
  description: [
    "Only the fields given change. Changing `steps` or `trigger` makes a new `version`; executions already running keep the version they started on. `enabled: false` stops new executions; running ones go on.",
    DEFINITION_RULES,
  ].join("\n\n"),
  security: securityScheme,
  request: { params: IdParamSchema, body: jsonBody(UpdateWorkflowSchema) },
  responses: { 200: jsonResponse(WorkflowSchema, "The updated workflow"), ...commonErrors },
});

const deleteRoute = createRoute({
  method: "delete",
  path: "/workflows/{id}",
  operationId: "deleteWorkflow",
  tags,
  summary: "Delete a workflow",
  description: "Stops it at once: its running and waiting executions become CANCELLED and their instances are terminated.",
  security: securityScheme,
  request: { params: IdParamSchema },
  responses: { 204: { description: "Deleted" }, ...commonErrors },
});

const ExecutionListQuerySchema = PaginationQuerySchema.extend({
  status: ExecutionStatusSchema.optional().openapi({ param: { name: "status", in: "query" } }),
  contactId: idQuery("contactId"),
});

const listExecutionsRoute = createRoute({
  method: "get",
  path: "/workflows/{id}/executions",
  operationId: "listWorkflowExecutions",
  tags,
  summary: "List a workflow's executions",
  description:
    "Newest first, cursor pagination, optional `status` and `contactId` filters. Statuses: RUNNING, WAITING (in a delay or a wait), COMPLETED, EXITED (an EXIT step), FAILED, CANCELLED.",
  security: securityScheme,
  request: { params: IdParamSchema, query: ExecutionListQuerySchema },
  responses: { 200: jsonResponse(ExecutionListResponseSchema, "A page of executions"), ...commonErrors },
});

const getExecutionRoute = createRoute({
  method: "get",
  path: "/workflows/{id}/executions/{executionId}",
  operationId: "getWorkflowExecution",
  tags,
  summary: "Get one execution with its step history",
  security: securityScheme,
  request: {
    params: IdParamSchema.extend({
      executionId: z
        .string()
        .min(1)
        .max(64)
        .openapi({ param: { name: "executionId", in: "path" } }),
    }),
  },
  responses: { 200: jsonResponse(ExecutionSchema, "The execution"), ...commonErrors },
});

export const workflowsRouter = createRouter()
  .openapi(listRoute, async (c) => {
    const page = await listWorkflows(getDb(c.env.DB), c.get("auth").projectId, c.req.valid("query"));
    return c.json(success({ items: page.items, nextCursor: page.nextCursor, hasMore: page.hasMore, total: page.total }), 200);
  })
  .openapi(createWorkflowRoute, async (c) => {
    const { workflow, webhookSecret } = await createWorkflow(getDb(c.env.DB), c.env, c.get("auth").projectId, c.req.valid("json"));
    return c.json({ ...toWorkflowView(workflow), webhookSecret }, 201);
  })
  .openapi(getRoute, async (c) => {
    const db = getDb(c.env.DB);
    const workflow = await getWorkflow(db, c.get("auth").projectId, c.req.valid("param").id);
    const stats = await workflowStats(db, [workflow.id]);
    return c.json(toWorkflowView(workflow, stats.get(workflow.id)), 200);
  })
  .openapi(updateRoute, async (c) => {
    const db = getDb(c.env.DB);
    const workflow = await updateWorkflow(db, c.env, c.get("auth").projectId, c.req.valid("param").id, c.req.valid("json"));
    const stats = await workflowStats(db, [workflow.id]);
    return c.json(toWorkflowView(workflow, stats.get(workflow.id)), 200);
  })
  .openapi(deleteRoute, async (c) => {
    await deleteWorkflow(getDb(c.env.DB), c.env, c.get("auth").projectId, c.req.valid("param").id);
    return c.body(null, 204);
  })
  .openapi(listExecutionsRoute, async (c) => {
    const db = getDb(c.env.DB);
    const workflow = await getWorkflow(db, c.get("auth").projectId, c.req.valid("param").id);
    const { status, contactId, ...page } = c.req.valid("query");
    const result = await listExecutions(db, workflow.id, { ...page, status, contactId });
    return c.json(success({ items: result.items, nextCursor: result.nextCursor, hasMore: result.hasMore, total: result.total }), 200);
  })
  .openapi(getExecutionRoute, async (c) => {
    const db = getDb(c.env.DB);
    const { id, executionId } = c.req.valid("param");
    const workflow = await getWorkflow(db, c.get("auth").projectId, id);
    return c.json(toExecutionView(await getExecution(db, workflow.id, executionId)), 200);
  });
