import { and, eq } from "drizzle-orm";
import type { Database } from "../../db/client";
import { contacts, workflows, type Contact, type JsonObject } from "../../db/schema";
import type { Env } from "../../env";
import type { AfterCommit } from "../../lib/after-commit";
import { WriteBatch } from "../../store/batch";
import { updateContactById } from "../../store/contacts";
import { raisedGuard } from "../../store/guards";
import { evaluateCondition, loadContactActivity, type Condition } from "../conditions";
import { readConfig, requireEncryptionKey } from "../../lib/config";
import { projectLimiter } from "../../lib/project-limiters";
import { openSecret } from "../../lib/crypto";
import { renderSubject } from "../send/render";
import { webhookSecretContext } from "./definitions";
import { PermanentStepError } from "./send-email";
import { signWebhook } from "../../lib/standard-webhooks";
import { outboundTargetProblem } from "../../outside/outbound-url";
import { contactWriteEvents } from "../webhooks/record";

async function loadContact(db: Database, projectId: string, contactId: string): Promise<Contact> {
  const contact = await db.query.contacts.findFirst({ where: and(eq(contacts.id, contactId), eq(contacts.projectId, projectId)) });
  if (!contact) throw new PermanentStepError("The contact was deleted");
  return contact;
}

/** CONDITION: the condition language, evaluated in memory on the contact as it is now. */
export async function evaluateConditionStep(db: Database, projectId: string, contactId: string, condition: Condition): Promise<boolean> {
  const [contact, activity] = await Promise.all([loadContact(db, projectId, contactId), loadContactActivity(db, contactId)]);
  return evaluateCondition(condition, contact, activity, Date.now());
}

/**
 * UPDATE_CONTACT: merges data (null removes a key) and sets the subscription, as PATCH /contacts/{id} does,
 * with its contact.updated / .(un)subscribed webhook events in the same batch; they leave through `afterCommit`.
 */
export async function updateContactStep(
  db: Database,
  projectId: string,
  contactId: string,
  config: { data?: JsonObject; subscribed?: boolean },
  afterCommit?: AfterCommit,
): Promise<string> {
  const hooks = contactWriteEvents(db.$client, { projectId, at: new Date(), contactId, updates: true, subscribed: config.subscribed });
  const batch = new WriteBatch(db.$client);
  batch.add(...hooks.before);
  const updated = batch.add(updateContactById(db.$client, projectId, contactId, config));
  batch.add(...hooks.after);
  let contactRows: Record<string, unknown>[];
  try {
    contactRows = (await batch.run({ afterCommit })).rows(updated);
  } catch (err) {
    if (raisedGuard(err) === "CONTACT_DATA_TOO_LARGE") throw new PermanentStepError("The contact's data would exceed 64 KB");
    throw err;
  }
  if (contactRows.length === 0) throw new PermanentStepError("The contact was deleted");
  const parts = [
    config.data !== undefined ? `data ${Object.keys(config.data).join(", ")}` : null,
    config.subscribed !== undefined ? `subscribed=${config.subscribed}` : null,
  ];
  return `updated ${parts.filter(Boolean).join("; ")}`;
}

/** Renders every string inside a JSON value with the template variables (as text, no HTML escaping). */
async function renderJson(value: unknown, vars: Parameters<typeof renderSubject>[1], depth = 0): Promise<unknown> {
  if (depth > 8) return value;
  if (typeof value === "string") return renderSubject(value, vars).catch(() => value);
  if (Array.isArray(value)) return Promise.all(value.map((v) => renderJson(v, vars, depth + 1)));
  if (value && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = await renderJson(v, vars, depth + 1);
    return out;
  }
  return value;
}

export const WEBHOOK_TIMEOUT_MS = 15_000;

export interface WebhookStepInput {
  projectId: string;
  workflowId: string;
  executionId: string;
  stepId: string;
  contactId: string;
  config: { url: string; method?: "POST" | "PUT" | "PATCH"; headers?: Record<string, string>; body?: string | Record<string, unknown> };
}

/**
 * WEBHOOK: calls the URL with the rendered body, signed with the workflow's
 * secret (Standard Webhooks). The message id is the same on every retry, so the
 * receiver can drop duplicates. A refused target fails at once; a network
 * error or a non-2xx answer throws, and the step's retries try again.
 */
export async function callWebhookStep(db: Database, env: Env, input: WebhookStepInput): Promise<string> {
  const problem = await outboundTargetProblem(input.config.url, env);
  if (problem) {
    if (problem.retryable) throw new Error(problem.reason);
    throw new PermanentStepError(`Refused: ${problem.reason}`);
  }
  const limit = readConfig(env).WORKFLOW_WEBHOOKS_PER_MINUTE;
  const { allowed, resetSeconds } = await projectLimiter(env, "webhook", input.projectId).hitApi(limit, Date.now());
  // Retryable: the step's retries (30 s, then doubling) try again in a later minute.
  if (!allowed) throw new Error(`The project's ${limit} webhook calls a minute are used up; retried in ${resetSeconds} s or later`);
  const [contact, workflow] = await Promise.all([
    loadContact(db, input.projectId, input.contactId),
    db.query.workflows.findFirst({ where: eq(workflows.id, input.workflowId), columns: { webhookSecretEncrypted: true } }),
  ]);
  if (!workflow) throw new PermanentStepError("The workflow no longer exists");
  const secret = await openSecret(requireEncryptionKey(env), webhookSecretContext(input.workflowId), workflow.webhookSecretEncrypted);
  const vars = { data: contact.data ?? {}, email: contact.email, unsubscribeUrl: "" };
  const contactView = { id: contact.id, email: contact.email, subscribed: contact.subscribed, data: contact.data ?? {} };
  let body: string;
  let contentType = "application/json";
  if (typeof input.config.body === "string") {
    body = await renderSubject(input.config.body, vars).catch(() => input.config.body as string);
    contentType = "text/plain; charset=utf-8";
  } else if (input.config.body) {
    body = JSON.stringify(await renderJson(input.config.body, vars));
  } else {
    body = JSON.stringify({ workflowId: input.workflowId, executionId: input.executionId, stepId: input.stepId, contact: contactView });
  }
  const messageId = `msg_${input.executionId}_${input.stepId}`;
  const signed = await signWebhook(secret, messageId, Math.floor(Date.now() / 1000), body);
  const headers = new Headers({ "content-type": contentType, "user-agent": "edge-mail-webhooks/1" });
  for (const [name, value] of Object.entries(input.config.headers ?? {})) headers.set(name, value);
  for (const [name, value] of Object.entries(signed)) headers.set(name, value);
  const response = await fetch(input.config.url, {
    method: input.config.method ?? "POST",
    headers,
    body,
    redirect: "manual",
    signal: AbortSignal.timeout(WEBHOOK_TIMEOUT_MS),
  });
  try {
    await response.body?.cancel();
  } catch {
    // nothing to free
  }
  if (response.status < 200 || response.status >= 300) throw new Error(`The webhook answered HTTP ${response.status}`);
  return `HTTP ${response.status}`;
}
