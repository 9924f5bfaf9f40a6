import { eq } from "drizzle-orm";
import type { Database } from "../../db/client";
import { emails } from "../../db/schema";
import type { ConfigInput } from "../../lib/config";
import { applyFeedback, type FeedbackOutcome, type WebhookHandOver } from "./apply";

/**
 * SES feedback (delivered through SNS): Delivery, Bounce and Complaint, in
 * both of SES's formats, "notifications" (`notificationType`) and "event
 * publishing" through a configuration set (`eventType`). The email record is
 * found by SES's message id (emails.provider_message_id).
 *
 * What each one does to the email, its contact and the suppression list is
 * the same for every provider: see ./apply.ts. Each bounce/complaint event is
 * stored once per SES feedback id, so SNS redeliveries change nothing.
 */

export type { FeedbackOutcome } from "./apply";

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
const at = (v: unknown): Date | undefined => {
  const parsed = typeof v === "string" ? Date.parse(v) : NaN;
  return Number.isNaN(parsed) ? undefined : new Date(parsed);
};

/** Parses the SES event inside an SNS Notification and applies it. */
export async function applySesFeedback(
  db: Database,
  snsMessageId: string,
  messageText: string,
  env?: ConfigInput,
  handOver?: WebhookHandOver,
): Promise<FeedbackOutcome> {
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
  if (!kind || !providerMessageId || !["Delivery", "Bounce", "Complaint", "DeliveryDelay"].includes(kind)) return "ignored";

  if (kind === "Delivery") {
    const delivery = isObj(message.delivery) ? message.delivery : {};
    return applyFeedback(db, { kind: "delivered", providerMessageId, at: at(delivery.timestamp) }, env, handOver);
  }

  if (kind === "DeliveryDelay") {
    const delay = isObj(message.deliveryDelay) ? message.deliveryDelay : {};
    return applyFeedback(db, { kind: "delayed", providerMessageId, delayType: str(delay.delayType), at: at(delay.timestamp) }, env, handOver);
  }

  if (kind === "Bounce") {
    const bounce = isObj(message.bounce) ? message.bounce : {};
    const bounceType = str(bounce.bounceType) ?? "Undetermined";
    const bounceSubType = str(bounce.bounceSubType);
    const recipients = (Array.isArray(bounce.bouncedRecipients) ? bounce.bouncedRecipients : []).filter(isObj) as SesBounceRecipient[];
    // The email's own recipient when SES lists several.
    const to = await recipientOf(db, providerMessageId);
    const recipient = recipients.find((r) => str(r.emailAddress)?.toLowerCase() === to) ?? recipients[0];
    const diagnosticCode = str(recipient?.diagnosticCode);
    return applyFeedback(
      db,
      {
        kind: "bounce",
        providerMessageId,
        permanent: bounceType === "Permanent",
        feedbackId: str(bounce.feedbackId) ?? snsMessageId,
        data: {
          bounceType,
          ...(bounceSubType ? { bounceSubType } : {}),
          ...(diagnosticCode ? { diagnosticCode } : {}),
          ...(str(recipient?.status) ? { smtpStatus: str(recipient?.status)! } : {}),
        },
        reason: diagnosticCode ?? `Permanent bounce${bounceSubType ? ` (${bounceSubType})` : ""}`,
        at: at(bounce.timestamp),
      },
      env,
      handOver,
    );
  }

  // Complaint
  const complaint = isObj(message.complaint) ? message.complaint : {};
  const complaintFeedbackType = str(complaint.complaintFeedbackType);
  return applyFeedback(
    db,
    {
      kind: "complaint",
      providerMessageId,
      feedbackId: str(complaint.feedbackId) ?? snsMessageId,
      data: complaintFeedbackType ? { complaintFeedbackType } : {},
      detail: `Complaint${complaintFeedbackType ? ` (${complaintFeedbackType})` : ""}`,
      at: at(complaint.timestamp),
    },
    env,
    handOver,
  );
}

async function recipientOf(db: Database, providerMessageId: string): Promise<string | undefined> {
  const [email] = await db.select({ toAddress: emails.toAddress }).from(emails).where(eq(emails.providerMessageId, providerMessageId)).limit(1);
  return email?.toAddress.toLowerCase();
}
