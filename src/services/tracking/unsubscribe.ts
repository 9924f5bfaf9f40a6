import { and, eq } from "drizzle-orm";
import type { Database } from "../../db/client";
import { contacts, emails } from "../../db/schema";
import type { AfterCommit } from "../../lib/after-commit";
import type { ConfigInput } from "../../lib/config";
import { WriteBatch } from "../../store/batch";
import { upsertContacts } from "../../store/contacts";
import { insertContactEvent } from "../../store/events";
import { insertUnsubscribeSuppression } from "../../store/suppressions";
import { contactWriteEvents } from "../webhooks/record";
import { optOutOfTopicByEmail } from "../topics";

/** "unchanged": already unsubscribed. */
export type UnsubscribeOutcome = "unsubscribed" | "unchanged" | "unknown-email";

/** Whether the email of an unsubscribe link still exists (the confirmation page changes nothing). */
export async function emailExists(db: Database, emailId: string): Promise<boolean> {
  const [row] = await db.select({ id: emails.id }).from(emails).where(eq(emails.id, emailId)).limit(1);
  return Boolean(row);
}

/**
 * Unsubscribes the address an email was sent to, in the email's project. The
 * contact is found by address, not by the email's contact id, so an
 * unsubscribe still holds when the contact was deleted since (or deleted and
 * created again): a missing contact is created unsubscribed, which keeps the
 * address out of marketing mail. The `contact.unsubscribed` event is written
 * in the same atomic batch and only when the subscription actually changes,
 * so repeating the request records nothing new. Past the project's
 * events-per-day quota the unsubscribe happens, its event is not stored.
 */
export async function unsubscribeByEmail(
  db: Database,
  emailId: string,
  method: "one-click" | "page",
  env?: ConfigInput,
  /** Where the webhook events (contact.unsubscribed, or contact.created for a contact created unsubscribed) leave. */
  afterCommit?: AfterCommit,
): Promise<UnsubscribeOutcome> {
  const [email] = await db
    .select({ projectId: emails.projectId, to: emails.toAddress, topicId: emails.topicId })
    .from(emails)
    .where(eq(emails.id, emailId))
    .limit(1);
  if (!email) return "unknown-email";
  // Mail aimed at a topic: out of that topic only (other topics and the subscription stay); the
  // whole address only when the contact or the topic is gone.
  if (email.topicId) {
    const source = method === "one-click" ? "one_click" : "page";
    const outcome = await optOutOfTopicByEmail(db, env, { projectId: email.projectId, email: email.to, topicId: email.topicId, emailId, source }, afterCommit);
    if (outcome !== "missing") return outcome;
  }
  const now = new Date();
  const upsert = upsertContacts(db.$client, email.projectId, [{ email: email.to, subscribed: false }], {
    onExisting: "unsubscribe",
    subscribedByDefault: false,
    now,
  });
  const [createdId] = upsert.ids;
  const event = (where: ReturnType<typeof and>) =>
    insertContactEvent(db.$client, env, email.projectId, { name: "contact.unsubscribed", data: { method }, emailId, now }, where);
  const hooks = contactWriteEvents(db.$client, { projectId: email.projectId, at: now, email: email.to, creates: true, subscribed: false });
  const batch = new WriteBatch(db.$client);
  // An existing, still subscribed contact: the event is written before the upsert below changes it.
  batch.add(event(and(eq(contacts.projectId, email.projectId), eq(contacts.email, email.to), eq(contacts.subscribed, true))), ...hooks.before);
  const upserted = batch.add(...upsert.statements);
  // A contact created just now (the old one was deleted): its event.
  batch.add(...hooks.after, event(eq(contacts.id, createdId)));
  // The address on the suppression list for broadcast mail (UNSUBSCRIBE), even when its contact was created just now.
  batch.add(insertUnsubscribeSuppression(db.$client, email.projectId, email.to, now));
  const result = await batch.run({ afterCommit });
  // The upsert returns a contact only when it was created or was subscribed until now.
  return result.rows(upserted).length > 0 ? "unsubscribed" : "unchanged";
}
