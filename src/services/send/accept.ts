import { controlDbOf } from "../../db/shards";
import { and, asc, eq } from "drizzle-orm";
import { fromRow, type Database } from "../../db/client";
import { domains, emails, idempotencyKeys, type JsonObject, projects, templates, type Template, topics, type Topic } from "../../db/schema";
import { topicByKeyQuery, topicChoicesOf } from "../topics";
import type { Env } from "../../env";
import type { AfterCommit } from "../../lib/after-commit";
import { sha256Hex } from "../../lib/crypto";
import { ApiError } from "../../lib/errors";
import { newId } from "../../lib/ids";
import type { SendRequest, SendResult } from "../../schemas/send";
import { type BatchResult, WriteBatch } from "../../store/batch";
import { upsertContacts } from "../../store/contacts";
import { isUniqueViolation, outboxProbe, raisedGuard, suppressionGuard, suppressionsOf } from "../../store/guards";
import { deleteIdempotencyRecord, IDEMPOTENCY_TTL_MS, type IdempotencyRecord, idempotencyRecordOf, insertIdempotencyRecord } from "../../store/idempotency";
import { contactFromRow, contactsByEmail, splitPersistentData } from "../contacts";
import { findSendingDomain, senderDomain, type VerifiedDomains } from "../domains";
import { defaultSenderOf, defaultSenderQuery } from "../project-settings";
import type { Suppression } from "../suppressions";
import { refusalOf, type Stream } from "../consent/gates";
import { assertBroadcastAvailable } from "../../outside/providers";
import { contactWriteEvents } from "../webhooks/record";
import { renderEmails } from "./create-emails";
import { requireInboundDomain } from "./reply-to";
import { threadingHeaders } from "./threading";
import { inboundMessages } from "../../db/inbound-schema";
import { readConfig } from "../../lib/config";
import { RenderBudget, rendersFromDataKeys } from "./render";

type Mailbox = string | { name?: string; email: string };

const mailbox = (m: Mailbox) => (typeof m === "string" ? { email: m, name: undefined } : m);

async function requestHash(body: SendRequest): Promise<string> {
  return sha256Hex(JSON.stringify(body));
}

/**
 * The response of an earlier request with this Idempotency-Key, or null when
 * there is none (an expired record is removed). The emails are read back by
 * the send's id, so the record is written in the same batch as the emails.
 */
async function replayIdempotent(db: Database, projectId: string, key: string, hash: string, alreadyRead?: IdempotencyRecord): Promise<SendResult | null> {
  const record = alreadyRead ?? (await idempotencyRecordOf(db.$client, projectId, key).get());
  if (!record) return null;
  if (Date.now() - record.createdAt.getTime() > IDEMPOTENCY_TTL_MS) {
    await deleteIdempotencyRecord(db.$client, record);
    return null;
  }
  // The key names one request: another body under it is a conflict (409, as Plunk answers), not a new send.
  if (record.requestHash !== hash) {
    throw new ApiError("CONFLICT", "This Idempotency-Key was used with a different request body", {
      errors: [{ field: "Idempotency-Key", message: "This Idempotency-Key was used with a different request body", code: "idempotency_key_reused" }],
      suggestion: "Use a new key for a different request; the same key with the same body within 24 hours replays the first answer.",
    });
  }
  const stored = record.response as Pick<SendResult, "suppressed" | "timestamp">;
  const sent = await db
    .select({ id: emails.id, contactId: emails.contactId, to: emails.toAddress })
    .from(emails)
    .where(and(eq(emails.projectId, projectId), eq(emails.sendId, record.sendId)))
    .orderBy(asc(emails.id));
  return {
    emails: sent.map((e) => ({ contact: { id: e.contactId ?? "", email: e.to }, email: e.id })),
    suppressed: stored.suppressed,
    timestamp: stored.timestamp,
  };
}

