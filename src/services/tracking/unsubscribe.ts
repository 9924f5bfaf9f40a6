import { and, eq, sql } from "drizzle-orm";
import type { Database } from "../../db/client";
import { contacts, emails, events } from "../../db/schema";
import { newId } from "../../lib/ids";
import { eventsPerDay, underDailyEventQuota } from "../quotas";

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
 * so repeating the request records nothing new.
 */
export async function unsubscribeByEmail(
  db: Database,
  emailId: string,
  method: "one-click" | "page",
  eventQuota = eventsPerDay(undefined),
): Promise<UnsubscribeOutcome> {
  const [email] = await db.select({ projectId: emails.projectId, to: emails.toAddress }).from(emails).where(eq(emails.id, emailId)).limit(1);
  if (!email) return "unknown-email";
  const now = new Date();
  const createdId = newId();
  const eventFrom = (where: ReturnType<typeof and>) =>
    db.insert(events).select(
      db
        .select({
          id: sql`${newId()}`.as("id"),
          projectId: contacts.projectId,
          contactId: contacts.id,
          name: sql`'contact.unsubscribed'`.as("name"),
          data: sql`${JSON.stringify({ method })}`.as("data"),
          emailId: sql`${emailId}`.as("email_id"),
          createdAt: sql`${now.getTime()}`.as("created_at"),
        })
        .from(contacts)
        // Past the project's events-per-day quota the unsubscribe happens, its event is not stored.
        .where(and(where, underDailyEventQuota(email.projectId, eventQuota, now))),
    );
  const [, updated] = await db.batch([
    // An existing, still subscribed contact: the event is written before the update below changes it.
    eventFrom(and(eq(contacts.projectId, email.projectId), eq(contacts.email, email.to), eq(contacts.subscribed, true))),
    db
      .insert(contacts)
      .values({ id: createdId, projectId: email.projectId, email: email.to, subscribed: false, createdAt: now, updatedAt: now })
      .onConflictDoUpdate({
        target: [contacts.projectId, contacts.email],
        set: { subscribed: false, updatedAt: now },
        setWhere: eq(contacts.subscribed, true),
      })
      .returning({ id: contacts.id }),
    // A contact created just now (the old one was deleted): its event.
    eventFrom(eq(contacts.id, createdId)),
  ]);
  return updated.length > 0 ? "unsubscribed" : "unchanged";
}
