import { newId } from "../../lib/ids";
import { recordEmailWebhookEvents, type EmailEventItem } from "../../store/webhooks";
import { queueRecordedEvents } from "../webhooks/deliver";
import { getDb, type Database } from "../../db/client";
import type { Email } from "../../db/schema";
import { projectLimiter } from "../../durable/names";
import type { SendKind } from "../../durable/project-limiter";
import type { Env, SendEmailMessage } from "../../env";
import { publicUrl, readConfig, requireSecret } from "../../lib/config";
import { ACK, backoffSeconds, retryAfter, type QueuedMessage, type Verdict } from "../../lib/queue-consumer";
import { getProvider, ProviderError, type EmailProvider } from "../providers";
import type { MessageParts } from "../providers/types";
import { addTracking, unsubscribeUrl } from "../tracking/links";
import { loadAttachments, MAX_RAW_MESSAGE_BYTES } from "./attachments";
import { buildMime, messageHeaders, plainTextOf } from "./mime";
import { emailIdsOf, LAPSED_RECIPIENT_REASON, PROJECT_DISABLED_REASON, updateEmailsById } from "./records";

/**
 * The send consumer, per batch rather than per email (README "Queues in
 * production"). For a batch of N messages it costs, whatever N:
 * - one claim statement (1 D1 round trip),
 * - one Durable Object call per project in the batch (sending-rate tokens),
 * - N provider calls, at most PROVIDER_CONCURRENCY at a time (or the provider's
 *   own maxConcurrency; one at a time for mail with attachments),
 * - one statement with every outcome (1 round trip),
 * plus, only when some mail is over the sending rate, one statement and one
 * sendBatch to put it back. Each statement carries its ids as one JSON
 * parameter (json_each), so it stays far under D1's 100 bound parameters.
 */

/**
 * Provider calls in flight per invocation. A Worker keeps at most 6 outgoing
 * connections open at once (more wait for one to free up), so more would only
 * queue inside the runtime; the batch's provider calls (<= max_batch_size, 100)
 * stay far inside the paid plan's subrequest limit per invocation.
 */
export const PROVIDER_CONCURRENCY = 6;
/** When the sending-rate bucket cannot be reached, claimed mail waits this long and tries again. */
const LIMITER_UNAVAILABLE_RETRY_MS = 5_000;
/** Messages per claim or outcome statement: its ids go in one JSON parameter, kept small. */
const IDS_PER_STATEMENT = 500;

const chunks = <T>(list: T[], size: number) => Array.from({ length: Math.ceil(list.length / size) }, (_, i) => list.slice(i * size, (i + 1) * size));

/** A message of this invocation: its place in the batch (where its verdict goes), attempt number and body. */
interface Slot {
  index: number;
  attempts: number;
  body: SendEmailMessage;
}

/** What the consumer needs of a claimed email (the claim returns only these columns). */
type ClaimedEmail = Pick<
  Email,
  | "id"
  | "projectId"
  | "sendId"
  | "fromAddress"
  | "fromName"
  | "toAddress"
  | "toName"
  | "replyTo"
  | "subject"
  | "html"
  | "headers"
  | "messageId"
  | "marketing"
  | "hasAttachments"
  | "tracked"
> & { trackingEnabled: boolean };

/**
 * The claim, as fixed SQL (no query building per batch): `m` decides once per
 * email whether it is settled instead of sent (?3 / ?4 the reasons; ?5 turns
 * the audience check on for bulk mail), the UPDATE applies it only to emails
 * still QUEUED, and RETURNING hands back what composing needs as arrays
 * (`raw()`, in ClaimRow order). `+status`: the emails are found by id from
 * the JSON rows; with the status index SQLite's plan walks every QUEUED email
 * of the table and scans the batch's list for each (measured: five times slower
 * with 10,000 queued).
 */
