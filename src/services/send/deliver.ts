import { newId } from "../../lib/ids";
import { recordEmailWebhookEvents, type EmailEventItem } from "../../store/webhooks/events";
import { getDb, type Database } from "../../db/client";
import { projectLimiter } from "../../lib/project-limiters";
import type { SendKind } from "../../entrypoints/project-limiter";
import type { Env } from "../../env";
import type { AfterCommit } from "../../lib/after-commit";
import { emailIdsOf, type SendEmailMessage } from "../../messages";
import { WriteBatch } from "../../store/batch";
import { publicUrl, readConfig, requireSecret } from "../../lib/config";
import { ACK, backoffSeconds, retryAfter, type QueuedMessage, type Verdict } from "../../lib/queue-consumer";
import {
  claimEmails,
  deferClaims,
  markCallsStarted,
  recordOutcomes,
  type ClaimedEmail,
  type EmailBody,
  type Outcome,
  updateEmailsById,
} from "../../store/emails";
import { getProvider, ProviderError, providerNameFor, type EmailProvider, type OutgoingMessage } from "../../outside/providers";
import type { MessageParts, ProviderResult } from "../../outside/providers/types";
import { addTracking, linkId, unsubscribeUrl } from "../tracking/links";
import { trackingFor } from "../tracking/control";
import { shardOf } from "../../db/shards";
import { MAX_RAW_MESSAGE_BYTES } from "../../schemas/attachments";
import { loadAttachments } from "./attachments";
import { type BodyOf, bodyReader } from "./bodies";
import { addBodyBytes, SentBodyWriter, type StoredBodies } from "../../store/objects/bodies";
import { buildMime, messageHeaders, plainTextOf } from "./mime";
import { replyToOf } from "./reply-to";
import { GATES } from "../consent/gates";
import { requeueMail } from "../../queues";
import { CALL_DEADLINE_MS, OUTCOME_UNKNOWN_PREFIX, outcomeUnknownReason, PROJECT_DISABLED_REASON, SENDING_PAUSED_REASON } from "./reasons";

/**
 * The send consumer, per batch rather than per email. For a batch of N messages it costs, whatever N:
 * - one claim statement (1 D1 round trip), which returns the HTML and headers of
 *   small mail (INLINE_BODY_CHARS each),
 * - one read of the larger bodies per group (bodies.ts BODY_CHARS_PER_READ), made as the send lanes reach it,
 * - one Durable Object call per project in the batch (sending-rate tokens),
 * - N provider calls in waves of PROVIDER_CONCURRENCY (or the provider's own
 *   maxConcurrency; one at a time for mail with attachments), each wave marked as
 *   started in one statement just before its calls (docs/reliability.md),
 * - one R2 put of the sent emails' HTML as one object (store/objects/bodies.ts; more only past
 *   BODY_OBJECT_BYTES), before
 * - one statement with every outcome (which empties the sent HTML in D1 and keeps each body's
 *   ref), its r2_usage bytes, and one with their webhook events when a
 *   claimed email's project has an enabled endpoint (1 round trip),
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

/** A message of this invocation: its place in the batch (where its verdict goes), attempt number and body. */
interface Slot {
  index: number;
  attempts: number;
  body: SendEmailMessage;
}

/**
 * Claims a batch's emails (claimEmails): only one invocation can move an
 * email from QUEUED to SENDING. In the same statement, mail that must not go
 * out is settled instead: a disabled (or missing) project's mail, and the mail
 * of a project whose sending is paused (reputation breaker), becomes FAILED
 * with the reason and, for bulk mail (campaigns, MARKETING workflow
 * steps), an email whose contact unsubscribed, was deleted or got suppressed
 * after the email was written becomes FAILED too, so a campaign can still
 * finish. Only a message's own project's email matches. A redelivered message
 * for an email already SENT, FAILED or being sent claims nothing. A SENDING
 * claim is never taken over: whether its provider call happened is unknown,
 * so the sweep settles it (sweep.ts).
 */
function claimBatch(env: Env, slots: Slot[], options: { checkAudience: boolean; afterCommit: AfterCommit }, now: number): Promise<ClaimedEmail[]> {
  return claimEmails(
    env.DB,
    slots.map((slot) => slot.body),
    {
      checkAudience: options.checkAudience,
      reasons: { disabled: PROJECT_DISABLED_REASON, paused: SENDING_PAUSED_REASON },
      now,
      alongside: [settledEvents(env.DB, slots, now, options.checkAudience)],
      afterCommit: options.afterCommit,
    },
  );
}

