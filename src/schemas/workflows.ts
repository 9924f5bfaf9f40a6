import * as z from "../lib/zod";
import { WORKFLOW_EXECUTION_STATUSES } from "../db/schema";
import { listEnvelope } from "../lib/openapi";
import { DataObjectSchema, headerText } from "../lib/validators";
import { EventNameSchema } from "./events";
import { ConditionSchema, UNIT_MS } from "./conditions";
import { TopicKeySchema } from "./topics";

/** Bounds of a definition (CONTRACT.md "Workflows"). */
export const MAX_STEPS = 100;
export const MAX_DELAY_DAYS = 365;
export const MAX_WEBHOOK_HEADERS = 20;
export const MAX_WEBHOOK_BODY_BYTES = 16 * 1024;
export const MAX_WORKFLOW_NAME = 200;
export const MAX_WORKFLOW_DESCRIPTION = 2000;

export { UNIT_MS };
export const durationMs = (d: { amount: number; unit: keyof typeof UNIT_MS }) => d.amount * UNIT_MS[d.unit];

/** Step ids double as Cloudflare Workflows step and event names, so they keep to a safe alphabet. */
export const StepIdSchema = z
  .string()
  .regex(/^[A-Za-z0-9_-]{1,64}$/, "A step id is 1-64 letters, digits, _ or -")
  .openapi({ example: "welcome" });

const DurationSchema = z
  .object({
    amount: z.number().int().positive(),
    unit: z.enum(["minutes", "hours", "days"]),
  })
  .strict()
  .refine((d) => durationMs(d) <= MAX_DELAY_DAYS * UNIT_MS.days, {
    message: `At most ${MAX_DELAY_DAYS} days`,
    path: ["amount"],
  });

/** Where a step leads: a step id, or null/absent to end the execution (COMPLETED). */
const NextSchema = StepIdSchema.nullable().optional();

const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}$/;
/** Headers a WEBHOOK step sets itself or that the platform controls. */
const RESERVED_HEADERS = new Set(["webhook-id", "webhook-timestamp", "webhook-signature", "content-length", "host", "connection", "transfer-encoding"]);

const WebhookHeadersSchema = z.record(z.string(), headerText(1000)).superRefine((headers, ctx) => {
  const names = Object.keys(headers);
  if (names.length > MAX_WEBHOOK_HEADERS) ctx.addIssue({ code: "custom", message: `At most ${MAX_WEBHOOK_HEADERS} headers` });
  for (const name of names) {
    if (!HEADER_NAME.test(name)) ctx.addIssue({ code: "custom", path: [name], message: "Not a valid header name" });
    else if (RESERVED_HEADERS.has(name.toLowerCase())) ctx.addIssue({ code: "custom", path: [name], message: `${name} is set by the service` });
  }
});

const WebhookBodySchema = z
  .union([z.string(), z.record(z.string(), z.unknown())])
  .refine((body) => new TextEncoder().encode(typeof body === "string" ? body : JSON.stringify(body)).length <= MAX_WEBHOOK_BODY_BYTES, {
    message: `At most ${MAX_WEBHOOK_BODY_BYTES / 1024} KB`,
  })
  .openapi({
    description:
      "A JSON object (its string values are rendered with the template variables and it is sent as application/json) or a string template. Default: `{workflowId, executionId, stepId, contact: {id, email, subscribed, data}}`.",
  });

const step = <T extends string, C extends z.ZodType, E extends z.ZodRawShape>(type: T, config: C, extra: E) =>
  z.object({ id: StepIdSchema, type: z.literal(type), config, ...extra }).strict();

export const StepSchema = z
  .discriminatedUnion("type", [
    step(
      "SEND_EMAIL",
      z
        .object({
          templateId: z.string().min(1).max(64),
          topic: TopicKeySchema.optional().openapi({
            description:
              "A topic's key: the step's mail is that topic's broadcast mail (gate 4: only contacts OPT_IN for it get it; its List-Id, its topic-only unsubscribe).",
          }),
        })
        .strict(),
      { next: NextSchema },
    ),
    step("DELAY", DurationSchema, { next: NextSchema }),
    step(
      "WAIT_FOR_EVENT",
      z
        .object({
          eventName: EventNameSchema,
          timeout: DurationSchema,
          replyTo: StepIdSchema.optional().openapi({
            description:
              "With eventName email.received: the id of a SEND_EMAIL step before this one; only a reply to the email that step sent in this execution ends the wait (a reply to another email does not). Left out: any email.received of the contact.",
          }),
        })
        .strict(),
      {
        branches: z.object({ event: NextSchema, timeout: NextSchema }).strict().optional(),
      },
    ),
    step("CONDITION", z.object({ condition: ConditionSchema }).strict(), {
      branches: z.object({ yes: NextSchema, no: NextSchema }).strict().optional(),
    }),
    step(
      "UPDATE_CONTACT",
      z
        .object({ data: DataObjectSchema.optional(), subscribed: z.boolean().optional() })
        .strict()
        .refine((c) => c.data !== undefined || c.subscribed !== undefined, { message: "Give data, subscribed or both" }),
      { next: NextSchema },
    ),
    step(
      "WEBHOOK",
      z
        .object({
          url: z.string().max(2048),
          method: z.enum(["POST", "PUT", "PATCH"]).optional(),
          headers: WebhookHeadersSchema.optional(),
          body: WebhookBodySchema.optional(),
        })
        .strict(),
      { next: NextSchema },
    ),
    step("EXIT", z.object({}).strict(), {}),
  ])
  .openapi("WorkflowStep", {
    description:
      "One step. `next` names the following step (none: the execution completes). WAIT_FOR_EVENT has `branches: {event, timeout}` and CONDITION `branches: {yes, no}` instead of `next`; EXIT has neither.",
    example: { id: "welcome", type: "SEND_EMAIL", config: { templateId: "0190f0a4-..." }, next: "wait" },
  });

