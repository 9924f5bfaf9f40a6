import { and, asc, eq, inArray, lt, sql } from "drizzle-orm";
import { runBatch, type Database } from "../../db/client";
import { contacts, emails, idempotencyKeys, templates, type Contact, type JsonObject, type Template } from "../../db/schema";
import type { Env, SendEmailMessage } from "../../env";
import { publicUrl, requireSecret } from "../../lib/config";
import { sha256Hex } from "../../lib/crypto";
import { ApiError } from "../../lib/errors";
import { newId } from "../../lib/ids";
import { buildContactUpsert, splitPersistentData } from "../contacts";
import { requireVerifiedDomain } from "../domains";
import { findSuppressed } from "../suppressions";
import { addStoredBytes, assertContactQuota, assertDailyQuota, assertStoredBytesQuota } from "../quotas";
import { unsubscribeUrl } from "../tracking/links";
import type { SendRequest } from "../../routes/send";
import { base64DecodedSize, buildAttachmentInserts, estimateRawMessageSize, MAX_RAW_MESSAGE_BYTES } from "./attachments";
import { RenderBudget, renderBody, renderSubject } from "./render";

export const MAX_RECIPIENTS = 50;
const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

type Mailbox = string | { name?: string; email: string };

export interface SendResult {
  emails: { contact: { id: string; email: string }; email: string }[];
  suppressed: { email: string; reason: "BOUNCE" | "COMPLAINT" }[];
  timestamp: string;
}

const mailbox = (m: Mailbox) => (typeof m === "string" ? { email: m, name: undefined } : m);

async function requestHash(body: SendRequest): Promise<string> {
  return sha256Hex(JSON.stringify(body));
}

/**
 * The response of an earlier request with this Idempotency-Key, or null when
 * there is none (an expired record is removed). The emails are read back by
 * the send's id, so the record is written in the same batch as the emails.
 */