const CLAIM_SQL = `UPDATE emails SET
    status = CASE WHEN m.settle IS NULL THEN 'SENDING' ELSE 'FAILED' END,
    error = COALESCE(m.settle, emails.error),
    failed_at = CASE WHEN m.settle IS NULL THEN emails.failed_at ELSE ?1 END,
    sending_at = CASE WHEN m.settle IS NULL THEN ?1 ELSE emails.sending_at END,
    attempts = emails.attempts + (m.settle IS NULL),
    updated_at = ?1
  FROM (SELECT e.id AS id,
          CASE
            WHEN NOT EXISTS (SELECT 1 FROM projects AS p WHERE p.id = e.project_id AND p.disabled = 0) THEN ?3
            WHEN ?5 = 1 AND e.bulk = 1 AND (
              NOT EXISTS (SELECT 1 FROM contacts AS c WHERE c.id = e.contact_id AND c.subscribed = 1)
              OR EXISTS (SELECT 1 FROM suppressions AS s WHERE s.project_id = e.project_id AND s.email = e.to_address)) THEN ?4
          END AS settle
        FROM json_each(?2) AS j
        JOIN emails AS e ON e.id = json_extract(j.value, '$[0]') AND e.project_id = json_extract(j.value, '$[1]')
        WHERE +e.status = 'QUEUED') AS m
  WHERE emails.id = m.id AND +emails.status = 'QUEUED'
  RETURNING emails.status, emails.id, emails.project_id, emails.send_id, emails.from_address, emails.from_name, emails.to_address,
    emails.to_name, emails.reply_to, emails.subject, emails.html, emails.headers, emails.message_id, emails.marketing,
    emails.has_attachments, emails.tracked, (SELECT tracking_enabled FROM projects WHERE projects.id = emails.project_id), emails.error`;

type ClaimRow = [
  status: string,
  id: string,
  projectId: string,
  sendId: string,
  fromAddress: string,
  fromName: string | null,
  toAddress: string,
  toName: string | null,
  replyTo: string | null,
  subject: string,
  html: string,
  headers: string,
  messageId: string,
  marketing: number,
  hasAttachments: number,
  tracked: number,
  trackingEnabled: number | null,
  error: string | null,
];

const claimedEmailOf = (row: ClaimRow): ClaimedEmail => ({
  id: row[1],
  projectId: row[2],
  sendId: row[3],
  fromAddress: row[4],
  fromName: row[5],
  toAddress: row[6],
  toName: row[7],
  replyTo: row[8],
  subject: row[9],
  html: row[10],
  headers: JSON.parse(row[11]) as Record<string, string>,
  messageId: row[12],
  marketing: row[13] === 1,
  hasAttachments: row[14] === 1,
  tracked: row[15] === 1,
  trackingEnabled: row[16] === 1,
});

/**
 * Claims a batch's emails in one statement: only one invocation can move an
 * email from QUEUED to SENDING. In the same statement, mail that must not go
 * out is settled instead: a disabled (or missing) project's mail becomes
 * FAILED with the reason and, for bulk mail (campaigns, MARKETING workflow
 * steps), an email whose contact unsubscribed, was deleted or got suppressed
 * after the email was written becomes FAILED too, so a campaign can still finish. Only a message's own
 * project's email matches (a message naming another project's email changes
 * nothing). A redelivered message for an email already SENT, FAILED or being
 * sent claims nothing. A SENDING claim is never taken over: whether its
 * provider call happened is unknown, so the sweep settles it (sweep.ts).
 */
async function claimBatch(
  d1: D1Database,
  slots: Slot[],
  options: { checkAudience: boolean },
): Promise<{ claimed: ClaimedEmail[]; settled: { id: string; error: string | null }[]; at: Date }> {
  const now = Date.now();
  const results = await Promise.all(
    chunks(slots, IDS_PER_STATEMENT).map((chunk) =>
      d1
        .prepare(CLAIM_SQL)
        .bind(
          now,
          JSON.stringify(chunk.map((slot) => [slot.body.emailId, slot.body.projectId])),
          PROJECT_DISABLED_REASON,
          LAPSED_RECIPIENT_REASON,
          options.checkAudience ? 1 : 0,
        )
        .raw<ClaimRow>(),
    ),
  );
  const rows = results.flat();
  return {
    claimed: rows.filter((row) => row[0] === "SENDING").map(claimedEmailOf),
    settled: rows.filter((row) => row[0] === "FAILED").map((row) => ({ id: row[1], error: row[17] })),
    at: new Date(now),
  };
}

/**
 * email.suppressed (the recipient unsubscribed or got suppressed after the
 * email was written) / email.failed (project disabled) for emails the claim
 * settled. A statement of its own right after the claim: an invocation dying
 * in between loses these events (the emails' FAILED status stays).
 */
