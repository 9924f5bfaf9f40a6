import type { Database } from "../../db/client";
import type { AfterCommit } from "../../lib/after-commit";
import type { ConfigInput } from "../../lib/config";
import { EMAIL_TAG, PROJECT_TAG } from "../../outside/providers/ses";
import { applyFeedback, type EmailRef, type FeedbackOutcome } from "./apply";

/**
 * SES feedback (delivered through SNS): Delivery, Bounce and Complaint, in
 * both of SES's formats, "notifications" (`notificationType`) and "event
 * publishing" through a configuration set (`eventType`). The email record is
 * found by SES's message id (emails.provider_message_id), or, for an email whose
 * SendEmail call had no answer (no id recorded), by the message tags it was sent
 * with (event publishing only), which reconciles it (./apply.ts); a Send event
 * does only that.
 *
 * What each one does to the email, its contact and the suppression list is
 * the same for every provider: see ./apply.ts. Each bounce/complaint event is
 * stored once per SES feedback id, so SNS redeliveries change nothing.
 */

export type { FeedbackOutcome } from "./apply";

interface SesMail {
  messageId?: unknown;
  timestamp?: unknown;
  tags?: unknown;
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
  /** Where the webhook events its batch recorded leave (the request's door). */
  afterCommit?: AfterCommit,
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
  if (!kind || !providerMessageId || !["Send", "Delivery", "Bounce", "Complaint", "DeliveryDelay"].includes(kind)) return "ignored";
  const ref = emailRefOf(mail);

  if (kind === "Send") {
    // SES took the message: only reconciles an email whose provider call had no answer.
    if (!ref) return "ignored";
    return applyFeedback(db, { kind: "sent", providerMessageId, ref, at: at(mail?.timestamp) }, env, afterCommit);
  }

  if (kind === "Delivery") {
    const delivery = isObj(message.delivery) ? message.delivery : {};
    return applyFeedback(db, { kind: "delivered", providerMessageId, ref, at: at(delivery.timestamp) }, env, afterCommit);
  }

  if (kind === "DeliveryDelay") {
    const delay = isObj(message.deliveryDelay) ? message.deliveryDelay : {};
    return applyFeedback(db, { kind: "delayed", providerMessageId, ref, delayType: str(delay.delayType), at: at(delay.timestamp) }, env, afterCommit);
  }

  if (kind === "Bounce") {
    const bounce = isObj(message.bounce) ? message.bounce : {};
    const bounceType = str(bounce.bounceType) ?? "Undetermined";
    const bounceSubType = str(bounce.bounceSubType);
    // Only the recipients SES names: a bounce that does not name the email's own recipient changes nothing.
    const recipients = (Array.isArray(bounce.bouncedRecipients) ? bounce.bouncedRecipients : []).filter(isObj) as SesBounceRecipient[];
    return applyFeedback(
      db,
      {
        kind: "bounce",
        providerMessageId,
        ref,
        permanent: bounceType === "Permanent",
        feedbackId: str(bounce.feedbackId) ?? snsMessageId,
        recipients: recipients.flatMap((r) => {
          const address = str(r.emailAddress)?.toLowerCase();
          return address ? [{ address: bareAddress(address), diagnosticCode: str(r.diagnosticCode), smtpStatus: str(r.status) }] : [];
        }),
        data: { bounceType, ...(bounceSubType ? { bounceSubType } : {}) },
        reason: `Permanent bounce${bounceSubType ? ` (${bounceSubType})` : ""}`,
        at: at(bounce.timestamp),
      },
      env,
      afterCommit,
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
      ref,
      feedbackId: str(complaint.feedbackId) ?? snsMessageId,
      data: complaintFeedbackType ? { complaintFeedbackType } : {},
      detail: `Complaint${complaintFeedbackType ? ` (${complaintFeedbackType})` : ""}`,
      at: at(complaint.timestamp),
    },
    env,
    afterCommit,
  );
}

/**
 * The project an SES notification names by its message tag (em_project), to find the project's data
 * shard (src/db/shards.ts routeOf); undefined for a notification without tags (identity notifications).
 */
export function sesNotificationProject(messageText: string): string | undefined {
  try {
    const message = JSON.parse(messageText) as unknown;
    return isObj(message) && isObj(message.mail) ? emailRefOf(message.mail as SesMail)?.projectId : undefined;
  } catch {
    return undefined;
  }
}

/** "Name <a@b>" or "a@b" -> "a@b" (SES lists bounced recipients as plain addresses, but a display name costs nothing to drop). */
const bareAddress = (value: string) => /<([^>]+)>\s*$/.exec(value)?.[1]?.trim() ?? value.trim();

/**
 * The email and project our SendEmail tagged the message with (EmailTags em_email, em_project; see
 * providers/ses.ts), as SES event publishing hands them back: `mail.tags` maps each name to a list of values.
 * Only events through a configuration set carry tags; identity notifications do not.
 */
function emailRefOf(mail: SesMail | undefined): EmailRef | undefined {
  const tags = isObj(mail?.tags) ? mail.tags : undefined;
  const first = (name: string) => {
    const value = tags?.[name];
    return str(Array.isArray(value) ? value[0] : value);
  };
  const emailId = first(EMAIL_TAG);
  const projectId = first(PROJECT_TAG);
  return emailId && projectId ? { emailId, projectId } : undefined;
}
