import { and, eq, sql } from "drizzle-orm";
import type { Database } from "../../db/client";
import { contacts, emails } from "../../db/schema";
import type { AfterCommit } from "../../lib/after-commit";
import type { ConfigInput } from "../../lib/config";
import { WriteBatch } from "../../store/batch";
import { updateContactById } from "../../store/contacts";
import { insertContactEvent, insertTopicChangeEvents } from "../../store/events";
import { confirmPendingTopics } from "../../store/topics";
import { recordTopicsUpdated } from "../../store/webhooks/events";
import { newId } from "../../lib/ids";
import { queueConfirmedContactCreated } from "../../store/workflow-outbox";
import { contactWriteEvents } from "../webhooks/record";

/** How long a double opt-in confirm link works after its email was created. */
export const CONFIRM_LINK_TTL_MS = 7 * 24 * 60 * 60 * 1000;

/**
 * "unchanged": the contact was subscribed already; "used": this link confirmed
 * the contact before (a link is single-use, so replaying it after an
 * unsubscribe does not subscribe them again).
 */
export type ConfirmOutcome = "confirmed" | "unchanged" | "used" | "unknown" | "expired";

/** The confirmation email and its contact, or why the link leads nowhere. */
export async function findConfirmation(db: Database, emailId: string, now = new Date()) {
  const [row] = await db
    .select({
      projectId: emails.projectId,
      createdAt: emails.createdAt,
      contactId: contacts.id,
      email: contacts.email,
      subscribed: contacts.subscribed,
      // The contact.subscribed event this link recorded when it was used (events_contact_name_created_idx).
      used: sql<number>`EXISTS (SELECT 1 FROM events WHERE events.contact_id = ${contacts.id} AND events.name = 'contact.subscribed' AND events.email_id = ${emails.id})`,
      // The keys of the double opt-in topics the contact opted into and has not confirmed yet.
      pendingTopics: sql<string>`(SELECT json_group_array(t.key) FROM contact_topics AS ct JOIN topics AS t ON t.id = ct.topic_id WHERE ct.contact_id = ${contacts.id} AND ct.status = 'PENDING')`,
    })
    .from(emails)
    .innerJoin(contacts, and(eq(contacts.id, emails.contactId), eq(contacts.projectId, emails.projectId)))
    .where(eq(emails.id, emailId))
    .limit(1);
  if (!row) return { outcome: "unknown" as const };
  if (now.getTime() - row.createdAt.getTime() > CONFIRM_LINK_TTL_MS) return { outcome: "expired" as const };
  return { outcome: "valid" as const, ...row, used: Boolean(row.used), pendingTopics: JSON.parse(row.pendingTopics ?? "[]") as string[] };
}

/**
 * Subscribes the contact a double opt-in confirmation email was sent to (in
 * that email's project: the token names the email, the email its project and
 * contact). One atomic batch: the `contact.subscribed` event (source system,
 * data `{method: "double-opt-in"}`), the webhook event and the subscription;
 * the D1 trigger of migration 0006 queues CONTACT_SUBSCRIBED workflows, and
 * the batch's first statement the CONTACT_CREATED ones the contact did not
 * start while unconfirmed (src/services/events.ts dropped them).
 * Idempotent: a subscribed contact is left as it is. Single-use: a link that
 * confirmed its contact once never subscribes them again (an unsubscribe after
 * the confirmation stands).
 */
export async function confirmSubscription(
  db: Database,
  env: ConfigInput | undefined,
  emailId: string,
  /** Where its webhook events leave (the request's door). */
  afterCommit?: AfterCommit,
  now = new Date(),
): Promise<{ outcome: ConfirmOutcome; projectId?: string }> {
  const found = await findConfirmation(db, emailId, now);
  if (found.outcome !== "valid") return { outcome: found.outcome };
  const batch = new WriteBatch(db.$client);
  // Double opt-in topics: every PENDING choice of the contact becomes OPT_IN (an event each, one webhook event).
  const topicKeys = found.pendingTopics;
  if (topicKeys.length > 0) {
    batch.add(
      confirmPendingTopics(db.$client, found.contactId, now),
      insertTopicChangeEvents(db.$client, env, {
        projectId: found.projectId,
        email: found.email,
        source: "confirm",
        now,
        ids: Object.fromEntries(topicKeys.map((key) => [key, newId()])),
        emailId,
      }),
      recordTopicsUpdated(db.$client, { id: newId(), projectId: found.projectId, email: found.email, source: "confirm", at: now }),
    );
  }
  if (found.subscribed || found.used) {
    if (topicKeys.length === 0) return { outcome: found.subscribed ? "unchanged" : "used", projectId: found.projectId };
    await batch.run({ afterCommit });
    return { outcome: "confirmed", projectId: found.projectId };
  }
  const hooks = contactWriteEvents(db.$client, { projectId: found.projectId, at: now, email: found.email, subscribed: true });
  batch.add(
    // The CONTACT_CREATED workflows the unconfirmed contact did not start (first: it reads the state before this confirmation).
    queueConfirmedContactCreated(db.$client, found.projectId, found.contactId, emailId, now.getTime()),
    insertContactEvent(
      db.$client,
      env,
      found.projectId,
      { name: "contact.subscribed", data: { method: "double-opt-in" }, emailId, now },
      and(eq(contacts.id, found.contactId), eq(contacts.subscribed, false)),
    ),
    ...hooks.before,
    updateContactById(db.$client, found.projectId, found.contactId, { subscribed: true }, now),
    ...hooks.after,
  );
  await batch.run({ afterCommit });
  return { outcome: "confirmed", projectId: found.projectId };
}