async function recordSettledEvents(env: Env, settled: { id: string; error: string | null }[], at: Date) {
  if (settled.length === 0) return;
  const items: EmailEventItem[] = settled.map((e) =>
    e.error === LAPSED_RECIPIENT_REASON
      ? { id: newId(), emailId: e.id, type: "email.suppressed", when: "set:failed_at", extra: { reason: e.error } }
      : { id: newId(), emailId: e.id, type: "email.failed", when: "set:failed_at", extra: { reason: e.error } },
  );
  const { results } = await recordEmailWebhookEvents(env.DB, items, at).all<Record<string, unknown>>();
  await queueRecordedEvents(env, results);
}

async function composeMessage(db: Database, env: Env, email: ClaimedEmail, trackingEnabled: boolean): Promise<{ raw: string; parts: MessageParts }> {
  const baseUrl = publicUrl(env);
  const secret = requireSecret(env, "LINK_SIGNING_SECRET");
  // Campaign test sends are never tracked (email.tracked false), whatever the project's switch says.
  const html =
    trackingEnabled && email.tracked ? await addTracking(email.html, { emailId: email.id, baseUrl, secret, trackOpens: true, trackClicks: true }) : email.html;
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

/** What happened to one claimed email, to be recorded with the batch's others. */
type Outcome =
  | { emailId: string; status: "SENT"; providerMessageId: string }
  | { emailId: string; status: "FAILED"; error: string }
  | { emailId: string; status: "QUEUED"; error: string };

/** Sends one claimed email; returns its outcome (nothing is written here). */
async function deliverOne(db: Database, env: Env, provider: EmailProvider, email: ClaimedEmail): Promise<Outcome> {
  try {
    const composed = await composeMessage(db, env, email, email.trackingEnabled);
    let raw: string | null = composed.raw;
    if (raw.length > MAX_RAW_MESSAGE_BYTES) {
      throw new ProviderError(`The message is ${raw.length} bytes, over the provider's limit of ${MAX_RAW_MESSAGE_BYTES} bytes`, false);
    }
    const outgoing = {
      emailId: email.id,
      projectId: email.projectId,
      from: email.fromAddress,
      to: email.toAddress,
      subject: email.subject,
      raw,
      parts: composed.parts,
    };
    raw = null;
    const { providerMessageId } = await provider.send(outgoing);
    return { emailId: email.id, status: "SENT", providerMessageId };
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    if (err instanceof ProviderError && !err.retryable) return { emailId: email.id, status: "FAILED", error: reason };
    // The claim is given back so the retry can take it again. This is the one
    // at-least-once path left: a provider call that timed out or lost its
    // connection may still have been accepted (SES has no idempotency key).
    return { emailId: email.id, status: "QUEUED", error: reason };
  }
}

/**
 * Records a batch's outcomes in one statement (per IDS_PER_STATEMENT), only
 * on emails still SENDING. Once the provider has a message it must never be
 * sent again, so when any was SENT the write is tried three times; a write
 * that still fails leaves those emails SENDING, and the sweep settles them as
 * "Outcome unknown" rather than sending them twice.
 */
// `+status`: emails are looked up by id (the JSON rows), not through the status index.
const RECORD_OUTCOMES_SQL = `UPDATE emails SET
    status = o.status,
    sent_at = CASE WHEN o.status = 'SENT' THEN ?1 ELSE emails.sent_at END,
    failed_at = CASE WHEN o.status = 'FAILED' THEN ?1 ELSE emails.failed_at END,
    provider_message_id = COALESCE(o.provider_message_id, emails.provider_message_id),
    error = o.error,
    updated_at = ?1
  FROM (SELECT json_extract(value, '$[0]') AS id, json_extract(value, '$[1]') AS status,
          json_extract(value, '$[2]') AS provider_message_id, json_extract(value, '$[3]') AS error
        FROM json_each(?2)) AS o
  WHERE emails.id = o.id AND +emails.status = 'SENDING'`;

/**
 * The webhook events of a batch's outcomes (email.sent, email.failed), one
 * statement in the outcomes' batch, each only when that write moved the email.
 */
function outcomeEvents(d1: D1Database, outcomes: Outcome[], at: Date) {
  const items: EmailEventItem[] = outcomes.flatMap((o): EmailEventItem[] => {
    if (o.status === "SENT") return [{ id: newId(), emailId: o.emailId, type: "email.sent", when: "set:sent_at" }];
    if (o.status === "FAILED") return [{ id: newId(), emailId: o.emailId, type: "email.failed", when: "set:failed_at", extra: { reason: o.error } }];
    return [];
  });
  return items.length > 0 ? [recordEmailWebhookEvents(d1, items, at)] : [];
}

/** Records the outcomes; returns the webhook events recorded with them (rows of id, project_id). */
async function recordOutcomes(d1: D1Database, outcomes: Outcome[]): Promise<Record<string, unknown>[]> {
  if (outcomes.length === 0) return [];
  const now = Date.now();
  const statements = chunks(outcomes, IDS_PER_STATEMENT).map((chunk) =>
    d1
      .prepare(RECORD_OUTCOMES_SQL)
      .bind(
        now,
        JSON.stringify(chunk.map((o) => [o.emailId, o.status, o.status === "SENT" ? o.providerMessageId : null, o.status === "SENT" ? null : o.error])),
      ),
  );
  const events = outcomeEvents(d1, outcomes, new Date(now));
  const tries = outcomes.some((o) => o.status === "SENT") ? 3 : 1;
  for (let attempt = 1; ; attempt++) {
    try {
      const results = await d1.batch<Record<string, unknown>>([...statements, ...events]);
      return events.length > 0 ? results[results.length - 1].results : [];
    } catch (err) {
      console.error(`recording ${outcomes.length} outcomes failed (try ${attempt} of ${tries})`, err);
      if (attempt >= tries) {
        if (outcomes.some((o) => o.status !== "SENT")) throw err;
        return [];
      }
    }
  }
}

/** Runs `work` on every item, at most `limit` at a time. */
async function eachLimited<T>(items: T[], limit: number, work: (item: T) => Promise<void>) {
  let next = 0;
  const lanes = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) await work(items[next++]);
  });
  await Promise.all(lanes);
}