/**
 * Webhook events for mail the claim settles: email.suppressed (with the audience check: a consent
 * gate refused it, the recipient unsubscribed or got suppressed after the email was written; data
 * `gate` and `reason`) and email.failed (project disabled, or its sending paused), each only for an
 * email this claim failed (failed_at is the claim's time). In the claim's batch, so the state change
 * and its event are written together or not at all.
 */
function settledEvents(d1: D1Database, slots: Slot[], now: number, checkAudience: boolean): D1PreparedStatement {
  const items: EmailEventItem[] = slots.flatMap(({ body }): EmailEventItem[] => [
    // One per gate: the email's error starts with the gate's name (its whole reason goes in `reason`).
    ...(checkAudience ? GATES : []).map(
      (gate): EmailEventItem => ({
        id: newId(),
        emailId: body.emailId,
        type: "email.suppressed",
        when: "set:failed_at",
        errorPrefix: `${gate}:`,
        reasonFromError: true,
        extra: { gate },
      }),
    ),
    {
      id: newId(),
      emailId: body.emailId,
      type: "email.failed",
      when: "set:failed_at",
      error: PROJECT_DISABLED_REASON,
      extra: { reason: PROJECT_DISABLED_REASON },
    },
    {
      id: newId(),
      emailId: body.emailId,
      type: "email.failed",
      when: "set:failed_at",
      error: SENDING_PAUSED_REASON,
      extra: { reason: SENDING_PAUSED_REASON },
    },
  ]);
  return recordEmailWebhookEvents(d1, items, new Date(now));
}

/** The webhook events of a batch's outcomes (email.sent, email.failed), each only when that write moved the email. */
function outcomeEvents(d1: D1Database, outcomes: Outcome[], at: Date): D1PreparedStatement[] {
  const items: EmailEventItem[] = outcomes.flatMap((o): EmailEventItem[] => {
    if (o.status === "SENT") return [{ id: newId(), emailId: o.emailId, type: "email.sent", when: "set:sent_at" }];
    if (o.status === "FAILED") return [{ id: newId(), emailId: o.emailId, type: "email.failed", when: "set:failed_at", extra: { reason: o.error } }];
    return [];
  });
  return items.length > 0 ? [recordEmailWebhookEvents(d1, items, at)] : [];
}

async function composeMessage(
  db: Database,
  env: Env,
  email: ClaimedEmail & EmailBody,
  trackingEnabled: boolean,
): Promise<{ raw: string; parts: MessageParts }> {
  const baseUrl = publicUrl(env);
  const secret = requireSecret(env, "LINK_SIGNING_SECRET");
  // Campaign test sends are never tracked (email.tracked false), whatever the project's switch says; else the
  // send's own choice, the project's mode (trackingEnabled, from the claim) and the sending domain's switches and host.
  const tracking = await trackingFor(env, { ...email, trackingEnabled });
  const html = await addTracking(email.html, {
    emailId: linkId(email.id, shardOf(env)),
    baseUrl,
    secret,
    trackOpens: tracking.opens,
    trackClicks: tracking.clicks,
    trackingBaseUrl: tracking.baseUrl,
  });
  const attachments = email.hasAttachments ? await loadAttachments(db, env.STORAGE, email.sendId) : [];
  const fromDomain = email.fromAddress.split("@")[1];
  const listUnsubscribe = email.marketing
    ? { url: await unsubscribeUrl(baseUrl, secret, linkId(email.id, shardOf(env))), mailto: `mailto:unsubscribe@${fromDomain}?subject=unsubscribe` }
    : undefined;
  // Mail aimed at a topic names it (RFC 2919): `<key>.<project id>.<host>`.
  const listId = email.topicKey ? `${email.topicKey}.${email.projectId}.${new URL(baseUrl).hostname}` : undefined;
  const text = plainTextOf(html);
  // With replies tracked, the email's signed reply address (reply-to.ts decides when it replaces the mail's own).
  const replyTo = await replyToOf(env, email);
  return {
    raw: buildMime({ ...email, replyTo }, { html, text, attachments, listUnsubscribe, listId }),
    parts: {
      fromName: email.fromName ?? undefined,
      toName: email.toName ?? undefined,
      replyTo: replyTo ?? undefined,
      html,
      text,
      headers: messageHeaders(email, { listUnsubscribe, listId }),
      attachments,
    },
  };
}

/** What became of one claimed email: an outcome, or its claim given back untouched (the batch's call deadline passed). */
type Attempt = Outcome | { emailId: string; status: "RELEASED" };

