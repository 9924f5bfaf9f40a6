import { and, eq, inArray, lt, or, sql } from "drizzle-orm";
import { getDb, runBatch, type Database } from "../../db/client";
import type { SQLiteUpdateSetSource } from "drizzle-orm/sqlite-core";
import { emails, projects, type Email, type EmailStatus } from "../../db/schema";
import type { Env, SendEmailMessage } from "../../env";
import { publicUrl, requireSecret } from "../../lib/config";
import { getProvider, ProviderError, type EmailProvider } from "../providers";
import { addTracking, unsubscribeUrl } from "../tracking/links";
import { loadAttachments } from "./attachments";
import { buildMime } from "./mime";

/** A claim older than this is taken to belong to a consumer that died mid-send. */
export const CLAIM_LEASE_MS = 15 * 60 * 1000;
const DEFAULT_SEND_RATE = 14;

/** Exponential back-off with jitter for provider throttling and outages: ~5 s, 10 s, 20 s ... capped at 15 min. */
export function backoffSeconds(attempt: number): number {
  const base = Math.min(900, 5 * 2 ** Math.max(0, attempt - 1));
  return Math.round(base + Math.random() * base * 0.5);
}

function sendRate(env: Env): number {
  const configured = Number(env.SEND_RATE_PER_SECOND);
  return Number.isFinite(configured) && configured > 0 ? configured : DEFAULT_SEND_RATE;
}

/**
 * Claims an email for sending: only one invocation can move it from QUEUED
 * (or from a SENDING claim whose lease ran out) to SENDING. A redelivered
 * message for an email already SENT, FAILED or being sent claims nothing.
 */
async function claimEmail(db: Database, emailId: string): Promise<Email | undefined> {
  const now = new Date();
  const [claimed] = await db
    .update(emails)
    .set({ status: "SENDING", sendingAt: now, updatedAt: now, attempts: sql`${emails.attempts} + 1` })
    .where(
      and(
        eq(emails.id, emailId),
        or(
          eq(emails.status, "QUEUED"),
          and(eq(emails.status, "SENDING"), lt(emails.sendingAt, new Date(now.getTime() - CLAIM_LEASE_MS))),
        ),
      ),
    )
    .returning();
  return claimed;
}

async function composeMessage(db: Database, env: Env, email: Email, trackingEnabled: boolean): Promise<string> {
  const baseUrl = publicUrl(env);
  const secret = requireSecret(env, "LINK_SIGNING_SECRET");
  const html = trackingEnabled
    ? await addTracking(email.html, { emailId: email.id, baseUrl, secret, trackOpens: true, trackClicks: true })
    : email.html;
  const attachments = email.hasAttachments ? await loadAttachments(db, email.sendId) : [];
  const fromDomain = email.fromAddress.split("@")[1];
  return buildMime(email, {
    html,
    attachments,
    listUnsubscribe: email.marketing
      ? { url: await unsubscribeUrl(baseUrl, secret, email.id), mailto: `mailto:unsubscribe@${fromDomain}?subject=unsubscribe` }
      : undefined,
  });
}

async function markOutcome(db: Database, emailId: string, set: SQLiteUpdateSetSource<typeof emails>) {
  await db
    .update(emails)
    .set({ ...set, updatedAt: new Date() })
    .where(and(eq(emails.id, emailId), eq(emails.status, "SENDING")));
}

/** Sends one claimed email and records what happened; the queue message is acked or retried accordingly. */
async function deliverOne(
  db: Database,
  env: Env,
  provider: EmailProvider,
  message: Message<SendEmailMessage>,
  trackingEnabled: boolean,
): Promise<void> {
  const email = await claimEmail(db, message.body.emailId);
  if (!email) {
    message.ack();
    return;
  }
  let providerMessageId: string;
  try {
    const raw = await composeMessage(db, env, email, trackingEnabled);
    ({ providerMessageId } = await provider.send({
      emailId: email.id,
      projectId: email.projectId,
      from: email.fromAddress,
      to: email.toAddress,
      subject: email.subject,
      raw,
    }));
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    if (err instanceof ProviderError && !err.retryable) {
      await markOutcome(db, email.id, { status: "FAILED", failedAt: new Date(), error: reason });
      message.ack();
      return;
    }
    // Give the claim back so the retry (or the sweep) can take it again.
    await markOutcome(db, email.id, { status: "QUEUED", error: reason });
    message.retry({ delaySeconds: backoffSeconds(message.attempts) });
    return;
  }
  // The provider has the message: from here on it must never be sent again,
  // so the outcome is recorded (with retries) and the message acked either way.
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const now = new Date();
      await markOutcome(db, email.id, { status: "SENT", sentAt: now, providerMessageId, error: null });
      break;
    } catch (err) {
      console.error("recording SENT failed", email.id, err);
    }
  }
  message.ack();
}

/**
 * The send queue's consumer. Messages are grouped by project; each project's
 * token bucket (its Durable Object) decides how many may go now, and the rest
 * are put back on the queue with a delay (as new messages, so waiting for the
 * rate limit never uses up delivery retries).
 */