export interface AcceptOptions {
  /** The app's cache of domains seen VERIFIED (read first, filled by a successful check). */
  verifiedDomains: VerifiedDomains;
  idempotencyKey?: string;
  requestUrl?: string;
  /** Resolves once the request may write (the rate limiter's answer, awaited after the reads); rejects to refuse it. */
  beforeWrite?: () => Promise<void>;
  /** The invocation's door out: the contact.* events the write records and its workflow-trigger probe leave through it. */
  afterCommit: AfterCommit;
}

/** One email per distinct address; the first spelling of a name wins. */
function distinctRecipients(body: SendRequest) {
  const recipients = new Map<string, { email: string; name?: string }>();
  for (const m of (Array.isArray(body.to) ? body.to : [body.to]).map(mailbox)) {
    if (!recipients.has(m.email)) recipients.set(m.email, m);
  }
  return recipients;
}

/**
 * Step 1, reads: everything the send depends on in one batch (one round trip):
 * the Idempotency-Key record, the template, the from domain (unless this
 * isolate saw it VERIFIED moments ago), the recipients' suppressions and
 * contacts. Only a template's own from address, when its domain is not cached,
 * costs a second read.
 */
async function readSendInputs(db: Database, projectId: string, body: SendRequest, addresses: string[], { idempotencyKey, verifiedDomains }: AcceptOptions) {
  const fromGiven = body.from ? mailbox(body.from).email : undefined;
  const domainQuery = fromGiven && !verifiedDomains.get(projectId, fromGiven) ? findSendingDomain(db, projectId, fromGiven) : null;
  const d1 = db.$client;
  // Fixed SQL for the reads every send makes; the optional ones are built by drizzle and mapped back with fromRow.
  const batch = new WriteBatch(d1);
  const records = batch.add(idempotencyKey ? idempotencyRecordOf(d1, projectId, idempotencyKey) : null);
  const templateRows = batch.add(
    body.template
      ? db
          .select()
          .from(templates)
          .where(and(eq(templates.id, body.template), eq(templates.projectId, projectId)))
      : null,
  );
  // Domains live in the control database: in this batch when it is the project's shard (shard 0), else beside it.
  const domainApart = domainQuery && controlDbOf(d1) !== d1 ? domainQuery : null;
  const domainRows = batch.add(domainApart ? null : domainQuery);
  const suppressions = batch.add(suppressionsOf(d1, projectId, addresses));
  const contactRows = batch.add(contactsByEmail(d1, projectId, addresses));
  // No from in the request: the project's default sender, should the template have none either. Mail that may be
  // marketing (a template, a topic, a broadcast): the project's unsubscribe footer, should the body need one.
  const mayBeMarketing = body.template !== undefined || body.topic !== undefined || body.stream === "BROADCAST";
  const defaultRows = batch.add(body.from && !mayBeMarketing ? null : defaultSenderQuery(db, projectId));
  // Aimed at a topic: the topic, and the recipients' choices for it (gate 4).
  const topicRows = batch.add(body.topic ? topicByKeyQuery(db, projectId, body.topic) : null);
  const choiceRows = batch.add(body.topic ? topicChoicesOf(db, projectId, body.topic, addresses) : null);
  // Answering an inbound message: its Message-ID and References, of this project only.
  const inboundRows = batch.add(
    body.inReplyTo
      ? db
          .select({ messageId: inboundMessages.messageId, references: inboundMessages.referencesJson })
          .from(inboundMessages)
          .where(and(eq(inboundMessages.id, body.inReplyTo), eq(inboundMessages.projectId, projectId)))
      : null,
  );
  const [read, domainsApart] = await Promise.all([batch.run(), domainApart ?? undefined]);
  const [record] = read.rows(records).map((row) => fromRow(idempotencyKeys, row));
  const [template] = read.rows(templateRows).map((row) => fromRow(templates, row));
  const [domain] = domainsApart ?? read.rows(domainRows).map((row) => fromRow(domains, row));
  const suppressed = read.rows(suppressions) as unknown as ({ email: string } & Suppression)[];
  const existing = read.rows(contactRows).map(contactFromRow);
  const [defaults] = read.rows(defaultRows).map((row) => fromRow(projects, row));
  const [topic] = read.rows(topicRows).map((row) => fromRow(topics, row));
  const choices = read.rows(choiceRows) as unknown as { email: string; status: "OPT_IN" | "OPT_OUT" | "PENDING" }[];
  // Raw rows (the batch runs the query's SQL): keyed by column name.
  const [answered] = read.rows(inboundRows) as unknown as ({ message_id: string | null; references_json: string | null } | undefined)[];
  return {
    answered,
    topic: topic as Topic | undefined,
    topicChoices: new Map(choices.map((row) => [row.email, row.status])),
    defaultFrom: defaultSenderOf(defaults),
    unsubscribeFooter: defaults?.unsubscribeFooter ?? null,
    record: record as IdempotencyRecord | undefined,
    template: template as Template | undefined,
    domainRead: domainQuery !== null,
    domain: domain as typeof domains.$inferSelect | undefined,
    suppressed: new Map(suppressed.map((row) => [row.email, { reason: row.reason, stream: row.stream }])),
    existing: new Map(existing.map((row) => [row.email, row])),
  };
}