export interface DeliveryOptions {
  /** Whose share of the project's sending rate this mail takes (ProjectLimiter): bulk only what transactional mail leaves free. */
  kind: SendKind;
  /** Where mail over the sending rate waits for its turn (its own queue). */
  requeue: Queue<SendEmailMessage>;
}

/**
 * The send consumer (transactional and bulk mail), per batch: one claim
 * statement for every message; then per project one Durable Object call takes
 * sending-rate tokens for all its claimed emails (bulk mail only what
 * transactional mail leaves free); claimed emails over the rate give their
 * claim back (which also touches the record, so the sweep does not queue a
 * copy) and are put back on the queue with a delay, as new messages, so
 * waiting for the rate never uses up delivery retries. The rest go to the
 * provider in parallel (PROVIDER_CONCURRENCY) and their outcomes are written
 * in one statement: SENT and permanent failures are acked, retryable failures
 * go back to QUEUED and their messages are retried with back-off.
 *
 * Memory: emails with attachments (up to ~10 MB each once encoded, held
 * several times while the message is built and signed) go one at a time, so
 * an invocation never holds more than one large message.
 */
export async function deliverBatch(messages: readonly QueuedMessage<unknown>[], env: Env, options: DeliveryOptions): Promise<Verdict[]> {
  const verdicts: Verdict[] = messages.map(() => ACK);
  const db = getDb(env.DB);
  let provider: EmailProvider;
  try {
    provider = getProvider(env, db);
  } catch (err) {
    // A deployment problem (e.g. missing credentials): keep the mail, say why on each record, retry.
    const reason = err instanceof Error ? err.message : String(err);
    console.error("email provider unavailable", reason);
    await updateEmailsById(db, emailIdsOf(messages.map((m) => m.body)), ["QUEUED"], { error: reason, updatedAt: new Date() });
    return messages.map((m) => retryAfter(backoffSeconds(m.attempts)));
  }

  const slots: Slot[] = [];
  messages.forEach((message, index) => {
    const body = message.body as Partial<SendEmailMessage> | undefined;
    if (typeof body?.emailId !== "string" || typeof body.projectId !== "string") {
      console.error("dropping malformed send message", message.id);
      return;
    }
    // The whole body travels on when the email is deferred (a campaign email keeps its campaignId).
    slots.push({ index, attempts: message.attempts, body: body as SendEmailMessage });
  });
  if (slots.length === 0) return verdicts;

  // Unclaimed emails (already sent, being sent, failed; or settled by the claim) are acked.
  const { claimed, settled, at: claimedAt } = await claimBatch(env.DB, slots, { checkAudience: options.kind === "bulk" });
  await recordSettledEvents(env, settled, claimedAt);
  const slotOf = new Map(slots.map((slot) => [slot.body.emailId, slot]));
  const byProject = new Map<string, ClaimedEmail[]>();
  for (const email of claimed) {
    const list = byProject.get(email.projectId);
    if (list) list.push(email);
    else byProject.set(email.projectId, [email]);
  }
  if (byProject.size === 0) return verdicts;

  // Tokens: one Durable Object call per project, for all its claimed emails.
  const toSend: ClaimedEmail[] = [];
  const deferrals: Promise<void>[] = [];
  await Promise.all(
    [...byProject].map(async ([projectId, list]) => {
      const { granted, retryAfterMs } = await projectLimiter(env, "send", projectId)
        .takeSendTokens(list.length, readConfig(env).SEND_RATE_PER_SECOND, undefined, options.kind)
        .catch((err) => {
          // The bucket could not be asked (e.g. the object was being reset): nothing goes out
          // unmetered; the claims are given back and the mail tries again shortly.
          console.error("sending-rate bucket unavailable", projectId, err);
          return { granted: 0, retryAfterMs: LIMITER_UNAVAILABLE_RETRY_MS };
        });
      toSend.push(...list.slice(0, granted));
      const over = list.slice(granted).map((email) => slotOf.get(email.id)!);
      if (over.length > 0) {
        deferrals.push(
          deferClaimed(env.DB, options.requeue, over, retryAfterMs).then((verdict) => {
            for (const slot of over) verdicts[slot.index] = verdict;
          }),
        );
      }
    }),
  );

  const outcomes: Outcome[] = [];
  await Promise.all([
    ...deferrals,
    eachLimited(
      toSend.filter((email) => !email.hasAttachments),
      provider.maxConcurrency ?? PROVIDER_CONCURRENCY,
      async (email) => void outcomes.push(await deliverOne(db, env, provider, email)),
    ),
    eachLimited(
      toSend.filter((email) => email.hasAttachments),
      1,
      async (email) => void outcomes.push(await deliverOne(db, env, provider, email)),
    ),
  ]);
  await queueRecordedEvents(env, await recordOutcomes(env.DB, outcomes));
  for (const outcome of outcomes) {
    const slot = slotOf.get(outcome.emailId)!;
    if (outcome.status === "QUEUED") verdicts[slot.index] = retryAfter(backoffSeconds(slot.attempts));
  }
  return verdicts;
}