export type WorkflowStep = z.infer<typeof StepSchema>;
export type StepType = WorkflowStep["type"];

export const TriggerSchema = z
  .discriminatedUnion("type", [
    z.object({ type: z.literal("EVENT"), eventName: EventNameSchema }).strict(),
    z.object({ type: z.literal("CONTACT_CREATED") }).strict(),
    z.object({ type: z.literal("CONTACT_SUBSCRIBED") }).strict(),
  ])
  .openapi("WorkflowTrigger", {
    description:
      "EVENT: a tracked event with this name (POST /v1/track, or any recorded event). CONTACT_CREATED: a contact is created by any path. CONTACT_SUBSCRIBED: a contact becomes subscribed (created subscribed, or switched from unsubscribed).",
  });
export type WorkflowTrigger = z.infer<typeof TriggerSchema>;

const StepsSchema = z.array(StepSchema).max(MAX_STEPS, `A workflow has at most ${MAX_STEPS} steps`);

export const CreateWorkflowSchema = z
  .object({
    name: headerText(MAX_WORKFLOW_NAME).min(1),
    description: z.string().max(MAX_WORKFLOW_DESCRIPTION).nullable().optional(),
    enabled: z.boolean().optional().openapi({ description: "Default false: a new workflow starts nothing until enabled" }),
    trigger: TriggerSchema.optional(),
    eventName: EventNameSchema.optional().openapi({ description: 'Plunk\'s shorthand for `trigger: {type: "EVENT", eventName}`' }),
    allowReentry: z.boolean().optional().openapi({
      description: "false (default): a contact walks the workflow once, ever. true: again, but never two executions at a time.",
    }),
    allowPublicEvents: z.boolean().optional().openapi({
      description:
        "false (default): events recorded with a public key (pk_, /v1/track from a browser) neither start this workflow nor resume its WAIT_FOR_EVENT steps; only secret-key and service events do. true: they do too.",
    }),
    steps: StepsSchema.default([]),
  })
  .strict()
  .openapi("CreateWorkflow");

export const UpdateWorkflowSchema = z
  .object({
    name: headerText(MAX_WORKFLOW_NAME).min(1).optional(),
    description: z.string().max(MAX_WORKFLOW_DESCRIPTION).nullable().optional(),
    enabled: z.boolean().optional(),
    trigger: TriggerSchema.optional(),
    eventName: EventNameSchema.optional(),
    allowReentry: z.boolean().optional(),
    allowPublicEvents: z.boolean().optional(),
    steps: StepsSchema.optional(),
  })
  .strict()
  .openapi("UpdateWorkflow");

export type CreateWorkflowInput = z.infer<typeof CreateWorkflowSchema>;
export type UpdateWorkflowInput = z.infer<typeof UpdateWorkflowSchema>;

const StatsSchema = z.object({
  running: z.number().int(),
  waiting: z.number().int(),
  completed: z.number().int(),
  exited: z.number().int(),
  failed: z.number().int(),
  cancelled: z.number().int(),
});

export const WorkflowSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    enabled: z.boolean(),
    trigger: TriggerSchema,
    allowReentry: z.boolean(),
    allowPublicEvents: z.boolean(),
    steps: z.array(StepSchema),
    version: z.number().int(),
    stats: StatsSchema.openapi({ description: "Executions by status" }),
    createdAt: z.string().datetime(),
    updatedAt: z.string().datetime(),
  })
  .openapi("Workflow");

export const CreatedWorkflowSchema = WorkflowSchema.extend({
  webhookSecret: z.string().openapi({
    description: "`whsec_` + base64 of 32 random bytes: WEBHOOK steps sign with it (Standard Webhooks). Shown only in this response.",
  }),
}).openapi("CreatedWorkflow");

export const HistoryEntrySchema = z.object({
  stepId: z.string(),
  type: z.string(),
  status: z.enum(["RUNNING", "WAITING", "COMPLETED", "SKIPPED", "FAILED"]),
  outcome: z.string().nullable(),
  startedAt: z.string().datetime(),
  finishedAt: z.string().datetime().nullable(),
});

export const ExecutionStatusSchema = z.enum(WORKFLOW_EXECUTION_STATUSES);

export const ExecutionSchema = z
  .object({
    id: z.string(),
    workflowId: z.string(),
    workflowVersion: z.number().int(),
    contactId: z.string(),
    status: ExecutionStatusSchema,
    currentStepId: z.string().nullable(),
    resumeAt: z.string().datetime().nullable(),
    error: z.string().nullable(),
    history: z.array(HistoryEntrySchema),
    startedAt: z.string().datetime(),
    finishedAt: z.string().datetime().nullable(),
  })
  .openapi("WorkflowExecution");

/** A workflow as the API shows it. */
export type WorkflowView = z.infer<typeof WorkflowSchema>;
/** Executions by status. */
export type WorkflowStats = WorkflowView["stats"];
/** A workflow execution as the API shows it. */
export type ExecutionView = z.infer<typeof ExecutionSchema>;
export const WorkflowListResponseSchema = listEnvelope(WorkflowSchema);
export const ExecutionListResponseSchema = listEnvelope(ExecutionSchema);