type SendInputs = Awaited<ReturnType<typeof readSendInputs>>;

/**
 * Step 2, the message: subject, body and sender from the request, the
 * template filling what the request leaves out. 422 naming what is missing.
 */
function resolveMessage(body: SendRequest, template: Template | undefined, defaultFrom?: { email: string; name?: string }) {
  const subject = body.subject ?? template?.subject;
  const html = body.body ?? template?.body;
  const from = body.from ? mailbox(body.from) : template?.from ? { email: template.from, name: template.fromName ?? undefined } : defaultFrom;
  if (!subject || !html || !from) {
    throw ApiError.validation(
      [
        !from && { field: "from", message: "from is required (the template has no from address and the project no default sender)", code: "required" },
        !subject && { field: "subject", message: "subject is required", code: "required" },
        !html && { field: "body", message: "body is required", code: "required" },
      ].filter((e): e is { field: string; message: string; code: string } => Boolean(e)),
    );
  }
  return {
    subject,
    html,
    from,
    fromName: body.name ?? from.name ?? (body.from || !template?.from ? undefined : (template.fromName ?? undefined)),
    replyTo: body.reply ?? template?.replyTo ?? null,
    stream: sendStream(body, template),
  };
}

/**
 * The send's stream: BROADCAST when it asks for it (`stream: "broadcast"`), uses a MARKETING
 * template (Plunk's marketing mail) or names a topic; else TRANSACTIONAL. `transactional` with a
 * MARKETING template or a topic is a 422: consent is not a switch the sender can flip.
 */
function sendStream(body: SendRequest, template: Template | undefined): Stream {
  const namesTopic = "topic" in body && body.topic !== undefined && body.topic !== null;
  const marketing = template?.type === "MARKETING" || namesTopic;
  if (body.stream === "TRANSACTIONAL" && marketing) {
    throw ApiError.validation([
      {
        field: "stream",
        message: namesTopic
          ? "Mail aimed at a topic is broadcast mail"
          : "A MARKETING template sends broadcast mail; use a TRANSACTIONAL template for transactional mail",
        code: "invalid_stream",
      },
    ]);
  }
  return body.stream === "BROADCAST" || marketing ? "BROADCAST" : "TRANSACTIONAL";
}

/**
 * Step 4, who gets it: the consent gates (src/services/consent/gates.ts) per recipient. Those
 * suppressed for the send's stream are listed (gate SUPPRESSED), not sent to; broadcast mail
 * refuses the whole send (400, naming the gate) if any other recipient is refused (UNSUBSCRIBED,
 * TOPIC). `subscribed: true` opts in new contacts only: it never re-subscribes someone who
 * unsubscribed (only they, or a contact update, can do that).
 */
