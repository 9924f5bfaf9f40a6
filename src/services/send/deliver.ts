import { and, eq, inArray, lt, sql } from "drizzle-orm";
import { getDb, runBatch, type Database } from "../../db/client";
import type { SQLiteUpdateSetSource } from "drizzle-orm/sqlite-core";
import { emails, projects, type Email, type EmailStatus } from "../../db/schema";
import type { SendKind } from "../../durable/project-limiter";
import type { Env, SendEmailMessage } from "../../env";
import { publicUrl, readConfig, requireSecret } from "../../lib/config";
import { getProvider, ProviderError, type EmailProvider } from "../providers";
import type { MessageParts } from "../providers/types";
import { addTracking, unsubscribeUrl } from "../tracking/links";
import { loadAttachments, MAX_RAW_MESSAGE_BYTES } from "./attachments";
import { buildMime, messageHeaders, plainTextOf } from "./mime";

/** A claim older than this is taken to belong to a consumer that died mid-send. */
export const CLAIM_LEASE_MS = 15 * 60 * 1000;

/** Exponential back-off with jitter for provider throttling and outages: ~5 s, 10 s, 20 s ... capped at 15 min. */
export function backoffSeconds(attempt: number): number {
  const base = Math.min(900, 5 * 2 ** Math.max(0, attempt - 1));
  return Math.round(base + Math.random() * base * 0.5);
}

/** The reason stored on mail of a disabled project. */
export const PROJECT_DISABLED_REASON = "Not sent: the project is disabled";
/** The reason stored on an email whose consumer stopped after claiming it (see sweepStuckEmails). */
export const OUTCOME_UNKNOWN_REASON =
  "Outcome unknown: the sending attempt stopped after claiming this email; it may or may not have reached the provider, so it is not sent again";

const projectEnabled = sql`NOT EXISTS (SELECT 1 FROM ${projects} WHERE ${projects.id} = ${emails.projectId} AND ${projects.disabled} = 1)`;

/**
 * Claims emails for sending in one round trip: only one invocation can move
 * an email from QUEUED to SENDING, and only while its project is enabled. A
 * redelivered message for an email already SENT, FAILED or being sent claims
 * nothing. A SENDING claim is never taken over: whether its provider call
 * happened is unknown, so the sweep settles it instead (sweepStuckEmails).
 */
async function claimEmails(db: Database, projectId: string, emailIds: string[]): Promise<(Email | undefined)[]> {
  const now = new Date();
  const results = await runBatch(
    db,
    emailIds.map((id) =>
      db
        .update(emails)
        .set({ status: "SENDING", sendingAt: now, updatedAt: now, attempts: sql`${emails.attempts} + 1` })
        .where(and(eq(emails.id, id), eq(emails.projectId, projectId), eq(emails.status, "QUEUED"), projectEnabled))
        .returning(),
    ),
  );
  return results.map((rows) => (rows as Email[])[0]);
}

