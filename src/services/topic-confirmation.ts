import { and, eq, inArray, sql } from "drizzle-orm";
import type { Database } from "../db/client";
import { contacts, contactTopics, projects, templates, type Topic } from "../db/schema";
import type { Env } from "../env";
import type { AfterCommit } from "../lib/after-commit";
import { ApiError } from "../lib/errors";
import type { WriteBatch } from "../store/batch";
import type { TopicChoice } from "../store/topics";
import { domainOfAddress } from "./domains/names";
import { confirmationTemplateProblem } from "./project-settings";
import { createEmails } from "./send/create-emails";

/**
 * Double opt-in topics (CONTRACT "Topics"): opting into one leaves the choice PENDING and sends the
 * project's confirmation template (PATCH /project doubleOptInTemplateId, the one the project's own
 * double opt-in uses); its {{confirmUrl}} makes every PENDING topic of the contact OPT_IN
 * (src/services/tracking/confirm.ts). Gate 3 still applies: topic mail reaches subscribed contacts only.
 */

type ConfirmationTemplate = { id: string; from: string; fromName: string | null; replyTo: string | null; subject: string; body: string; senderDomain: string };

/** The project's confirmation template, or why it cannot be sent. */
async function confirmationTemplate(db: Database, projectId: string): Promise<{ template: ConfirmationTemplate } | { problem: string }> {
  const [row] = await db
    .select({ templateId: projects.doubleOptInTemplateId, template: templates })
    .from(projects)
    .leftJoin(templates, and(eq(templates.id, projects.doubleOptInTemplateId), eq(templates.projectId, projects.id)))
    .where(eq(projects.id, projectId))
    .limit(1);
  if (!row?.templateId) return { problem: "the project has no confirmation template (PATCH /project doubleOptInTemplateId)" };
  const problem = await confirmationTemplateProblem(db, projectId, row.template ?? undefined);
  if (problem || !row.template?.from) return { problem: problem ?? "the confirmation template has no from address" };
  const t = row.template;
  return {
    template: { id: t.id, from: t.from!, fromName: t.fromName, replyTo: t.replyTo, subject: t.subject, body: t.body, senderDomain: domainOfAddress(t.from!)! },
  };
}

/** POST /topics and PATCH /topics/{id} with `doubleOptIn: true`: a 422 naming doubleOptIn unless the confirmation can be sent. */
export async function assertTopicConfirmation(db: Database, projectId: string): Promise<void> {
  const found = await confirmationTemplate(db, projectId);
  if ("problem" in found) {
    throw new ApiError("VALIDATION_ERROR", "Validation failed", {
      errors: [
        { field: "doubleOptIn", message: `A double opt-in topic sends the project's confirmation email, but ${found.problem}`, code: "confirmation_template" },
      ],
      suggestion: "Create a template that uses {{confirmUrl}} and set it with PATCH /project {doubleOptInTemplateId}.",
    });
  }
}

/**
 * The confirmation a request's choices call for: one of them opts into a double opt-in topic the
 * address is not OPT_IN for yet. Null otherwise (no read unless such a topic is named). A template
 * that became unusable since is logged and nothing is sent; the choice stays PENDING.
 */
export async function topicConfirmationFor(
  db: Database,
  projectId: string,
  email: string,
  choices: readonly TopicChoice[],
  named: ReadonlyMap<string, Topic>,
): Promise<ConfirmationTemplate | null> {
  const asked = choices.filter((c) => c.subscription === "OPT_IN" && named.get(c.key)?.doubleOptIn).map((c) => named.get(c.key)!.id);
  if (asked.length === 0) return null;
  const [settled, found] = await Promise.all([
    db
      .select({ n: sql<number>`count(*)` })
      .from(contactTopics)
      .innerJoin(contacts, eq(contacts.id, contactTopics.contactId))
      .where(and(eq(contacts.projectId, projectId), eq(contacts.email, email), inArray(contactTopics.topicId, asked), eq(contactTopics.status, "OPT_IN"))),
    confirmationTemplate(db, projectId),
  ]);
  if ((settled[0]?.n ?? 0) >= asked.length) return null;
  if ("problem" in found) {
    console.error(`double opt-in topic of project ${projectId}: no confirmation sent: ${found.problem}`);
    return null;
  }
  return found.template;
}

/**
 * Runs `batch`, with the confirmation email to `to` last in it when there is one (written only if the
 * contact exists by then). Returns the batch's result either way.
 */
export async function runWithTopicConfirmation(
  db: Database,
  env: Env,
  projectId: string,
  confirmation: ConfirmationTemplate | null,
  to: string,
  batch: WriteBatch,
  options: { afterCommit?: AfterCommit; requestUrl?: string; now: Date },
) {
  if (!confirmation) return batch.run({ env, now: options.now, afterCommit: options.afterCommit });
  const created = await createEmails(
    db.$client,
    env,
    {
      projectId,
      templateId: confirmation.id,
      from: confirmation.from,
      fromName: confirmation.fromName,
      replyTo: confirmation.replyTo,
      senderDomain: confirmation.senderDomain,
      subject: confirmation.subject,
      html: confirmation.body,
      marketing: false,
      tracked: false,
      confirmation: true,
    },
    [{ to, contactEmail: to, data: {} }],
    { batch, afterCommit: options.afterCommit, requestUrl: options.requestUrl, now: options.now },
  );
  return created.result;
}