function sendableRecipients(body: SendRequest, addresses: string[], inputs: SendInputs, stream: Stream) {
  const suppressed: SendResult["suppressed"] = [];
  const sendable: string[] = [];
  const refused: { email: string; gate: string }[] = [];
  for (const email of addresses) {
    const suppression = inputs.suppressed.get(email);
    const contact = inputs.existing.get(email);
    const topic = inputs.topic
      ? { topicId: inputs.topic.id, defaultSubscription: inputs.topic.defaultSubscription, choice: inputs.topicChoices.get(email) ?? null }
      : null;
    const refusal = refusalOf({ stream, suppression, subscribed: contact ? contact.subscribed : null, subscribesNew: body.subscribed === true, topic });
    if (!refusal) sendable.push(email);
    else if (refusal.gate === "SUPPRESSED") suppressed.push({ email, reason: suppression!.reason, stream: suppression!.stream, gate: "SUPPRESSED" });
    else refused.push({ email, gate: refusal.gate });
  }
  if (refused.length > 0) {
    throw new ApiError("INVALID_STATE", `Marketing email cannot be sent to unsubscribed contacts: ${refused.map((r) => r.email).join(", ")}`, {
      errors: refused.map((r) => ({
        field: "to",
        code: r.gate,
        message: `${r.email}: ${r.gate === "TOPIC" ? "not subscribed to the email's topic" : "not subscribed to marketing mail"}`,
      })),
      suggestion: "Send as transactional mail (a TRANSACTIONAL template, no topic), or only to subscribed contacts.",
    });
  }
  return { sendable, suppressed };
}

/**
 * In-Reply-To and References of a send answering the inbound message `inReplyTo` (read with the
 * send's inputs, of this project only): a 422 naming `inReplyTo` when there is no such message, or
 * it has no usable Message-ID; nothing is written then.
 */
function answerHeaders(inReplyTo: string, answered: SendInputs["answered"]): Record<string, string> {
  if (!answered) {
    throw ApiError.validation([{ field: "inReplyTo", message: `No inbound message ${inReplyTo} in this project`, code: "unknown_inbound_message" }]);
  }
  let references: unknown = answered.references_json;
  try {
    references = typeof references === "string" ? JSON.parse(references) : references;
  } catch {
    references = [];
  }
  const headers = threadingHeaders(answered.message_id, references);
  if (!headers) {
    throw ApiError.validation([{ field: "inReplyTo", message: `The inbound message ${inReplyTo} has no usable Message-ID to answer`, code: "no_message_id" }]);
  }
  return headers;
}

/** What a send read before writing (readSendInputs), or nothing at all (the write-only path). */
const NOTHING_READ: SendInputs = {
  answered: undefined,
  topic: undefined,
  topicChoices: new Map(),
  defaultFrom: undefined,
  unsubscribeFooter: null,
  record: undefined,
  template: undefined,
  domainRead: false,
  domain: undefined,
  suppressed: new Map(),
  existing: new Map(),
};

/**
 * Whether the send can skip the reads: no template and no Idempotency-Key to
 * look up, its from domain seen VERIFIED moments ago (the domain cache), and
 * a subject and body that render from the request alone (every variable they
 * read is a key of `data` or a built-in: rendersFromDataKeys). The only read
 * left, the recipients' suppressions, is then checked inside the write batch.
 */
async function needsNoReads(projectId: string, body: SendRequest, { idempotencyKey, verifiedDomains }: AcceptOptions): Promise<boolean> {
  // Broadcast mail reads its recipients' contacts (the marketing subscription, gate 3).
  if (idempotencyKey || body.template || !body.from || !body.subject || !body.body || body.stream === "BROADCAST" || "topic" in body || body.inReplyTo) {
    return false;
  }
  if (!verifiedDomains.get(projectId, mailbox(body.from).email)) return false;
  const dataKeys = new Set(Object.keys(body.data ?? {}));
  // A markdown body renders on an engine of its own per request (renderBody): nothing to share, so "text".
  const bodyEngine = (body.type ?? "html") === "html" ? "html" : "text";
  return (await rendersFromDataKeys(body.subject, dataKeys, "text")) && (await rendersFromDataKeys(body.body, dataKeys, bodyEngine));
}