type Call = () => Promise<ProviderResult>;
/**
 * A claimed email ready for its provider call (composed, the request built and signed; `html` as it goes out, kept
 * for the batch's bodies object), or what became of it before any call.
 */
type Prepared = { emailId: string; projectId: string; html: string; call: Call } | { emailId: string; outcome: Outcome };

/**
 * Composes one claimed email and prepares its call (nothing is written here); a failure here is before any
 * call, so retrying it is safe.
 */
async function prepareOne(db: Database, env: Env, provider: EmailProvider, email: ClaimedEmail, bodyOf: BodyOf): Promise<Prepared> {
  try {
    const body = await bodyOf(email);
    if (!body) return { emailId: email.id, outcome: { emailId: email.id, status: "FAILED", error: "The email record is gone" } };
    const composed = await composeMessage(db, env, { ...email, ...body }, email.trackingEnabled);
    if (composed.raw.length > MAX_RAW_MESSAGE_BYTES) {
      const error = `The message is ${composed.raw.length} bytes, over the provider's limit of ${MAX_RAW_MESSAGE_BYTES} bytes`;
      return { emailId: email.id, outcome: { emailId: email.id, status: "FAILED", error } };
    }
    const outgoing: OutgoingMessage = {
      emailId: email.id,
      projectId: email.projectId,
      from: email.fromAddress,
      to: email.toAddress,
      subject: email.subject,
      raw: composed.raw,
      parts: composed.parts,
    };
    return {
      emailId: email.id,
      projectId: email.projectId,
      html: composed.parts.html,
      call: provider.prepare ? await provider.prepare(outgoing) : () => provider.send(outgoing),
    };
  } catch (err) {
    return { emailId: email.id, outcome: { emailId: email.id, status: "QUEUED", error: err instanceof Error ? err.message : String(err) } };
  }
}

/**
 * The provider call, at most once: a definite refusal is FAILED, a definite "not now" goes back to QUEUED
 * for a retry, and no answer (timeout, connection lost) is FAILED as an unknown outcome, never retried
 * (docs/reliability.md).
 */
async function callProvider(emailId: string, call: Call): Promise<Outcome> {
  try {
    const { providerMessageId } = await call();
    return { emailId, status: "SENT", providerMessageId };
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    if (err instanceof ProviderError && err.outcomeUnknown) return { emailId, status: "FAILED", error: outcomeUnknownReason(reason) };
    if (err instanceof ProviderError && !err.retryable) return { emailId, status: "FAILED", error: reason };
    // A definite "not now" (throttling, 5xx): the claim is given back so the retry can take it again.
    return { emailId, status: "QUEUED", error: reason };
  }
}

/**
 * Sends claimed emails in waves of `width`: each wave is composed, then its calls are marked as started
 * (markCallsStarted, one statement: emails.sending_at) and made together. So a claim whose invocation dies
 * is known to have had its call started or not: the sweep gives a claim without one back to QUEUED (sent
 * later, once) and settles only the started ones as unknown. No wave starts after `deadline` (its claims
 * are given back instead), so no claim outlives its lease.
 */
async function sendInWaves(
  db: Database,
  env: Env,
  provider: EmailProvider,
  emails: readonly ClaimedEmail[],
  width: number,
  bodyOf: BodyOf,
  deadline: number,
  bodies: SentBodyWriter,
): Promise<Attempt[]> {
  const attempts: Attempt[] = [];
  const prepareWave = (from: number) => Promise.all(emails.slice(from, from + width).map((email) => prepareOne(db, env, provider, email, bodyOf)));
  // The next wave is composed while this one's calls are out (not for mail with attachments: one large message at a time).
  const ahead = width > 1;
  let next: Promise<Prepared[]> | undefined;
  for (let i = 0; i < emails.length; i += width) {
    if (Date.now() > deadline) {
      attempts.push(...emails.slice(i).map((email) => ({ emailId: email.id, status: "RELEASED" as const })));
      break;
    }
    const prepared = await (next ?? prepareWave(i));
    next = undefined;
    const ready = prepared.filter((p): p is Extract<Prepared, { call: Call }> => "call" in p);
    attempts.push(...prepared.flatMap((p) => ("outcome" in p ? [p.outcome] : [])));
    if (ready.length === 0) continue;
    if (Date.now() > deadline) {
      attempts.push(...ready.map((p) => ({ emailId: p.emailId, status: "RELEASED" as const })));
      continue;
    }
    // Only emails still SENDING are called (a claim the sweep settled meanwhile is not).
    let started: Set<string>;
    try {
      started = await markCallsStarted(
        env.DB,
        ready.map((p) => p.emailId),
        Date.now(),
      );
    } catch (err) {
      // No mark, no call: this wave and the rest are given back; the outcomes so far are still recorded.
      console.error("marking provider calls as started failed; giving the rest of the batch back", err);
      const rest = [...ready.map((p) => p.emailId), ...emails.slice(i + width).map((email) => email.id)];
      attempts.push(...rest.map((emailId) => ({ emailId, status: "RELEASED" as const })));
      break;
    }
    const calls = Promise.all(
      ready
        .filter((p) => started.has(p.emailId))
        .map(async (p) => {
          const outcome = await callProvider(p.emailId, p.call);
          // What the provider took is what GET /emails/{id} shows (written to R2 before the outcomes).
          if (outcome.status === "SENT") bodies.add(p.emailId, p.projectId, p.html);
          return outcome;
        }),
    );
    if (ahead && i + width < emails.length) next = prepareWave(i + width);
    attempts.push(...(await calls));
  }
  return attempts;
}

