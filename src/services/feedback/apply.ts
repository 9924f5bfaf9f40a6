import { and, eq, notExists, sql } from "drizzle-orm";
import type { Database } from "../../db/client";
import { emails, events, type JsonObject } from "../../db/schema";
import type { AfterCommit } from "../../lib/after-commit";
import type { ConfigInput } from "../../lib/config";
import { unsubscribeContactOf } from "../../store/contacts";
import { advanceStatusSql, reconcileUnknownOutcome, updateEmail } from "../../store/emails";
import { OUTCOME_UNKNOWN_PREFIX } from "../send/reasons";
import { insertEmailEvent } from "../../store/events";
import { WriteBatch, type Statement } from "../../store/batch";
import { buildSuppression } from "../suppressions";
import { newId } from "../../lib/ids";
import { recordEmailWebhookEvents, type EmailEventItem } from "../../store/webhooks/events";
import { contactWriteEvents } from "../webhooks/record";

/**
 * Delivery feedback from any provider (SES through SNS, Cloudflare Email
 * Service through a Queues event subscription), applied the same way: the
 * email record is found by the provider's message id
 * (emails.provider_message_id);
 * - delivered: DELIVERED, deliveredAt;
 * - permanent bounce: BOUNCED with the reason, an `email.bounced` event, the
 *   address suppressed (BOUNCE) and the contact unsubscribed;
 * - transient bounce: only the `email.bounced` event;
 * - complaint: COMPLAINED, an `email.complained` event, suppressed
 *   (COMPLAINT), unsubscribed;
 * - failed after acceptance: FAILED with the reason (only from SENT).
 *
 * Idempotent: statuses only advance, timestamps are set once, suppressions
 * keep their first reason, and each event is stored once per feedbackId, so
 * redeliveries change nothing.
 */

export type FeedbackOutcome =
  | "sent"
  | "delivered"
  | "bounced"
  | "transient-bounce"
  | "complained"
  | "failed"
  | "delayed"
  | "unknown-email"
  | "not-recipient"
  | "held"
  | "ignored";

/** The email a provider event names by the tags we sent it with (SES message tags), for reconciliation. */
export interface EmailRef {
  emailId: string;
  projectId: string;
}

/** A recipient a bounce names, with what the provider said about it. */
export interface BouncedRecipient {
  /** Lower case. */
  address: string;
  diagnosticCode?: string;
  smtpStatus?: string;
}

/** What every feedback may carry besides its kind: the email's tags, when the provider hands them back. */
interface Tagged {
  ref?: EmailRef;
}

export type Feedback = Tagged &
  (
    | { kind: "delivered"; providerMessageId: string; at?: Date }
    /** The provider took the message (SES's Send event): only reconciles an email whose call had no answer. */
    | { kind: "sent"; providerMessageId: string; at?: Date }
    | {
        kind: "bounce";
        providerMessageId: string;
        permanent: boolean;
        /**
         * The recipients the bounce names (SES: bouncedRecipients). When given, the bounce applies only if
         * the email's own recipient is among them, with that recipient's diagnostic; never another's.
         */
        recipients?: BouncedRecipient[];
        /** Stored with the event; redeliveries with the same id add nothing. */
        feedbackId: string;
        /** The event's data (bounceType, diagnosticCode, ...); feedbackId is added. */
        data: JsonObject;
        /** The email's error text for a permanent bounce. */
        reason: string;
        at?: Date;
      }
    | { kind: "complaint"; providerMessageId: string; feedbackId: string; data: JsonObject; detail: string; at?: Date }
    | { kind: "failed"; providerMessageId: string; reason: string; at?: Date }
    /** A temporary delay reported by the provider: only the email.delivery_delayed webhook event. */
    | { kind: "delayed"; providerMessageId: string; delayType?: string; at?: Date }
  );