/**
 * POST /v1/send as a pipeline: read everything in one batch, resolve the
 * message, check the sender, pick the recipients, render, size; then, once the
 * rate limiter allowed it, one atomic batch checks the quotas (emails today,
 * new contacts, stored bytes), records the Idempotency-Key, upserts every
 * recipient's contact, stores one QUEUED email per recipient and the
 * attachments; only then are {emailId} messages enqueued. If enqueueing
 * fails, the records stay QUEUED and the stuck-mail sweep enqueues them later.
 * Two D1 round trips in all on a warm isolate, one when nothing needs reading
 * (needsNoReads): then the write batch starts by checking that no recipient is
 * suppressed, and if one is, it writes nothing and the send takes the reading
 * path, which lists them (docs/architecture.md "What a request costs").
 */
export async function acceptSend(db: Database, env: Env, projectId: string, body: SendRequest, options: AcceptOptions): Promise<SendResult> {
  // Reply tracking asked for on a deployment that cannot receive the replies: 409 before anything is read.
  if (body.trackReplies) requireInboundDomain(readConfig(env).INBOUND_DOMAIN, "trackReplies");
  const hash = options.idempotencyKey ? await requestHash(body) : "";
  const recipients = distinctRecipients(body);
  const addresses = [...recipients.keys()];

  if (await needsNoReads(projectId, body, options)) {
    try {
      return await writeSend(db, env, projectId, body, NOTHING_READ, { options, hash, recipients, addresses, checkSuppressions: true });
    } catch (err) {
      // Nothing was written: the batch aborted on a suppressed recipient, or a 422 came
      // before it. A 422 can depend on rendering a suppressed recipient too (the render
      // budget counts every recipient, {{email}} changes sizes), so the reading path,
      // which renders only those sent to, gives the answer.
      if (raisedGuard(err) !== "SEND_HAS_SUPPRESSED_RECIPIENTS" && !(err instanceof ApiError && err.code === "VALIDATION_ERROR")) throw err;
    }
  }
  const inputs = await readSendInputs(db, projectId, body, addresses, options);
  if (options.idempotencyKey && inputs.record) {
    const replay = await replayIdempotent(db, projectId, options.idempotencyKey, hash, inputs.record);
    if (replay) return replay;
  }
  return writeSend(db, env, projectId, body, inputs, { options, hash, recipients, addresses, checkSuppressions: false });
}