/**
 * Gives back claims that are over the sending rate and re-queues their
 * messages with a delay, in one statement and one sendBatch (per 100). The
 * record goes back to QUEUED with a fresh updatedAt, so the sweep (which looks
 * for old QUEUED records) does not queue a copy of mail that is waiting for
 * its turn. Returns the verdict for their messages: acked once the copies are
 * queued, retried when queueing failed.
 */
async function deferClaimed(d1: D1Database, requeue: Queue<SendEmailMessage>, slots: Slot[], retryAfterMs: number): Promise<Verdict> {
  const delaySeconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
  const now = Date.now();
  await d1.batch(
    chunks(slots, IDS_PER_STATEMENT).map((chunk) =>
      d1
        .prepare(
          `UPDATE emails SET status = 'QUEUED', sending_at = NULL, updated_at = ?1, attempts = MAX(0, attempts - 1)
           WHERE id IN (SELECT value FROM json_each(?2)) AND +status = 'SENDING'`,
        )
        .bind(now, JSON.stringify(chunk.map((slot) => slot.body.emailId))),
    ),
  );
  try {
    for (const chunk of chunks(slots, 100)) await requeue.sendBatch(chunk.map((slot) => ({ body: slot.body, delaySeconds })));
    return ACK;
  } catch {
    return retryAfter(delaySeconds);
  }
}