/**
 * Records a batch's outcomes in one statement (per IDS_PER_JSON_STATEMENT ids), only
 * on emails still SENDING (or, for SENT, settled meanwhile as unknown). Once the provider
 * has a message it must never be sent again, so when any was SENT the write is tried
 * three times; a write that still fails leaves those emails SENDING, and the sweep
 * settles them as "Outcome unknown" (then reconciled from the provider's events)
 * rather than sending them twice.
 */
async function recordBatchOutcomes(
  d1: D1Database,
  outcomes: Outcome[],
  hooked: ReadonlySet<string>,
  afterCommit: AfterCommit,
  bodies: StoredBodies,
): Promise<void> {
  if (outcomes.length === 0) return;
  const now = Date.now();
  for (const outcome of outcomes) if (outcome.status === "SENT") outcome.bodyRef = bodies.refs.get(outcome.emailId);
  // The bodies' bytes go to the r2_usage ledger in the same write as the refs to them.
  const statements = [...recordOutcomes(d1, outcomes, OUTCOME_UNKNOWN_PREFIX, now), ...addBodyBytes(d1, bodies, new Date(now))];
  // Their webhook events in the same batch (they leave through afterCommit): only for emails whose project had an endpoint at the claim.
  const events = outcomeEvents(
    d1,
    outcomes.filter((o) => hooked.has(o.emailId)),
    new Date(now),
  );
  const tries = outcomes.some((o) => o.status === "SENT") ? 3 : 1;
  for (let attempt = 1; ; attempt++) {
    try {
      const batch = new WriteBatch(d1);
      batch.add(...statements, ...events);
      await batch.run({ afterCommit });
      return;
    } catch (err) {
      console.error(`recording ${outcomes.length} outcomes failed (try ${attempt} of ${tries})`, err);
      if (attempt >= tries) {
        if (outcomes.some((o) => o.status !== "SENT")) throw err;
        return;
      }
    }
  }
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
 * provider in parallel (PROVIDER_CONCURRENCY), each call at most once, and
 * their outcomes are written in one statement: SENT, refusals and unknown
 * outcomes (no answer: FAILED "Outcome unknown", reconciled from the
 * provider's events) are acked, definite "not now" answers go back to QUEUED
 * and their messages are retried with back-off. No call starts later than
 * CALL_DEADLINE_MS after the claim: claims left then are given back and
 * re-queued, so no claim outlives its lease (docs/reliability.md).
 *
 * Memory: emails with attachments (up to ~10 MB each once encoded, held
 * several times while the message is built and signed) go one at a time, so
 * an invocation never holds more than one large message.
 */
export async function deliverBatch(
  messages: readonly QueuedMessage<unknown>[],
  env: Env,
  afterCommit: AfterCommit,
  options: DeliveryOptions,
): Promise<Verdict[]> {
  const verdicts: Verdict[] = messages.map(() => ACK);
  const db = getDb(env.DB);
  let provider: EmailProvider;
  try {
    provider = getProvider(env, db);
  } catch (err) {
    // A deployment problem (e.g. missing credentials): keep the mail, say why on each record, retry.
    const reason = err instanceof Error ? err.message : String(err);
    console.error("email provider unavailable", reason);
    const batch = new WriteBatch(env.DB);
    batch.add(...updateEmailsById(env.DB, emailIdsOf(messages.map((m) => m.body)), ["QUEUED"], { error: reason, updatedAt: new Date() }));
    await batch.run();
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
  const claimedAt = Date.now();
  const claimed = await claimBatch(env, slots, { checkAudience: options.kind === "bulk", afterCommit }, claimedAt);
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

  const deadline = claimedAt + CALL_DEADLINE_MS;
  // The sent HTML leaves D1: one R2 object for the batch's bodies (store/objects/bodies.ts), put before the outcomes are written.
  const bodies = new SentBodyWriter(env.STORAGE, new Date(claimedAt));
  // Each stream through its provider (broadcast mail: EMAIL_PROVIDER_BROADCAST); mail whose stream has none here is not sent.
  const broadcast = broadcastProviderOf(env, db, provider);
  const lanes = (list: ClaimedEmail[], via: EmailProvider) => {
    const plain = list.filter((email) => !email.hasAttachments);
    const withAttachments = list.filter((email) => email.hasAttachments);
    return [
      sendInWaves(db, env, via, plain, via.maxConcurrency ?? PROVIDER_CONCURRENCY, bodyReader(env.DB, plain, plain.length), deadline, bodies),
      sendInWaves(db, env, via, withAttachments, 1, bodyReader(env.DB, withAttachments, 1), deadline, bodies),
    ];
  };
  const transactionalMail = toSend.filter((email) => !email.marketing || broadcast === provider);
  const broadcastMail = broadcast === provider ? [] : toSend.filter((email) => email.marketing);
  const unsendable: Attempt[] = [];
  if (broadcast instanceof Error) {
    // No provider for broadcast mail here (Cloudflare Email Service alone): refused, or retried when the setting is wrong.
    const retry = !(broadcast instanceof ProviderError) || broadcast.retryable;
    unsendable.push(...broadcastMail.map((email): Outcome => ({ emailId: email.id, status: retry ? "QUEUED" : "FAILED", error: broadcast.message })));
  }
  const sent = await Promise.all([...lanes(transactionalMail, provider), ...(broadcast instanceof Error ? [] : lanes(broadcastMail, broadcast)), ...deferrals]);
  const stored = await bodies.finish();
  const attempts = [...sent.flatMap((lane) => lane ?? []), ...unsendable];
  const outcomes = attempts.filter((a): a is Outcome => a.status !== "RELEASED");
  // A retry's delay is written with it: the sweep leaves the email alone until then.
  const delays = new Map<string, number>();
  for (const outcome of outcomes) {
    if (outcome.status !== "QUEUED") continue;
    const delay = backoffSeconds(slotOf.get(outcome.emailId)!.attempts);
    delays.set(outcome.emailId, delay);
    outcome.retryAt = Date.now() + delay * 1000;
  }
  const released = attempts.filter((a) => a.status === "RELEASED").map((a) => slotOf.get(a.emailId)!);
  const hooked = new Set(toSend.filter((email) => email.webhooks).map((email) => email.id));
  const [, releaseVerdict] = await Promise.all([
    recordBatchOutcomes(env.DB, outcomes, hooked, afterCommit, stored),
    // Past the deadline: the claims untouched by any call go back to QUEUED, their messages re-queued at once.
    released.length > 0 ? deferClaimed(env.DB, options.requeue, released, 0) : undefined,
  ]);
  for (const slot of released) verdicts[slot.index] = releaseVerdict!;
  for (const [emailId, delay] of delays) verdicts[slotOf.get(emailId)!.index] = retryAfter(delay);
  return verdicts;
}

/**
 * The provider of broadcast mail for this batch: the transactional one when both streams name the
 * same provider, else its own (EMAIL_PROVIDER_BROADCAST), or the error that says why there is none.
 */
function broadcastProviderOf(env: Env, db: Database, transactional: EmailProvider): EmailProvider | Error {
  const name = providerNameFor(env, "BROADCAST");
  if (name === providerNameFor(env, "TRANSACTIONAL") && name !== "cloudflare") return transactional;
  try {
    return getProvider(env, db, "BROADCAST");
  } catch (err) {
    return err instanceof Error ? err : new Error(String(err));
  }
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
  const delaySeconds = Math.max(retryAfterMs === 0 ? 0 : 1, Math.ceil(retryAfterMs / 1000));
  const now = Date.now();
  await d1.batch(
    deferClaims(
      d1,
      slots.map((slot) => slot.body.emailId),
      now,
      now + delaySeconds * 1000,
    ),
  );
  try {
    await requeueMail(
      requeue,
      slots.map((slot) => slot.body),
      delaySeconds,
    );
    return ACK;
  } catch {
    return retryAfter(delaySeconds);
  }
}
