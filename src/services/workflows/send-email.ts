import { and, eq } from "drizzle-orm";
import type { Database } from "../../db/client";
import { contactTopics, contacts, emails, projects, templates, topics } from "../../db/schema";
import type { Env } from "../../env";
import { ApiError } from "../../lib/errors";
import { senderDomain as checkSenderDomain } from "../domains";
import { createEmails } from "../send/create-emails";
import { enqueueMail } from "../../queues";
import { findSuppressed } from "../suppressions";
import { describeRefusal, refusalOf, type Stream } from "../consent/gates";
import { broadcastUnavailable } from "../../outside/providers";

/** A step that cannot succeed however often it is retried (the step fails the execution). */
export class PermanentStepError extends Error {
  override name = "NonRetryableError";
}

export type SendStepResult = { outcome: "queued"; emailId: string } | { outcome: "skipped"; reason: string } | { outcome: "cancelled" };

/** All emails of one execution's step share this send id: the step's idempotency key. */
export const workflowSendId = (executionId: string, stepId: string) => `wf:${executionId}:${stepId}`;

/**
 * Queues a step's email by its kind: MARKETING mail is bulk mail (the bulk
 * queue, whose consumer takes only the send rate transactional mail leaves
 * free, and whose sweep and DLQ know it by `emails.bulk`); TRANSACTIONAL mail
 * goes with /v1/send. A failed enqueue leaves the record QUEUED for the sweep.
 */
function queueStepEmail(env: Env, projectId: string, emailId: string, bulk: boolean) {
  return enqueueMail(env, [{ emailId, projectId, bulk }]);
}

/** The step's email, if an earlier run of the step wrote it: queued again while still QUEUED (the claim dedupes). */
async function existingStepEmail(db: Database, env: Env, projectId: string, sendId: string): Promise<SendStepResult | undefined> {
  const [existing] = await db
    .select({ id: emails.id, status: emails.status, bulk: emails.bulk })
    .from(emails)
    .where(and(eq(emails.projectId, projectId), eq(emails.sendId, sendId)))
    .limit(1);
  if (!existing) return undefined;
  if (existing.status === "QUEUED") await queueStepEmail(env, projectId, existing.id, existing.bulk);
  return { outcome: "queued", emailId: existing.id };
}

/**
 * A SEND_EMAIL step: one ordinary email record (QUEUED) rendered from the
 * template for the contact as it is now, then queued on the send pipeline,
 * where tracking, unsubscribe links, suppression, stats and the send rate apply
 * as to any other mail; MARKETING mail as bulk mail (see queueStepEmail).
 * Idempotent per execution and step: the record is inserted only if the step
 * has none yet (one statement, so two overlapping runs of the step write one),
 * and a retried step finds its record (by send id) and only queues it again
 * (the consumer's claim makes that harmless). Marketing mail to an
 * unsubscribed contact, any mail to a suppressed address, and any mail of a
 * project whose sending is paused (reputation breaker), is skipped and
 * reported as such.
 */
export async function sendWorkflowEmail(
  db: Database,
  env: Env,
  input: { projectId: string; executionId: string; stepId: string; contactId: string; templateId: string; topic?: string },
): Promise<SendStepResult> {
  const sendId = workflowSendId(input.executionId, input.stepId);
  const earlier = await existingStepEmail(db, env, input.projectId, sendId);
  if (earlier) return earlier;

  const [template, contact, project, topic] = await Promise.all([
    db.query.templates.findFirst({ where: and(eq(templates.id, input.templateId), eq(templates.projectId, input.projectId)) }),
    db.query.contacts.findFirst({ where: and(eq(contacts.id, input.contactId), eq(contacts.projectId, input.projectId)) }),
    db.query.projects.findFirst({ columns: { sendingPausedAt: true, unsubscribeFooter: true }, where: eq(projects.id, input.projectId) }),
    input.topic ? stepTopic(db, input.projectId, input.contactId, input.topic) : null,
  ]);
  // The reputation breaker paused the project: no mail is written (the step is skipped, the workflow goes on).
  if (project?.sendingPausedAt) return { outcome: "skipped", reason: "sending paused for the project (SENDING_PAUSED: bounce or complaint rate too high)" };
  if (!template) throw new PermanentStepError(`Template ${input.templateId} no longer exists`);
  if (!contact) throw new PermanentStepError("The contact was deleted");
  if (!template.from) throw new PermanentStepError("The template has no from address");

  // The consent gates (src/services/consent/gates.ts): a MARKETING template's mail, and a topic's, is broadcast.
  const stream: Stream = template.type === "MARKETING" || input.topic ? "BROADCAST" : "TRANSACTIONAL";
  const marketing = stream === "BROADCAST";
  const suppressed = await findSuppressed(db, input.projectId, [contact.email]);
  const refusal = refusalOf({
    stream,
    suppression: suppressed.get(contact.email),
    subscribed: contact.subscribed,
    // A topic deleted since the workflow was saved has no default: gate 4 lets nobody through.
    topic: input.topic ? { topicId: topic?.id ?? input.topic, defaultSubscription: topic?.defaultSubscription, choice: topic?.choice ?? null } : null,
  });
  if (refusal) return { outcome: "skipped", reason: describeRefusal(refusal) };
  // No provider carries broadcast mail here (Cloudflare Email Service alone): skipped, saying why.
  const unavailable = marketing ? broadcastUnavailable(env) : null;
  if (unavailable) return { outcome: "skipped", reason: unavailable };

  let senderDomain: string;
  try {
    senderDomain = await checkSenderDomain(db, input.projectId, template.from);
  } catch (err) {
    if (err instanceof ApiError) throw new PermanentStepError(err.message);
    throw err;
  }
  let queued: Awaited<ReturnType<typeof createEmails>>;
  try {
    // Written only while the execution is active (a workflow deleted meanwhile sends
    // nothing) and the step has no email yet (an overlapping run of the step wrote it).
    queued = await createEmails(
      db.$client,
      env,
      {
        projectId: input.projectId,
        sendId,
        templateId: template.id,
        from: template.from,
        fromName: template.fromName ?? null,
        replyTo: template.replyTo ?? null,
        senderDomain,
        subject: template.subject,
        html: template.body,
        marketing,
        bulk: marketing,
        topicId: topic?.id ?? null,
        unsubscribeFooter: project?.unsubscribeFooter,
        whileExecution: input.executionId,
      },
      [{ to: contact.email, contactId: contact.id, data: contact.data ?? {} }],
    );
  } catch (err) {
    // Quotas as on /v1/send: a step over a quota is skipped and says so.
    if (err instanceof ApiError && err.code === "QUOTA_EXCEEDED") return { outcome: "skipped", reason: err.message };
    if (err instanceof ApiError) throw new PermanentStepError(err.details.errors?.[0]?.message ?? err.message);
    throw err;
  }
  const [emailId] = queued.inserted;
  if (!emailId) return (await existingStepEmail(db, env, input.projectId, sendId)) ?? { outcome: "cancelled" };
  return { outcome: "queued", emailId };
}

/** The step's topic (by key) and the contact's explicit choice for it, in one read; null when the topic is gone. */
async function stepTopic(db: Database, projectId: string, contactId: string, key: string) {
  const [row] = await db
    .select({ id: topics.id, defaultSubscription: topics.defaultSubscription, choice: contactTopics.status })
    .from(topics)
    .leftJoin(contactTopics, and(eq(contactTopics.topicId, topics.id), eq(contactTopics.contactId, contactId)))
    .where(and(eq(topics.projectId, projectId), eq(topics.key, key)))
    .limit(1);
  return row ?? null;
}