async function replayIdempotent(db: Database, projectId: string, key: string, hash: string): Promise<SendResult | null> {
  const record = await db.query.idempotencyKeys.findFirst({
    where: and(eq(idempotencyKeys.projectId, projectId), eq(idempotencyKeys.key, key)),
  });
  if (!record) return null;
  if (Date.now() - record.createdAt.getTime() > IDEMPOTENCY_TTL_MS) {
    await db
      .delete(idempotencyKeys)
      .where(and(eq(idempotencyKeys.projectId, projectId), eq(idempotencyKeys.key, key), eq(idempotencyKeys.requestHash, record.requestHash)));
    return null;
  }
  if (record.requestHash !== hash) {
    throw ApiError.validation([
      {
        field: "Idempotency-Key",
        message: "This Idempotency-Key was used with a different request body",
        code: "idempotency_key_reused",
      },
    ]);
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

/** Deletes Idempotency-Key records older than 24 hours (scheduled). */
export async function purgeExpiredIdempotencyKeys(db: Database, now = new Date()): Promise<void> {
  await db.delete(idempotencyKeys).where(lt(idempotencyKeys.createdAt, new Date(now.getTime() - IDEMPOTENCY_TTL_MS)));
}

const isUniqueViolation = (err: unknown) => /UNIQUE constraint failed: idempotency_keys/.test(String((err as Error)?.message ?? err));

async function loadTemplate(db: Database, projectId: string, id: string): Promise<Template> {
  const template = await db.query.templates.findFirst({
    where: and(eq(templates.id, id), eq(templates.projectId, projectId)),
  });
  if (!template) throw ApiError.notFound("Template");
  return template;
}

/**
 * POST /v1/send: validates the whole request, then in one atomic batch
 * records the Idempotency-Key, upserts every recipient's contact, stores one
 * QUEUED email record per recipient and the attachments, and only then
 * enqueues {emailId} messages. If enqueueing fails, the records stay
 * QUEUED and the stuck-mail sweep enqueues them later.
 */
export async function acceptSend(
  db: Database,
  env: Env,
  projectId: string,
  body: SendRequest,
  options: { idempotencyKey?: string; requestUrl?: string } = {},
): Promise<SendResult> {
  const hash = options.idempotencyKey ? await requestHash(body) : "";
  if (options.idempotencyKey) {
    const replay = await replayIdempotent(db, projectId, options.idempotencyKey, hash);
    if (replay) return replay;
  }

  const template = body.template ? await loadTemplate(db, projectId, body.template) : undefined;
  const subject = body.subject ?? template?.subject;
  const html = body.body ?? template?.body;
  const from = body.from ? mailbox(body.from) : template?.from ? { email: template.from, name: template.fromName ?? undefined } : undefined;
  if (!subject || !html || !from) {
    throw ApiError.validation(
      [
        !from && { field: "from", message: "from is required (the template has no from address)", code: "required" },
        !subject && { field: "subject", message: "subject is required", code: "required" },
        !html && { field: "body", message: "body is required", code: "required" },
      ].filter((e): e is { field: string; message: string; code: string } => Boolean(e)),
    );
  }
  const fromName = body.name ?? from.name ?? (body.from ? undefined : template?.fromName ?? undefined);
  const replyTo = body.reply ?? template?.replyTo ?? null;
  const marketing = template?.type === "MARKETING";
  const senderDomain = (await requireVerifiedDomain(db, projectId, from.email)).name;

  // One email per distinct address; the first spelling of a name wins.
  const recipients = new Map<string, { email: string; name?: string }>();
  for (const m of (Array.isArray(body.to) ? body.to : [body.to]).map(mailbox)) {
    if (!recipients.has(m.email)) recipients.set(m.email, m);
  }
  const addresses = [...recipients.keys()];

  // Both reads at once (at most 50 addresses: one IN list each).
  const [suppressedMap, existingContacts] = await Promise.all([
    findSuppressed(db, projectId, addresses),
    db
      .select()
      .from(contacts)
      .where(and(eq(contacts.projectId, projectId), inArray(contacts.email, addresses))),
  ]);
  const suppressed = addresses.filter((a) => suppressedMap.has(a)).map((email) => ({ email, reason: suppressedMap.get(email)! }));
  const sendable = addresses.filter((a) => !suppressedMap.has(a));
  const existing = new Map<string, Contact>(existingContacts.map((row) => [row.email, row]));

  if (marketing) {
    // `subscribed: true` opts in new contacts only: it never re-subscribes
    // someone who unsubscribed (only they, or a contact update, can do that).
    const unsubscribed = sendable.filter((a) => {
      const contact = existing.get(a);
      return contact ? !contact.subscribed : body.subscribed !== true;
    });
    if (unsubscribed.length > 0) {
      throw ApiError.invalidState(
        `Marketing email cannot be sent to unsubscribed contacts: ${unsubscribed.join(", ")}`,
        "Send with a TRANSACTIONAL template, or only to subscribed contacts.",
      );
    }
  }

  const { persistent, all: forThisEmail } = splitPersistentData(body.data as JsonObject | undefined);
  const sendId = newId();
  const now = new Date();
  const baseUrl = publicUrl(env, options.requestUrl);
  const secret = requireSecret(env, "LINK_SIGNING_SECRET");

  // One render budget for the whole request: every recipient's subject and body draw on it.
  const budget = new RenderBudget();
  const prepared = await Promise.all(
    sendable.map(async (address) => {
      const emailId = newId();
      const vars = {
        data: { ...(existing.get(address)?.data ?? {}), ...forThisEmail },
        email: address,
        unsubscribeUrl: await unsubscribeUrl(baseUrl, secret, emailId),
      };
      return {
        emailId,
        address,
        // Values from data may hold line breaks; a subject is one line.
        subject: await renderSubject(subject, vars, budget),
        html: await renderBody(html, vars, body.type ?? "html", budget),
      };
    }),
  );

  if (body.attachments?.length && prepared.length > 0) {
    const encoder = new TextEncoder();
    const largestHtml = Math.max(...prepared.map((p) => encoder.encode(p.html).length));
    const estimate = estimateRawMessageSize(body.attachments.map((a) => base64DecodedSize(a.content) ?? 0), largestHtml);
    if (estimate > MAX_RAW_MESSAGE_BYTES) {
      throw ApiError.validation([
        {
          field: "attachments",
          message: `With this body the message would be about ${estimate} bytes once encoded; one email carries at most ${MAX_RAW_MESSAGE_BYTES} bytes through the provider`,
          code: "too_big",
        },
      ]);
    }
  }

  // Per-project quotas (src/services/quotas.ts): emails today, new contacts, stored mail.
  const storedBytes =
    prepared.length === 0
      ? 0
      : prepared.reduce((sum, p) => sum + new TextEncoder().encode(p.html).length, 0) +
        (body.attachments ?? []).reduce((sum, a) => sum + (base64DecodedSize(a.content) ?? 0), 0);
  await assertDailyQuota(db, env, projectId, "QUOTA_EMAILS_PER_DAY", prepared.length, now);
  await assertContactQuota(db, env, projectId, prepared.map((p) => p.address));
  await assertStoredBytesQuota(db, env, projectId, storedBytes);

  const response: SendResult = { emails: [], suppressed, timestamp: now.toISOString() };
  const upserts = prepared.map((p) =>
    buildContactUpsert(db, projectId, { email: p.address, subscribed: body.subscribed, data: persistent }, false),
  );
  const emailInserts = prepared.map((p) =>
    db.insert(emails).values({
      id: p.emailId,
      projectId,
      sendId,
      templateId: template?.id ?? null,
      // The contact row is written earlier in the same batch.
      contactId: sql`(SELECT id FROM contacts WHERE project_id = ${projectId} AND email = ${p.address})`,
      fromAddress: from.email,
      fromName: fromName ?? null,
      toAddress: p.address,
      toName: recipients.get(p.address)?.name ?? null,
      replyTo,
      subject: p.subject,
      html: p.html,
      headers: body.headers ?? {},
      marketing,
      hasAttachments: (body.attachments?.length ?? 0) > 0,
      status: "QUEUED",
      messageId: `${p.emailId}@${senderDomain}`,
      queuedAt: now,
      createdAt: now,
      updatedAt: now,
    }),
  );
  // The Idempotency-Key record goes first in the same atomic batch: a
  // concurrent duplicate fails on its unique key, writes nothing, and replays.
  const idempotencyInsert = options.idempotencyKey
    ? [
        db.insert(idempotencyKeys).values({
          projectId,
          key: options.idempotencyKey,
          requestHash: hash,
          sendId,
          response: { suppressed, timestamp: response.timestamp },
          createdAt: now,
        }),
      ]
    : [];
  let results: unknown[];
  try {
    results = await runBatch(db, [
      ...idempotencyInsert,
      ...upserts.map((u) => u.query),
      ...emailInserts,
      ...(prepared.length > 0 ? buildAttachmentInserts(db, sendId, body.attachments ?? []) : []),
      ...(storedBytes > 0 ? [addStoredBytes(db, projectId, storedBytes)] : []),
    ]);
  } catch (err) {
    if (options.idempotencyKey && isUniqueViolation(err)) {
      const replay = await replayIdempotent(db, projectId, options.idempotencyKey, hash);
      if (replay) return replay;
    }
    throw err;
  }
  const upsertResults = results.slice(idempotencyInsert.length);
  response.emails = prepared.map((p, i) => ({
    contact: { id: upserts[i].result(upsertResults[i] as Contact[]).contact.id, email: p.address },
    email: p.emailId,
  }));

  await enqueueEmails(env, projectId, response.emails.map((e) => e.email));
  return response;
}

/** Fans email ids out to the send queue, 100 messages per sendBatch. */
export async function enqueueEmails(env: Env, projectId: string, emailIds: string[]): Promise<void> {
  for (let i = 0; i < emailIds.length; i += 100) {
    const messages = emailIds.slice(i, i + 100).map((emailId) => ({ body: { emailId, projectId } satisfies SendEmailMessage }));
    try {
      await env.EMAIL_QUEUE.sendBatch(messages);
    } catch (err) {
      // The records are QUEUED in D1; the scheduled sweep re-enqueues them.
      console.error("enqueue failed; the sweep will retry", err);
    }
  }
}