/** An event for the email's contact, stored only once per (email, name, feedbackId). */
function buildFeedbackEvent(db: Database, emailId: string, name: string, data: JsonObject & { feedbackId: string }, now: Date, env: ConfigInput | undefined) {
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
  return insertEmailEvent(db.$client, env, emailId, name, data, now, notExists(duplicate));
}

/**
 * Past the project's QUOTA_EVENTS_PER_DAY (from `env`) the event is not stored; the rest still applies.
 * Webhook events (email.delivered, .bounced, .complained, .delivery_delayed, .failed and the
 * contact.unsubscribed a bounce or complaint causes) go in the same batch, each only when this
 * feedback changes the email (recorded ahead of the write, while its timestamp is still unset);
 * they leave through `afterCommit`.
 */
export async function applyFeedback(
  db: Database,
  feedback: Feedback,
  env?: ConfigInput,
  afterCommit?: AfterCommit,
  /** True when the email's project must not be written now (it is moving between shards): "held", nothing written. */
  held?: (projectId: string) => Promise<boolean>,
): Promise<FeedbackOutcome> {
  // An empty id (e.g. "<>" once normalised) names no email: mail sent without one stores NULL.
  if (!feedback.providerMessageId.trim()) return "ignored";
  const now = new Date();
  const when = feedback.at ?? now;
  const email = await feedbackEmail(db, feedback, when, now, afterCommit);
  if (!email) return "unknown-email";
  if (held && (await held(email.projectId))) return "held";
  if (feedback.kind === "sent") return "sent";
  const d1 = db.$client;
  const hook = (item: Omit<EmailEventItem, "id" | "emailId">) => recordEmailWebhookEvents(d1, [{ id: newId(), emailId: email.id, ...item }], when);
  const write = (...statements: Statement[]) => {
    const batch = new WriteBatch(d1);
    batch.add(...statements);
    return batch.run({ afterCommit });
  };

  switch (feedback.kind) {
    case "delayed":
      await write(hook({ type: "email.delivery_delayed", extra: { delayType: feedback.delayType } }));
      return "delayed";
    case "delivered":
      await write(
        hook({ type: "email.delivered", when: "unset:delivered_at" }),
        updateEmail(d1, email.id, {
          status: advanceStatusSql("DELIVERED"),
          deliveredAt: sql`COALESCE(${emails.deliveredAt}, ${when.getTime()})`,
          updatedAt: now,
        }),
      );
      return "delivered";
    case "failed":
      // Only mail still waiting for its outcome: a failure report never undoes a delivery, bounce or complaint.
      await write(
        hook({ type: "email.failed", when: "unset:failed_at", status: "SENT", extra: { reason: feedback.reason } }),
        updateEmail(d1, email.id, { status: "FAILED", failedAt: when, error: feedback.reason, updatedAt: now }, eq(emails.status, "SENT")),
      );
      return "failed";
    case "bounce": {
      let { data, reason } = feedback;
      if (feedback.recipients) {
        // Only a bounce that names this email's recipient applies to it, with that recipient's own diagnostic.
        const recipient = feedback.recipients.find((r) => r.address === email.toAddress.toLowerCase());
        if (!recipient) return "not-recipient";
        const { diagnosticCode, smtpStatus } = recipient;
        data = { ...data, ...(diagnosticCode ? { diagnosticCode } : {}), ...(smtpStatus ? { smtpStatus } : {}) };
        reason = diagnosticCode ?? reason;
      }
      const event = buildFeedbackEvent(db, email.id, "email.bounced", { ...data, feedbackId: feedback.feedbackId }, now, env);
      if (!feedback.permanent) {
        await write(event, hook({ type: "email.bounced", extra: { bounceType: "SOFT" } }));
        return "transient-bounce";
      }
      await write(
        ...undeliverable(db, email, now, {
          hook: hook({ type: "email.bounced", when: "unset:bounced_at", extra: { bounceType: "HARD" } }),
          event,
          set: { status: advanceStatusSql("BOUNCED"), bouncedAt: sql`COALESCE(${emails.bouncedAt}, ${when.getTime()})`, error: reason },
          suppression: { reason: "BOUNCE", detail: reason },
        }),
      );
      return "bounced";
    }
    case "complaint":
      await write(
        ...undeliverable(db, email, now, {
          hook: hook({ type: "email.complained", when: "unset:complained_at" }),
          event: buildFeedbackEvent(db, email.id, "email.complained", { ...feedback.data, feedbackId: feedback.feedbackId }, now, env),
          set: { status: advanceStatusSql("COMPLAINED"), complainedAt: sql`COALESCE(${emails.complainedAt}, ${when.getTime()})` },
          suppression: { reason: "COMPLAINT", detail: feedback.detail },
        }),
      );
      return "complained";
  }
}

