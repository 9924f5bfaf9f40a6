import { and, eq, sql } from "drizzle-orm";
import type { Database } from "../../db/client";
import { contacts, emails, events } from "../../db/schema";
import { newId } from "../../lib/ids";

/** "unchanged": already unsubscribed, or the contact was deleted since. */
export type UnsubscribeOutcome = "unsubscribed" | "unchanged" | "unknown-email";

/**
 * Unsubscribes the contact an email was sent to. The `contact.unsubscribed`
 * event is written in the same atomic batch as the update and only while the
 * contact is still subscribed, so repeating the request records nothing new.
 */
export async function unsubscribeByEmail(
  db: Database,
  emailId: string,
  method: "one-click" | "page",
): Promise<UnsubscribeOutcome> {
  const [email] = await db
    .select({ projectId: emails.projectId, contactId: emails.contactId })
    .from(emails)
    .where(eq(emails.id, emailId))
    .limit(1);
  if (!email) return "unknown-email";
  if (!email.contactId) return "unchanged";
  const contactId = email.contactId;
  const now = new Date();
  const stillSubscribed = and(
    eq(contacts.id, contactId),
    eq(contacts.projectId, email.projectId),
    eq(contacts.subscribed, true),
  );
  const [, updated] = await db.batch([
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
        .where(stillSubscribed),
    ),
    db.update(contacts).set({ subscribed: false, updatedAt: now }).where(stillSubscribed).returning({ id: contacts.id }),
  ]);
  return updated.length > 0 ? "unsubscribed" : "unchanged";
}
