import { and, eq, notExists, sql } from "drizzle-orm";
import type { Database } from "../../db/client";
import { contacts, emails, events, type JsonObject } from "../../db/schema";
import { advanceStatusSql, buildEmailEventInsert } from "../emails/status";
import { buildSuppression } from "../suppressions";

/**
 * SES feedback (delivered through SNS): Delivery, Bounce and Complaint, in
 * both of SES's formats, "notifications" (`notificationType`) and "event
 * publishing" through a configuration set (`eventType`). The email record is
 * found by SES's message id (emails.provider_message_id).
 *
 * Handling is idempotent: statuses only advance, timestamps are set once,
 * suppressions keep their first reason, and each bounce/complaint event is
 * stored once per SES feedback id, so SNS redeliveries change nothing.
 */

export type FeedbackOutcome =
  | "delivered"
  | "bounced"
  | "transient-bounce"
  | "complained"
  | "unknown-email"
  | "ignored";

interface SesMail {
  messageId?: unknown;
}

interface SesBounceRecipient {
  emailAddress?: unknown;
  diagnosticCode?: unknown;
  status?: unknown;
  action?: unknown;
}

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);
const str = (v: unknown): string | undefined => (typeof v === "string" && v.length > 0 ? v : undefined);
const at = (v: unknown, fallback: Date): Date => {
  const parsed = typeof v === "string" ? Date.parse(v) : NaN;
  return Number.isNaN(parsed) ? fallback : new Date(parsed);
};

/** An event for the email's contact, stored only once per (email, name, feedbackId). */
function buildFeedbackEvent(db: Database, emailId: string, name: string, data: JsonObject & { feedbackId: string }, now: Date) {
  const duplicate = db
    .select({ one: sql`1` })
    .from(events)
    .where(
      and(
        eq(events.projectId, emails.projectId),
        eq(events.name, name),
        eq(events.emailId, emailId),
        sql`json_extract(${events.data}, '$.feedbackId') = ${data.feedbackId}`,
      ),
    );
  return buildEmailEventInsert(db, emailId, name, data, now, notExists(duplicate));
}

interface EmailRef {
  id: string;
  projectId: string;
  contactId: string | null;
  toAddress: string;
}

function buildUnsubscribeContact(db: Database, email: EmailRef, now: Date) {
  const which = email.contactId
    ? eq(contacts.id, email.contactId)
    : and(eq(contacts.projectId, email.projectId), eq(contacts.email, email.toAddress.toLowerCase()));
  return db
    .update(contacts)
    .set({ subscribed: false, updatedAt: now })
    .where(and(which, eq(contacts.subscribed, true)));
}

/** Parses the SES event inside an SNS Notification and applies it. */
export async function applySesFeedback(db: Database, snsMessageId: string, messageText: string): Promise<FeedbackOutcome> {
  let message: unknown;
  try {
    message = JSON.parse(messageText);
  } catch {
    // e.g. "Successfully validated SNS topic for Amazon SES event publishing."
    return "ignored";
  }
  if (!isObj(message)) return "ignored";
  const kind = str(message.notificationType) ?? str(message.eventType);
  const mail = isObj(message.mail) ? (message.mail as SesMail) : undefined;
  const providerMessageId = str(mail?.messageId);
  if (!kind || !providerMessageId || !["Delivery", "Bounce", "Complaint"].includes(kind)) return "ignored";

  const [email] = await db
    .select({ id: emails.id, projectId: emails.projectId, contactId: emails.contactId, toAddress: emails.toAddress })
    .from(emails)
    .where(eq(emails.providerMessageId, providerMessageId))
    .limit(1);
  if (!email) return "unknown-email";
  const now = new Date();

  if (kind === "Delivery") {
    const delivery = isObj(message.delivery) ? message.delivery : {};
    const deliveredAt = at(delivery.timestamp, now);
    await db
      .update(emails)
      .set({
        status: advanceStatusSql("DELIVERED"),
        deliveredAt: sql`COALESCE(${emails.deliveredAt}, ${deliveredAt.getTime()})`,
        updatedAt: now,
      })
      .where(eq(emails.id, email.id));
    return "delivered";
  }

  if (kind === "Bounce") {
    const bounce = isObj(message.bounce) ? message.bounce : {};
    const bounceType = str(bounce.bounceType) ?? "Undetermined";
    const bounceSubType = str(bounce.bounceSubType);
    const recipients = (Array.isArray(bounce.bouncedRecipients) ? bounce.bouncedRecipients : []).filter(isObj) as SesBounceRecipient[];
    const recipient =
      recipients.find((r) => str(r.emailAddress)?.toLowerCase() === email.toAddress.toLowerCase()) ?? recipients[0];
    const diagnosticCode = str(recipient?.diagnosticCode);
    const feedbackId = str(bounce.feedbackId) ?? snsMessageId;
    const data: JsonObject & { feedbackId: string } = {
      bounceType,
      ...(bounceSubType ? { bounceSubType } : {}),
      ...(diagnosticCode ? { diagnosticCode } : {}),
      ...(str(recipient?.status) ? { smtpStatus: str(recipient?.status) } : {}),
      feedbackId,
    };
    const event = buildFeedbackEvent(db, email.id, "email.bounced", data, now);
    if (bounceType !== "Permanent") {
      await event;
      return "transient-bounce";
    }
    const bouncedAt = at(bounce.timestamp, now);
    const reason = diagnosticCode ?? `Permanent bounce${bounceSubType ? ` (${bounceSubType})` : ""}`;
    await db.batch([
      event,
      db
        .update(emails)
        .set({
          status: advanceStatusSql("BOUNCED"),
          bouncedAt: sql`COALESCE(${emails.bouncedAt}, ${bouncedAt.getTime()})`,
          error: reason,
          updatedAt: now,
        })
        .where(eq(emails.id, email.id)),
      buildSuppression(db, email.projectId, email.toAddress, "BOUNCE", reason),
      buildUnsubscribeContact(db, email, now),
    ]);
    return "bounced";
  }

  // Complaint
  const complaint = isObj(message.complaint) ? message.complaint : {};
  const complaintFeedbackType = str(complaint.complaintFeedbackType);
  const feedbackId = str(complaint.feedbackId) ?? snsMessageId;
  const complainedAt = at(complaint.timestamp, now);
  const detail = `Complaint${complaintFeedbackType ? ` (${complaintFeedbackType})` : ""}`;
  await db.batch([
    buildFeedbackEvent(
      db,
      email.id,
      "email.complained",
      { ...(complaintFeedbackType ? { complaintFeedbackType } : {}), feedbackId },
      now,
    ),
    db
      .update(emails)
      .set({
        status: advanceStatusSql("COMPLAINED"),
        complainedAt: sql`COALESCE(${emails.complainedAt}, ${complainedAt.getTime()})`,
        updatedAt: now,
      })
      .where(eq(emails.id, email.id)),
    buildSuppression(db, email.projectId, email.toAddress, "COMPLAINT", detail),
    buildUnsubscribeContact(db, email, now),
  ]);
  return "complained";
}