/**
 * A permanent bounce or a complaint, as one batch: its webhook event (ahead of
 * the write), the contact.unsubscribed it causes, its event, the email's new
 * status, the address suppressed and the contact unsubscribed.
 */
function undeliverable(
  db: Database,
  email: FeedbackEmail,
  now: Date,
  change: { hook: Statement; event: Statement; set: Parameters<typeof updateEmail>[2]; suppression: { reason: "BOUNCE" | "COMPLAINT"; detail: string } },
): Statement[] {
  const d1 = db.$client;
  const unsubscribed = contactWriteEvents(d1, {
    projectId: email.projectId,
    at: now,
    ...(email.contactId ? { contactId: email.contactId } : { email: email.toAddress }),
    subscribed: false,
  });
  return [
    change.hook,
    ...unsubscribed.before,
    change.event,
    updateEmail(d1, email.id, { ...change.set, updatedAt: now }),
    // Suppressed for every stream (a hard bounce and a complaint stop transactional mail too), with its suppression.created.
    ...buildSuppression(db, email.projectId, email.toAddress, change.suppression.reason, change.suppression.detail, now),
    unsubscribeContactOf(d1, email, now),
    ...unsubscribed.after,
  ];
}

type FeedbackEmail = { id: string; projectId: string; contactId: string | null; toAddress: string };

/**
 * The email a feedback is about: by the provider's message id, or else (an email whose provider call had no
 * answer, so no id was recorded) by its tags, reconciled first: it becomes SENT with the provider's message id
 * (store/emails reconcileUnknownOutcome, with its email.sent webhook event), so the feedback then applies to
 * it as to any sent email. docs/reliability.md.
 */
async function feedbackEmail(db: Database, feedback: Feedback, when: Date, now: Date, afterCommit?: AfterCommit): Promise<FeedbackEmail | undefined> {
  const columns = { id: emails.id, projectId: emails.projectId, contactId: emails.contactId, toAddress: emails.toAddress };
  const [known] = await db.select(columns).from(emails).where(eq(emails.providerMessageId, feedback.providerMessageId)).limit(1);
  if (known || !feedback.ref) return known;
  const { emailId, projectId } = feedback.ref;
  const d1 = db.$client;
  const batch = new WriteBatch(d1);
  const reconcile = batch.add(
    ...reconcileUnknownOutcome(d1, {
      emailId,
      projectId,
      providerMessageId: feedback.providerMessageId,
      sentAt: when.getTime(),
      now: now.getTime(),
      unknownPrefix: OUTCOME_UNKNOWN_PREFIX,
    }),
  );
  batch.add(recordEmailWebhookEvents(d1, [{ id: newId(), emailId, type: "email.sent", when: "set:sent_at" }], when));
  const result = await batch.run({ afterCommit });
  if (result.rows(reconcile).length === 0) return undefined;
  const [email] = await db
    .select(columns)
    .from(emails)
    .where(and(eq(emails.id, emailId), eq(emails.projectId, projectId)))
    .limit(1);
  return email;
}