export async function handleSendBatch(batch: MessageBatch<SendEmailMessage>, env: Env): Promise<void> {
  const db = getDb(env.DB);
  let provider: EmailProvider;
  try {
    provider = getProvider(env, db);
  } catch (err) {
    // A deployment problem (e.g. missing credentials): keep the mail, say why on each record, retry.
    const reason = err instanceof Error ? err.message : String(err);
    console.error("email provider unavailable", reason);
    await updateEmailsById(db, emailIdsOf(batch), ["QUEUED"], { error: reason, updatedAt: new Date() });
    for (const message of batch.messages) message.retry({ delaySeconds: backoffSeconds(message.attempts) });
    return;
  }

  const byProject = new Map<string, Message<SendEmailMessage>[]>();
  for (const message of batch.messages) {
    const body = message.body as Partial<SendEmailMessage> | undefined;
    if (typeof body?.emailId !== "string" || typeof body.projectId !== "string") {
      console.error("dropping malformed send message", message.id);
      message.ack();
      continue;
    }
    byProject.set(body.projectId, [...(byProject.get(body.projectId) ?? []), message]);
  }
  if (byProject.size === 0) return;

  const tracking = new Map(
    (
      await db
        .select({ id: projects.id, trackingEnabled: projects.trackingEnabled })
        .from(projects)
        .where(inArray(projects.id, [...byProject.keys()]))
    ).map((p) => [p.id, p.trackingEnabled]),
  );

  await Promise.all(
    [...byProject].map(async ([projectId, messages]) => {
      const limiter = env.PROJECT_LIMITER.get(env.PROJECT_LIMITER.idFromName(`send:${projectId}`));
      const { granted, retryAfterMs } = await limiter.takeSendTokens(messages.length, sendRate(env));
      const deferred = messages.slice(granted);
      if (deferred.length > 0) await deferMessages(env, deferred, retryAfterMs);
      await Promise.all(
        messages.slice(0, granted).map((m) => deliverOne(db, env, provider, m, tracking.get(projectId) ?? true)),
      );
    }),
  );
}

async function deferMessages(env: Env, messages: Message<SendEmailMessage>[], retryAfterMs: number) {
  const delaySeconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
  try {
    await env.EMAIL_QUEUE.sendBatch(messages.map((m) => ({ body: m.body, delaySeconds })));
    for (const m of messages) m.ack();
  } catch {
    for (const m of messages) m.retry({ delaySeconds });
  }
}

/** Dead-letter consumer: a message that exhausted its retries marks its email FAILED (if it is not done already). */
export async function handleDeadLetters(batch: MessageBatch<SendEmailMessage>, env: Env): Promise<void> {
  const db = getDb(env.DB);
  const now = new Date();
  await updateEmailsById(db, emailIdsOf(batch), ["QUEUED", "SENDING"], {
    status: "FAILED",
    failedAt: now,
    updatedAt: now,
    error: sql`'Gave up after ' || ${emails.attempts} || ' attempts' || COALESCE(': ' || ${emails.error}, '')`,
  });
  for (const m of batch.messages) m.ack();
}

/**
 * Scheduled sweep: emails left QUEUED (their enqueue failed) or SENDING past
 * the claim lease (their consumer died) are enqueued again. Claims make a
 * duplicate message harmless.
 */
export async function sweepStuckEmails(env: Env, now = new Date(), limit = 500): Promise<number> {
  const db = getDb(env.DB);
  const cutoff = new Date(now.getTime() - CLAIM_LEASE_MS);
  const stuck = await db
    .select({ id: emails.id, projectId: emails.projectId })
    .from(emails)
    .where(and(inArray(emails.status, ["QUEUED", "SENDING"]), lt(emails.updatedAt, cutoff)))
    .limit(limit);
  for (let i = 0; i < stuck.length; i += 100) {
    await env.EMAIL_QUEUE.sendBatch(stuck.slice(i, i + 100).map((e) => ({ body: { emailId: e.id, projectId: e.projectId } })));
  }
  // Touch them so the next sweep waits another lease before trying again.
  await updateEmailsById(db, stuck.map((e) => e.id), ["QUEUED"], { updatedAt: now });
  return stuck.length;
}

const emailIdsOf = (batch: MessageBatch<SendEmailMessage>) =>
  batch.messages.map((m) => (m.body as Partial<SendEmailMessage>)?.emailId).filter((id): id is string => typeof id === "string");

/** Updates the emails with these ids that are in one of `statuses`: statements under D1's 100-parameter limit, in one batch. */
async function updateEmailsById(db: Database, ids: string[], statuses: EmailStatus[], set: SQLiteUpdateSetSource<typeof emails>) {
  const statements = [];
  for (let i = 0; i < ids.length; i += 90) {
    statements.push(db.update(emails).set(set).where(and(inArray(emails.id, ids.slice(i, i + 90)), inArray(emails.status, statuses))));
  }
  await runBatch(db, statements);
}