/** Steps 2 to 7 on what the send read (or NOTHING_READ), then the enqueue. */
async function writeSend(
  db: Database,
  env: Env,
  projectId: string,
  body: SendRequest,
  inputs: SendInputs,
  w: {
    options: AcceptOptions;
    hash: string;
    recipients: Map<string, { email: string; name?: string }>;
    addresses: string[];
    /** The batch checks the suppressions itself (nothing was read): suppressionGuard first. */
    checkSuppressions: boolean;
  },
): Promise<SendResult> {
  const { options, hash, recipients, addresses } = w;
  if (body.template && !inputs.template) throw ApiError.notFound("Template");
  if (body.topic && !inputs.topic)
    throw ApiError.validation([{ field: "topic", message: `No topic with key ${body.topic} in this project`, code: "unknown_topic" }]);
  const message = resolveMessage(body, inputs.template, inputs.defaultFrom);
  const threading = body.inReplyTo ? answerHeaders(body.inReplyTo, inputs.answered) : {};
  // Step 3, the sender: the from domain must be VERIFIED (cached for a few seconds once seen so).
  const sender = await senderDomain(db, projectId, message.from.email, {
    cache: options.verifiedDomains,
    read: inputs.domainRead ? { domain: inputs.domain } : undefined,
  });
  // Broadcast mail needs a provider that carries it (not Cloudflare Email Service alone): 409 before anything is written.
  if (message.stream === "BROADCAST") assertBroadcastAvailable(env);
  const { sendable, suppressed } = sendableRecipients(body, addresses, inputs, message.stream);
  const { persistent, all: forThisEmail } = splitPersistentData(body.data as JsonObject | undefined);
  const d1 = db.$client;
  const sendId = newId();
  const now = new Date();
  const response: SendResult = { emails: [], suppressed, timestamp: now.toISOString() };
  // `subscribed: true` opts in new contacts only (never re-subscribes someone who unsubscribed); `false` unsubscribes.
  const upsert = upsertContacts(
    d1,
    projectId,
    sendable.map((address) => ({ email: address, subscribed: body.subscribed === false ? false : undefined, data: persistent })),
    { onExisting: "mergeChanged", subscribedByDefault: body.subscribed === true, now },
  );
  // contact.created for new recipients; .updated / .unsubscribed when the send brings data or `subscribed: false`.
  const changes = Object.keys(persistent).length > 0 || body.subscribed === false;
  const hooks = contactWriteEvents(d1, {
    projectId,
    at: now,
    contacts: sendable.map((address, i) => ({
      email: address,
      creates: true,
      newId: upsert.ids[i],
      updates: changes,
      subscribed: body.subscribed === false ? false : undefined,
    })),
  });
  // Steps 5 and 6: render on one budget for the whole request, and size (a 422 before anything is written).
  const emails = await renderEmails(
    env,
    {
      projectId,
      sendId,
      templateId: body.template ?? null,
      from: message.from.email,
      fromName: message.fromName ?? null,
      replyTo: message.replyTo,
      senderDomain: sender,
      headers: { ...body.headers, ...threading },
      subject: message.subject,
      html: message.html,
      bodyFormat: body.type ?? "html",
      marketing: message.stream === "BROADCAST",
      unsubscribeFooter: inputs.unsubscribeFooter,
      topicId: inputs.topic?.id ?? null,
      attachments: body.attachments,
      track: body.track,
      trackReplies: body.trackReplies,
    },
    sendable.map((address) => ({
      to: address,
      toName: recipients.get(address)?.name ?? null,
      contactEmail: address.toLowerCase(),
      data: { ...(inputs.existing.get(address)?.data ?? {}), ...forThisEmail },
    })),
    {
      requestUrl: options.requestUrl,
      budget: new RenderBudget(),
      // Stored bytes up front: what the contact upsert adds at most (the emails' are added to it).
      use: { contacts: sendable.map((a) => a.toLowerCase()), storedBytesAtMost: upsert.storedBytesAtMost() },
      beforeWrite: options.beforeWrite,
      now,
    },
  );
  // Step 7, one atomic batch. A send that turns out to have suppressed recipients must not be
  // refused for quota they would have used: the suppression check goes before the quota guard.
  const batch = new WriteBatch(d1);
  if (w.checkSuppressions) batch.add(suppressionGuard(d1, projectId, addresses, message.stream));
  emails.addGuard(batch);
  // The Idempotency-Key record (a concurrent duplicate fails on its unique key, writes nothing, and replays).
  if (options.idempotencyKey) {
    batch.add(
      insertIdempotencyRecord(d1, {
        projectId,
        key: options.idempotencyKey,
        requestHash: hash,
        sendId,
        response: { suppressed: response.suppressed, timestamp: response.timestamp },
        createdAt: now,
      }),
    );
  }
  batch.add(...hooks.before);
  const upserted = batch.add(...upsert.statements);
  batch.add(...hooks.after);
  emails.add(batch);
  // Last: whether a contact this send created started a workflow (see outboxProbe).
  batch.add(outboxProbe(d1, projectId));
  let result: BatchResult;
  try {
    result = await batch.run({ env, now, afterCommit: options.afterCommit });
  } catch (err) {
    if (options.idempotencyKey && isUniqueViolation(err, "idempotency_keys")) {
      const replay = await replayIdempotent(db, projectId, options.idempotencyKey, hash);
      if (replay) return replay;
    }
    throw err;
  }
  await emails.enqueue(result);
  const contacts = upsert.contacts(result.each(upserted));
  response.emails = emails.emails.map((e) => ({ contact: { id: contacts.get(e.to.toLowerCase())!.id, email: e.to }, email: e.id }));
  return response;
}
