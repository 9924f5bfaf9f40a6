import { and, eq } from "drizzle-orm";
import type { Database } from "../../db/client";
import { contacts, emails, templates } from "../../db/schema";
import type { Env, SendEmailMessage } from "../../env";
import { publicUrl, requireSecret } from "../../lib/config";
import { ApiError } from "../../lib/errors";
import { newId } from "../../lib/ids";
import { requireVerifiedDomain } from "../domains";
import { enqueueEmails } from "../send/accept";
import { renderBody, renderSubject } from "../send/render";
import { assertDailyQuota, assertStoredBytesQuota } from "../quotas";
import { findSuppressed } from "../suppressions";
import { unsubscribeUrl } from "../tracking/links";

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
async function queueStepEmail(env: Env, projectId: string, emailId: string, bulk: boolean) {
  if (!bulk) return enqueueEmails(env, projectId, [emailId]);
  try {
    await env.EMAIL_BULK_QUEUE.send({ emailId, projectId } satisfies SendEmailMessage);
  } catch (err) {
    console.error("enqueue failed; the sweep will retry", err);
  }
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
 * unsubscribed contact, and any mail to a suppressed address, is skipped and
 * reported as such.
 */
export async function sendWorkflowEmail(
  db: Database,
  env: Env,
  input: { projectId: string; executionId: string; stepId: string; contactId: string; templateId: string },
): Promise<SendStepResult> {
  const sendId = workflowSendId(input.executionId, input.stepId);
  const earlier = await existingStepEmail(db, env, input.projectId, sendId);
  if (earlier) return earlier;

  const [template, contact] = await Promise.all([
    db.query.templates.findFirst({ where: and(eq(templates.id, input.templateId), eq(templates.projectId, input.projectId)) }),
    db.query.contacts.findFirst({ where: and(eq(contacts.id, input.contactId), eq(contacts.projectId, input.projectId)) }),
  ]);
  if (!template) throw new PermanentStepError(`Template ${input.templateId} no longer exists`);
  if (!contact) throw new PermanentStepError("The contact was deleted");
  if (!template.from) throw new PermanentStepError("The template has no from address");

  const suppressed = await findSuppressed(db, input.projectId, [contact.email]);
  const reason = suppressed.get(contact.email);
  if (reason) return { outcome: "skipped", reason: `address suppressed (${reason === "BOUNCE" ? "bounced" : "complained"})` };
  const marketing = template.type === "MARKETING";
  if (marketing && !contact.subscribed) return { outcome: "skipped", reason: "contact unsubscribed (MARKETING template)" };

  let senderDomain: string;
  try {
    senderDomain = (await requireVerifiedDomain(db, input.projectId, template.from)).name;
  } catch (err) {
    if (err instanceof ApiError) throw new PermanentStepError(err.message);
    throw err;
  }
  const emailId = newId();
  const vars = {
    data: contact.data ?? {},
    email: contact.email,
    unsubscribeUrl: await unsubscribeUrl(publicUrl(env), requireSecret(env, "LINK_SIGNING_SECRET"), emailId),
  };
  let subject: string;
  let html: string;
  try {
    subject = (await renderSubject(template.subject, vars)).replace(/[\r\n]+/g, " ").trim();
    html = await renderBody(template.body, vars);
  } catch (err) {
    throw new PermanentStepError(err instanceof ApiError ? (err.details.errors?.[0]?.message ?? err.message) : String(err));
  }
  const now = new Date();
  // Quotas as on /v1/send (src/services/quotas.ts): a step over a quota is skipped and says so.
  const storedBytes = new TextEncoder().encode(html).length;
  try {
    await assertDailyQuota(db, env, input.projectId, "QUOTA_EMAILS_PER_DAY", 1, now);
    await assertStoredBytesQuota(db, env, input.projectId, storedBytes);
  } catch (err) {
    if (err instanceof ApiError) return { outcome: "skipped", reason: err.message };
    throw err;
  }
  // Inserted only while the execution is active (a workflow deleted meanwhile
  // sends nothing) and the step has no email yet (an overlapping run of the
  // step inserted it first), with the stored-bytes count in the same atomic batch.
  const [insert] = await env.DB.batch<{ id: string }>([
    env.DB.prepare(
      `INSERT INTO emails (id, project_id, contact_id, send_id, template_id, from_address, from_name, to_address,
                           reply_to, subject, html, marketing, bulk, status, message_id, queued_at, created_at, updated_at)
       SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?12, 'QUEUED', ?13, ?14, ?14, ?14
       WHERE EXISTS (SELECT 1 FROM workflow_executions WHERE id = ?15 AND status IN ('RUNNING', 'WAITING'))
         AND NOT EXISTS (SELECT 1 FROM emails WHERE send_id = ?4 AND project_id = ?2)
       RETURNING id`,
    ).bind(
      emailId,
      input.projectId,
      contact.id,
      sendId,
      template.id,
      template.from,
      template.fromName ?? null,
      contact.email,
      template.replyTo ?? null,
      subject,
      html,
      marketing ? 1 : 0,
      `${emailId}@${senderDomain}`,
      now.getTime(),
      input.executionId,
    ),
    env.DB.prepare(`UPDATE projects SET stored_bytes = stored_bytes + ?1 WHERE id = ?2 AND EXISTS (SELECT 1 FROM emails WHERE id = ?3)`).bind(
      storedBytes,
      input.projectId,
      emailId,
    ),
  ]);
  if (insert.results.length === 0) return (await existingStepEmail(db, env, input.projectId, sendId)) ?? { outcome: "cancelled" };
  await queueStepEmail(env, input.projectId, emailId, marketing);
  return { outcome: "queued", emailId };
}
