import { runStatements, type Database } from "../../db/client";
import type { JsonObject } from "../../db/schema";
import type { Env } from "../../env";
import { publicUrl, requireSecret } from "../../lib/config";
import { ApiError } from "../../lib/errors";
import { newId } from "../../lib/ids";
import { jsonByteLength } from "../../lib/validators";
import { base64DecodedSize, estimateRawMessageSize, MAX_RAW_MESSAGE_BYTES } from "../../schemas/attachments";
import { insertQueued, insertSendHeaders } from "../../store/emails";
import { quotaGuard, runGuarded, storedBytesGuard, type QuotaUse } from "../../store/guards";
import { confirmUrl, unsubscribeUrl } from "../tracking/links";
import { type AttachmentInput, buildAttachmentInserts } from "./attachments";
import { type RenderBudget, renderBody, renderSubject } from "./render";
import { enqueueMail } from "../../queues";

/**
 * The one path that creates email, for /v1/send, campaign pages, campaign
 * test sends and workflow steps: stamp ids, render, size, guard, insert,
 * enqueue. Every quota is checked in the write's own batch (quotaGuard first;
 * stored bytes there too when the caller bounds its own, else storedBytesGuard
 * after the writes the stored-bytes triggers counted).
 */

type Statement = Parameters<typeof runStatements>[1][number];

/** What every email of one send shares: templates are rendered per recipient. */
export interface EmailDraft {
  projectId: string;
  /** Default: a new id. */
  sendId?: string;
  templateId?: string | null;
  campaignId?: string | null;
  from: string;
  fromName?: string | null;
  replyTo?: string | null;
  /** The verified domain of `from`: each email's Message-ID is `<id>@<senderDomain>`. */
  senderDomain: string;
  /** Custom headers (/v1/send): stored once for the send (send_headers), read with each email's HTML. */
  headers?: Record<string, string>;
  /** Liquid templates. */
  subject: string;
  html: string;
  bodyFormat?: "html" | "markdown";
  /** Put before the rendered subject (a campaign test's "[TEST] "). */
  subjectPrefix?: string;
  marketing: boolean;
  /** Bulk mail: the bulk queue, and the audience check at the claim. */
  bulk?: boolean;
  tracked?: boolean;
  attachments?: AttachmentInput[];
  /** A workflow step's email: written only while this execution is active and the send has none yet. */
  whileExecution?: string | null;
  /** Written only if this contact exists by then (the contact a double opt-in batch creates). */
  onlyIfContact?: string | null;
  /** A double opt-in confirmation: its templates get `confirmUrl`, the signed confirm link. */
  confirmation?: boolean;
}

/** One recipient: the address, the contact (by id or by address) and the data its templates see. */
export interface Recipient {
  to: string;
  toName?: string | null;
  contactId?: string | null;
  contactEmail?: string | null;
  data: JsonObject;
}

export interface QueueOptions {
  requestUrl?: string;
  /** One render budget for every recipient (a request's); default: one per render. */
  budget?: RenderBudget;
  /** false: no count quotas (a campaign page: its whole audience was checked when it started); stored bytes are always checked. */
  quotas?: boolean;
  /**
   * More quota use the batch adds (the contacts /v1/send upserts). With `storedBytesAtMost` (at most
   * what the caller's own statements add to stored bytes) the stored-bytes check goes up front in the
   * quota guard, this batch's emails added to it, in place of a guard statement after the writes.
   */
  use?: Omit<QuotaUse, "emailsToday">;
  /** Awaited after rendering, before the write (the rate limiter's answer). */
  beforeWrite?: () => Promise<void>;
  /** The caller's statements in the same batch: before the quota guard, between it and the emails, and last. */
  first?: Statement[];
  beforeEmails?: Statement[];
  last?: Statement[];
  /** "none": the caller enqueues (a campaign page re-queues its page's still-QUEUED emails). */
  enqueue?: "inserted" | "none";
}

export interface QueuedEmails {
  /** Every rendered email, in the order of the recipients. */
  emails: { id: string; to: string }[];
  /** The ids the insert wrote (fewer when a campaign or workflow email existed already). */
  inserted: string[];
  /** The rows of each of the caller's statements, by group. */
  results: { first: Record<string, unknown>[][]; beforeEmails: Record<string, unknown>[][]; last: Record<string, unknown>[][] };
}

/** Renders every recipient's subject and body (the unsubscribe link signed only when a template names it). */
async function renderAll(env: Env, draft: EmailDraft, recipients: readonly Recipient[], options: QueueOptions) {
  const baseUrl = publicUrl(env, options.requestUrl);
  const secret = requireSecret(env, "LINK_SIGNING_SECRET");
  // Signing costs an HMAC per recipient: only when a template names the variable.
  const wantsUnsubscribeUrl = `${draft.subject}\n${draft.html}`.includes("unsubscribeUrl");
  return Promise.all(
    recipients.map(async (recipient) => {
      const id = newId();
      const vars = {
        data: recipient.data,
        email: recipient.to,
        unsubscribeUrl: wantsUnsubscribeUrl ? await unsubscribeUrl(baseUrl, secret, id) : "",
        ...(draft.confirmation ? { confirmUrl: await confirmUrl(baseUrl, secret, id) } : {}),
      };
      const subject = await renderSubject(draft.subject, vars, options.budget);
      return {
        id,
        recipient,
        subject: draft.subjectPrefix ? `${draft.subjectPrefix}${subject}`.slice(0, 998) : subject,
        html: await renderBody(draft.html, vars, draft.bodyFormat ?? "html", options.budget),
      };
    }),
  );
}

