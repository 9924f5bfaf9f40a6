import { and, eq } from "drizzle-orm";
import { fromRow, type Database } from "../db/client";
import { templates, type Template } from "../db/schema";
import type { ConfigInput } from "../lib/config";
import { ApiError } from "../lib/errors";
import { newId } from "../lib/ids";
import { assertTemplateSyntax } from "./send/render";
import { listNewestFirst } from "../lib/pagination";
import type { CreateTemplateRequest, TemplateView, UpdateTemplateRequest } from "../schemas/templates";
import { writeWithinQuotas } from "./quotas";
import { deleteTemplateUnlessConfirmation, insertTemplate, type TemplateChange, updateTemplate as updateTemplateRow } from "../store/templates";

export type TemplateType = Template["type"];

export function toTemplateView(template: Template): TemplateView {
  return {
    id: template.id,
    name: template.name,
    subject: template.subject,
    body: template.body,
    type: template.type,
    from: template.from ?? null,
    fromName: template.fromName ?? null,
    replyTo: template.replyTo ?? null,
    createdAt: template.createdAt.toISOString(),
    updatedAt: template.updatedAt.toISOString(),
  };
}

/** A template that cannot render is refused when it is stored, not when mail is sent. */
async function assertRenderable(input: { subject?: string; body?: string }) {
  if (input.subject !== undefined) await assertTemplateSyntax(input.subject, "subject");
  if (input.body !== undefined) await assertTemplateSyntax(input.body, "body");
}

/** Within QUOTA_TEMPLATES and QUOTA_STORED_BYTES (checked in the insert's batch). */
export async function createTemplate(db: Database, env: ConfigInput, projectId: string, input: CreateTemplateRequest): Promise<Template> {
  await assertRenderable(input);
  const now = new Date();
  const insert = insertTemplate(db.$client, {
    id: newId(),
    projectId,
    name: input.name,
    subject: input.subject,
    body: input.body,
    type: input.type,
    from: input.from ?? null,
    fromName: input.fromName ?? null,
    replyTo: input.replyTo ?? null,
    createdAt: now,
    updatedAt: now,
  });
  const [rows] = await writeWithinQuotas(db, env, projectId, [insert], { quota: "QUOTA_TEMPLATES" });
  return fromRow(templates, rows[0]);
}

export async function getTemplate(db: Database, projectId: string, id: string): Promise<Template> {
  const template = await db.query.templates.findFirst({
    where: and(eq(templates.id, id), eq(templates.projectId, projectId)),
  });
  if (!template) throw ApiError.notFound("Template");
  return template;
}

/** Applies only the fields given; an empty update returns the template unchanged. */
export async function updateTemplate(db: Database, env: ConfigInput, projectId: string, id: string, input: UpdateTemplateRequest): Promise<Template> {
  await assertRenderable(input);
  const set: TemplateChange = {};
  if (input.name !== undefined) set.name = input.name;
  if (input.subject !== undefined) set.subject = input.subject;
  if (input.body !== undefined) set.body = input.body;
  if (input.type !== undefined) set.type = input.type;
  if (input.from !== undefined) set.from = input.from;
  if (input.fromName !== undefined) set.fromName = input.fromName;
  if (input.replyTo !== undefined) set.replyTo = input.replyTo;
  if (Object.keys(set).length === 0) return getTemplate(db, projectId, id);
  set.updatedAt = new Date();
  const update = updateTemplateRow(db.$client, projectId, id, set);
  const [rows] = await writeWithinQuotas(db, env, projectId, [update]);
  if (!rows[0]) throw ApiError.notFound("Template");
  return fromRow(templates, rows[0]);
}

/** Deletes the template, unless it is the project's double opt-in confirmation while that is on (400 INVALID_STATE). */
export async function deleteTemplate(db: Database, projectId: string, id: string): Promise<void> {
  const deleted = await deleteTemplateUnlessConfirmation(db.$client, projectId, id);
  if (deleted.length > 0) return;
  await getTemplate(db, projectId, id);
  throw ApiError.invalidState(
    "This template is the project's double opt-in confirmation and cannot be deleted while double opt-in is on",
    "PATCH /project with another doubleOptInTemplateId, or doubleOptIn: false, first.",
  );
}

export interface ListTemplatesQuery {
  limit: number;
  cursor?: string;
}

/** Newest first, keyset-paginated on (project_id, id); `total` counts the project's templates. */
export async function listTemplates(db: Database, projectId: string, query: ListTemplatesQuery) {
  return listNewestFirst(db, templates, eq(templates.projectId, projectId), query);
}