async function composeMessage(
  db: Database,
  env: Env,
  email: Email,
  trackingEnabled: boolean,
): Promise<{ raw: string; parts: MessageParts }> {
  const baseUrl = publicUrl(env);
  const secret = requireSecret(env, "LINK_SIGNING_SECRET");
  // Campaign test sends are never tracked (email.tracked false), whatever the project's switch says.
  const html = trackingEnabled && email.tracked
    ? await addTracking(email.html, { emailId: email.id, baseUrl, secret, trackOpens: true, trackClicks: true })
    : email.html;
  const attachments = email.hasAttachments ? await loadAttachments(db, email.sendId) : [];
  const fromDomain = email.fromAddress.split("@")[1];
  const listUnsubscribe = email.marketing
    ? { url: await unsubscribeUrl(baseUrl, secret, email.id), mailto: `mailto:unsubscribe@${fromDomain}?subject=unsubscribe` }
    : undefined;
  const text = plainTextOf(html);
  return {
    raw: buildMime(email, { html, text, attachments, listUnsubscribe }),
    parts: {
      fromName: email.fromName ?? undefined,
      toName: email.toName ?? undefined,
      replyTo: email.replyTo ?? undefined,
      html,
      text,
      headers: messageHeaders(email, { listUnsubscribe }),
      attachments,
    },
  };
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
  email: Email,
  trackingEnabled: boolean,
): Promise<void> {
  let providerMessageId: string;
  try {
    const composed = await composeMessage(db, env, email, trackingEnabled);
    let raw: string | null = composed.raw;
    if (raw.length > MAX_RAW_MESSAGE_BYTES) {
      throw new ProviderError(`The message is ${raw.length} bytes, over the provider's limit of ${MAX_RAW_MESSAGE_BYTES} bytes`, false);
    }
    const outgoing = { emailId: email.id, projectId: email.projectId, from: email.fromAddress, to: email.toAddress, subject: email.subject, raw, parts: composed.parts };
    raw = null;
    ({ providerMessageId } = await provider.send(outgoing));
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    if (err instanceof ProviderError && !err.retryable) {
      await markOutcome(db, email.id, { status: "FAILED", failedAt: new Date(), error: reason });
      message.ack();
      return;
    }
    // Give the claim back so the retry can take it again. This is the one
    // at-least-once path left: a provider call that timed out or lost its
    // connection may still have been accepted (SES has no idempotency key).
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
 * The send queue's consumer. Messages are grouped by project. Mail of a
 * disabled project is marked FAILED with the reason. The rest is claimed
 * first; only claimed emails take a token from the project's sending-rate
 * bucket (its Durable Object), and claimed emails over the rate give their
 * claim back (which also touches the record, so the sweep does not queue a
 * copy) and are put back on the queue with a delay, as new messages, so
 * waiting for the rate limit never uses up delivery retries.
 *
 * Memory: emails without attachments go out concurrently; emails with
 * attachments (up to ~10 MB each once encoded, held several times while the
 * message is built and signed) go one at a time, so an invocation never holds
 * more than one large message.
 */
export async function handleSendBatch(
  batch: MessageBatch<SendEmailMessage>,
  env: Env,
  options: { kind?: SendKind } = {},
): Promise<void> {
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

  const projectRows = new Map(
    (
      await db
        .select({ id: projects.id, trackingEnabled: projects.trackingEnabled, disabled: projects.disabled })
        .from(projects)
        .where(inArray(projects.id, [...byProject.keys()]))
    ).map((p) => [p.id, p]),
  );

  const withAttachments: [Message<SendEmailMessage>, Email, boolean][] = [];
  await Promise.all(
    [...byProject].map(async ([projectId, messages]) => {
      const project = projectRows.get(projectId);
      if (!project || project.disabled) {
        const now = new Date();
        await updateEmailsById(db, messages.map((m) => m.body.emailId), ["QUEUED"], {
          status: "FAILED",
          failedAt: now,
          updatedAt: now,
          error: PROJECT_DISABLED_REASON,
        }, projectId); // only the project's own emails: a message naming another project's email changes nothing
        for (const m of messages) m.ack();
        return;
      }
      const claims = await claimEmails(db, projectId, messages.map((m) => m.body.emailId));
      const claimed: [Message<SendEmailMessage>, Email][] = [];
      messages.forEach((m, i) => {
        const email = claims[i];
        if (email) claimed.push([m, email]);
        else m.ack(); // already sent, being sent, failed, or the project was disabled meanwhile
      });
      if (claimed.length === 0) return;
      const limiter = env.PROJECT_LIMITER.get(env.PROJECT_LIMITER.idFromName(`send:${projectId}`));
      // Bulk mail (the bulk queue) takes only the rate transactional mail leaves free (ProjectLimiter).
      const { granted, retryAfterMs } = await limiter.takeSendTokens(claimed.length, readConfig(env).SEND_RATE_PER_SECOND, undefined, options.kind ?? "transactional");
      const over = claimed.slice(granted);
      if (over.length > 0) await deferClaimed(db, env, over, retryAfterMs);
      const now = claimed.slice(0, granted);
      for (const [m, email] of now) if (email.hasAttachments) withAttachments.push([m, email, project.trackingEnabled]);
      await Promise.all(
        now.filter(([, email]) => !email.hasAttachments).map(([m, email]) => deliverOne(db, env, provider, m, email, project.trackingEnabled)),
      );
    }),
  );
  for (const [m, email, tracking] of withAttachments) await deliverOne(db, env, provider, m, email, tracking);
}

/**
 * Gives back claims that are over the sending rate and re-queues their
 * messages with a delay. The record goes back to QUEUED with a fresh
 * updatedAt, so the sweep (which looks for old QUEUED records) does not queue
 * a copy of mail that is waiting for its turn.
 */
async function deferClaimed(db: Database, env: Env, claimed: [Message<SendEmailMessage>, Email][], retryAfterMs: number) {
  const delaySeconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
  const now = new Date();
  await updateEmailsById(db, claimed.map(([, e]) => e.id), ["SENDING"], {
    status: "QUEUED",
    sendingAt: null,
    updatedAt: now,
    attempts: sql`MAX(0, ${emails.attempts} - 1)`,
  });
  const messages = claimed.map(([m]) => m);
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
 * Scheduled sweep, bounded to `limit` records of each kind per run:
 * - QUEUED past the lease (their enqueue was lost): enqueued again and touched,
 *   so the next sweep waits another lease. Claims make a duplicate message harmless.
 * - SENDING past the lease (their consumer died or hung after claiming):
 *   never sent again. Whether the provider got the message cannot be known,
 *   so the record is settled as FAILED with an explicit "Outcome unknown"
 *   reason. Every provider call times out well inside the lease
 *   (SES_TIMEOUT_MS), so a live consumer always records its outcome first.
 */
export async function sweepStuckEmails(env: Env, now = new Date(), limit = 500): Promise<number> {
  const db = getDb(env.DB);
  const cutoff = new Date(now.getTime() - CLAIM_LEASE_MS);
  const stale = (status: EmailStatus) =>
    db
      .select({ id: emails.id, projectId: emails.projectId, bulk: emails.bulk })
      .from(emails)
      .where(and(eq(emails.status, status), lt(emails.updatedAt, cutoff)))
      .limit(limit);
  const [queued, sending] = await db.batch([stale("QUEUED"), stale("SENDING")]);
  await updateEmailsById(db, sending.map((e) => e.id), ["SENDING"], {
    status: "FAILED",
    failedAt: now,
    updatedAt: now,
    error: OUTCOME_UNKNOWN_REASON,
  });
  // Bulk mail goes back on the bulk queue, so it keeps yielding to transactional mail.
  for (const [queue, list] of [
    [env.EMAIL_QUEUE, queued.filter((e) => !e.bulk)],
    [env.EMAIL_BULK_QUEUE as unknown as Queue<SendEmailMessage>, queued.filter((e) => e.bulk)],
  ] as const) {
    for (let i = 0; i < list.length; i += 100) {
      await queue.sendBatch(list.slice(i, i + 100).map((e) => ({ body: { emailId: e.id, projectId: e.projectId } })));
    }
  }
  // Touch them so the next sweep waits another lease before trying again.
  await updateEmailsById(db, queued.map((e) => e.id), ["QUEUED"], { updatedAt: now });
  return queued.length + sending.length;
}

const emailIdsOf = (batch: MessageBatch<SendEmailMessage>) =>
  batch.messages.map((m) => (m.body as Partial<SendEmailMessage>)?.emailId).filter((id): id is string => typeof id === "string");

/** Updates the emails with these ids (of `projectId`, when given) that are in one of `statuses`: statements under D1's 100-parameter limit, in one batch. */
async function updateEmailsById(
  db: Database,
  ids: string[],
  statuses: EmailStatus[],
  set: SQLiteUpdateSetSource<typeof emails>,
  projectId?: string,
) {
  const statements = [];
  for (let i = 0; i < ids.length; i += 90) {
    const ofProject = projectId === undefined ? undefined : eq(emails.projectId, projectId);
    statements.push(db.update(emails).set(set).where(and(inArray(emails.id, ids.slice(i, i + 90)), inArray(emails.status, statuses), ofProject)));
  }
  await runBatch(db, statements);
}