/** What the stored-bytes triggers count for these emails: each one's HTML and default headers (`{}`), the send's headers and attachments. */
function storedBytesOf(draft: EmailDraft, rendered: { html: string }[]): number {
  if (rendered.length === 0) return 0;
  const encoder = new TextEncoder();
  let bytes = 0;
  for (const email of rendered) bytes += encoder.encode(email.html).length + 2;
  if (draft.headers && Object.keys(draft.headers).length > 0) bytes += jsonByteLength(draft.headers);
  for (const attachment of draft.attachments ?? []) bytes += base64DecodedSize(attachment.content) ?? 0;
  return bytes;
}

/** With attachments, the largest email must fit what one provider call carries. */
function assertMessageSize(draft: EmailDraft, rendered: { html: string }[]) {
  if (rendered.length === 0 || !draft.attachments?.length) return;
  const encoder = new TextEncoder();
  const htmlBytes = rendered.map((p) => encoder.encode(p.html).length);
  const attachmentBytes = draft.attachments.map((a) => base64DecodedSize(a.content) ?? 0);
  const estimate = estimateRawMessageSize(attachmentBytes, Math.max(...htmlBytes));
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

/**
 * Creates QUEUED emails for `recipients` from `draft` in one atomic D1 batch
 * (with the caller's statements, see QueueOptions), then enqueues them. A
 * quota the batch would pass aborts it with the quota's ApiError; a render
 * or size problem is a 422 before anything is written. If enqueueing fails,
 * the records stay QUEUED and the stuck-mail sweep enqueues them later.
 */
export async function queueEmails(
  db: Database,
  env: Env,
  draft: EmailDraft,
  recipients: readonly Recipient[],
  options: QueueOptions = {},
): Promise<QueuedEmails> {
  const rendered = await renderAll(env, draft, recipients, options);
  const checkQuotas = options.quotas !== false;
  assertMessageSize(draft, rendered);
  await options.beforeWrite?.();

  const d1 = db.$client;
  const now = new Date();
  const sendId = draft.sendId ?? newId();
  const use: QuotaUse = { ...options.use, emailsToday: rendered.length };
  const bytesUpFront = checkQuotas && use.storedBytesAtMost !== undefined;
  if (bytesUpFront) use.storedBytesAtMost! += storedBytesOf(draft, rendered);
  const guard = checkQuotas ? quotaGuard(d1, env, draft.projectId, use, now) : null;
  const inserts = insertQueued(
    d1,
    {
      projectId: draft.projectId,
      sendId,
      templateId: draft.templateId,
      campaignId: draft.campaignId,
      from: draft.from,
      fromName: draft.fromName,
      replyTo: draft.replyTo,
      marketing: draft.marketing,
      bulk: draft.bulk,
      tracked: draft.tracked,
      hasAttachments: (draft.attachments?.length ?? 0) > 0,
      whileExecution: draft.whileExecution,
      onlyIfContact: draft.onlyIfContact,
      now,
    },
    rendered.map((e) => ({
      id: e.id,
      to: e.recipient.to,
      toName: e.recipient.toName,
      contactId: e.recipient.contactId,
      contactEmail: e.recipient.contactEmail,
      subject: e.subject,
      html: e.html,
      messageId: `${e.id}@${draft.senderDomain}`,
    })),
  );
  const first = options.first ?? [];
  const beforeEmails = options.beforeEmails ?? [];
  const last = options.last ?? [];
  const head = [...first, ...(guard ? [guard] : []), ...beforeEmails];
  const statements = [
    ...head,
    ...inserts,
    ...(rendered.length > 0 && draft.attachments?.length ? buildAttachmentInserts(db, sendId, draft.attachments) : []),
    // Custom headers (only /v1/send has them): once per send, not per recipient.
    ...(rendered.length > 0 && draft.headers && Object.keys(draft.headers).length > 0
      ? [insertSendHeaders(d1, draft.projectId, sendId, draft.headers, now)]
      : []),
    ...(rendered.length > 0 && !bytesUpFront ? [storedBytesGuard(d1, env, draft.projectId)] : []),
    ...last,
  ];
  const results = await runGuarded(env, () => runStatements(db, statements), now);
  const inserted = results
    .slice(head.length, head.length + inserts.length)
    .flat()
    .map((row) => String(row.id));
  if (options.enqueue !== "none") await enqueue(env, draft, inserted);
  return {
    emails: rendered.map((e) => ({ id: e.id, to: e.recipient.to })),
    inserted,
    results: {
      first: results.slice(0, first.length),
      beforeEmails: results.slice(head.length - beforeEmails.length, head.length),
      last: results.slice(results.length - last.length),
    },
  };
}

/** Transactional mail onto the send queue, bulk mail onto the bulk queue (src/queues.ts). */
function enqueue(env: Env, draft: EmailDraft, emailIds: string[]) {
  return enqueueMail(
    env,
    emailIds.map((emailId) => ({ emailId, projectId: draft.projectId, bulk: Boolean(draft.bulk), campaignId: draft.bulk ? draft.campaignId : null })),
  );
}
