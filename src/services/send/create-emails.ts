import type { JsonObject } from "../../db/schema";
import type { Env } from "../../env";
import { publicUrl, requireSecret } from "../../lib/config";
import { ApiError } from "../../lib/errors";
import { newId } from "../../lib/ids";
import { jsonByteLength } from "../../lib/validators";
import { base64DecodedSize, estimateRawMessageSize, MAX_RAW_MESSAGE_BYTES } from "../../schemas/attachments";
import { insertQueued, insertSendHeaders } from "../../store/emails";
import { type BatchResult, type Part, WriteBatch } from "../../store/batch";
import { quotaGuard, r2StoredBytesGuard, storedBytesGuard, type QuotaUse } from "../../store/guards";
import type { AfterCommit } from "../../lib/after-commit";
import { withUnsubscribeLink } from "./unsubscribe-footer";
import { confirmUrl, linkId, preferencesUrl, unsubscribeUrl } from "../tracking/links";
import { shardOf } from "../../db/shards";
import { type AttachmentInput, buildAttachmentInserts, storeAttachments } from "./attachments";
import type { NewAttachment } from "../../store/attachments";
import { type RenderBudget, renderBody, renderSubject } from "./render";
import { enqueueMail } from "../../queues";

/**
 * The one path that creates email, for /v1/send, campaign pages, campaign
 * test sends and workflow steps: stamp ids, render, size, guard, insert,
 * enqueue. Every quota is checked in the write's own batch (quotaGuard first;
 * stored bytes there too when the caller bounds its own, else storedBytesGuard
 * after the writes the stored-bytes triggers counted).
 */

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
  /** The send's own tracking choice (/v1/send track): a switch given wins over the project's and the domain's. */
  track?: { opens?: boolean; clicks?: boolean };
  /** The send's own reply tracking (/v1/send trackReplies): left out, the project's default (services/send/reply-to.ts). */
  trackReplies?: boolean;
  attachments?: AttachmentInput[];
  /** A workflow step's email: written only while this execution is active and the send has none yet. */
  whileExecution?: string | null;
  /** Written only if this contact exists by then (the contact a double opt-in batch creates). */
  onlyIfContact?: string | null;
  /** A double opt-in confirmation: its templates get `confirmUrl`, the signed confirm link. */
  confirmation?: boolean;
  /** The topic the mail is aimed at (emails.topic_id): List-Id, and its unsubscribe opts out of that topic only. */
  topicId?: string | null;
  /** Marketing mail without {{unsubscribeUrl}}: the project's footer (PATCH /project unsubscribeFooter); null or absent, the built-in one. */
  unsubscribeFooter?: string | null;
}

/** One recipient: the address, the contact (by id or by address) and the data its templates see. */
export interface Recipient {
  to: string;
  toName?: string | null;
  contactId?: string | null;
  contactEmail?: string | null;
  data: JsonObject;
}

export interface CreateOptions {
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
  /** The write's time (quota day, created_at); default: now. */
  now?: Date;
}

/** Renders every recipient's subject and body (the unsubscribe link signed only when a template names it). */
async function renderAll(env: Env, given: EmailDraft, recipients: readonly Recipient[], options: CreateOptions) {
  // Marketing mail (MARKETING templates, broadcast sends, campaigns) always carries an unsubscribe link.
  const draft = given.marketing ? { ...given, html: withUnsubscribeLink(given.html, given.unsubscribeFooter) } : given;
  const baseUrl = publicUrl(env, options.requestUrl);
  const secret = requireSecret(env, "LINK_SIGNING_SECRET");
  // Signing costs an HMAC per recipient: only when a template names the variable.
  const wantsUnsubscribeUrl = `${draft.subject}\n${draft.html}`.includes("unsubscribeUrl");
  const wantsPreferencesUrl = `${draft.subject}\n${draft.html}`.includes("preferencesUrl");
  return Promise.all(
    recipients.map(async (recipient) => {
      const id = newId();
      const vars = {
        data: recipient.data,
        email: recipient.to,
        unsubscribeUrl: wantsUnsubscribeUrl ? await unsubscribeUrl(baseUrl, secret, linkId(id, shardOf(env))) : "",
        preferencesUrl: wantsPreferencesUrl ? await preferencesUrl(baseUrl, secret, linkId(id, shardOf(env))) : "",
        ...(draft.confirmation ? { confirmUrl: await confirmUrl(baseUrl, secret, linkId(id, shardOf(env))) } : {}),
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

/** What the stored-bytes triggers count for these emails: each one's HTML and default headers (`{}`), the send's headers (attachments are in R2). */
function storedBytesOf(draft: EmailDraft, rendered: { html: string }[]): number {
  if (rendered.length === 0) return 0;
  const encoder = new TextEncoder();
  let bytes = 0;
  for (const email of rendered) bytes += encoder.encode(email.html).length + 2;
  if (draft.headers && Object.keys(draft.headers).length > 0) bytes += jsonByteLength(draft.headers);
  return bytes;
}

/** The emails' HTML in bytes: what their bodies will add in R2 once sent (QUOTA_R2_STORED_BYTES). */
function htmlBytesOf(rendered: { html: string }[]): number {
  const encoder = new TextEncoder();
  return rendered.reduce((sum, email) => sum + encoder.encode(email.html).length, 0);
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

type Rendered = Awaited<ReturnType<typeof renderAll>>[number];

/**
 * Emails rendered and sized for one write batch (renderEmails), nothing
 * written yet. `add` puts their writes in the caller's batch: the quota guard
 * first (unless `addGuard` placed it earlier, before caller writes it counts),
 * the inserts, attachments and custom headers, and the stored-bytes guard
 * after them when the caller did not bound its bytes up front. After the
 * batch ran, `enqueue` queues what it inserted.
 */
export class NewEmails {
  /** Every rendered email, in the order of the recipients. */
  readonly emails: { id: string; to: string }[];
  private guarded = false;
  private inserts?: Part;

  constructor(
    private readonly env: Env,
    readonly draft: EmailDraft,
    private readonly rendered: Rendered[],
    private readonly options: CreateOptions,
    readonly now: Date,
    private readonly sendId: string,
    /** The attachments renderEmails put in R2, for the rows naming them. */
    private readonly attachments: readonly NewAttachment[] = [],
  ) {
    this.emails = rendered.map((e) => ({ id: e.id, to: e.recipient.to }));
  }

  private get bytesUpFront(): boolean {
    return this.options.quotas !== false && this.options.use?.storedBytesAtMost !== undefined;
  }

  /** The quota guard (emails today and the caller's `use`), here: before the caller's writes it counts (contacts a send upserts). */
  addGuard(batch: WriteBatch): void {
    if (this.guarded) throw new Error("NewEmails: the quota guard is in the batch already");
    this.guarded = true;
    if (this.options.quotas === false) return;
    const use: QuotaUse = { ...this.options.use, emailsToday: this.rendered.length, r2Bytes: htmlBytesOf(this.rendered) };
    if (this.bytesUpFront) use.storedBytesAtMost! += storedBytesOf(this.draft, this.rendered);
    batch.add(quotaGuard(batch.d1, this.env, this.draft.projectId, use, this.now));
  }

  /** Adds the emails' writes (see the class); the part's rows are the ids inserted. */
  add(batch: WriteBatch): Part {
    if (!this.guarded) this.addGuard(batch);
    const { draft, rendered, now } = this;
    const d1 = batch.d1;
    const sendId = this.sendId;
    // Without the quota guard (a campaign page) the R2 quota is still checked: every email's body goes there.
    if (this.options.quotas === false && rendered.length > 0) batch.add(r2StoredBytesGuard(d1, this.env, draft.projectId, htmlBytesOf(rendered)));
    this.inserts = batch.add(
      ...insertQueued(
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
          track: draft.track,
          trackReplies: draft.trackReplies,
          hasAttachments: (draft.attachments?.length ?? 0) > 0,
          whileExecution: draft.whileExecution,
          onlyIfContact: draft.onlyIfContact,
          topicId: draft.topicId,
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
      ),
    );
    if (rendered.length === 0) return this.inserts;
    if (this.attachments.length > 0) {
      batch.add(...buildAttachmentInserts(d1, draft.projectId, sendId, this.attachments, now));
      // The attachments' objects are on the project's R2 ledger now: past QUOTA_R2_STORED_BYTES the send is refused.
      if (this.options.quotas !== false) batch.add(r2StoredBytesGuard(d1, this.env, draft.projectId, 0));
    }
    // Custom headers (only /v1/send has them): once per send, not per recipient.
    if (draft.headers && Object.keys(draft.headers).length > 0) batch.add(insertSendHeaders(d1, draft.projectId, sendId, draft.headers, now));
    if (!this.bytesUpFront) batch.add(storedBytesGuard(d1, this.env, draft.projectId));
    return this.inserts;
  }

  /** The ids the batch inserted (fewer than `emails` when a campaign or workflow email existed already). */
  inserted(result: BatchResult): string[] {
    if (!this.inserts) throw new Error("NewEmails: not added to a batch");
    return result.rows(this.inserts).map((row) => String(row.id));
  }

  /** Queues what the batch inserted: transactional mail onto the send queue, bulk mail onto the bulk queue (src/queues.ts). */
  enqueue(result: BatchResult): Promise<void> {
    const { draft } = this;
    return enqueueMail(
      this.env,
      this.inserted(result).map((emailId) => ({
        emailId,
        projectId: draft.projectId,
        bulk: Boolean(draft.bulk),
        campaignId: draft.bulk ? draft.campaignId : null,
      })),
    );
  }
}

/**
 * Renders every recipient's subject and body (on one budget when given) and
 * checks sizes: a render or size problem is a 422 before anything is written.
 * Then awaits `beforeWrite` and puts the attachments in R2 (before the batch that
 * names them). The emails go into a write batch with NewEmails.add.
 */
export async function renderEmails(env: Env, draft: EmailDraft, recipients: readonly Recipient[], options: CreateOptions = {}): Promise<NewEmails> {
  const rendered = await renderAll(env, draft, recipients, options);
  assertMessageSize(draft, rendered);
  await options.beforeWrite?.();
  const sendId = draft.sendId ?? newId();
  const attachments = rendered.length > 0 && draft.attachments?.length ? await storeAttachments(env.STORAGE, draft.projectId, sendId, draft.attachments) : [];
  return new NewEmails(env, draft, rendered, options, options.now ?? new Date(), sendId, attachments);
}

export interface CreatedEmails {
  /** Every rendered email, in the order of the recipients. */
  emails: { id: string; to: string }[];
  /** The ids the insert wrote (fewer when a campaign or workflow email existed already). */
  inserted: string[];
  /** The batch's result: the caller's parts are read from it. */
  result: BatchResult;
}

/**
 * Creates QUEUED emails for `recipients` from `draft` in one atomic D1 batch,
 * then enqueues them. `batch`: the caller's, its statements so far going
 * before the emails (and their quota guard). A quota the batch would pass
 * aborts it with the quota's ApiError; a render or size problem is a 422
 * before anything is written. If enqueueing fails, the records stay QUEUED and
 * the stuck-mail sweep enqueues them later.
 */
export async function createEmails(
  d1: D1Database,
  env: Env,
  draft: EmailDraft,
  recipients: readonly Recipient[],
  options: CreateOptions & { batch?: WriteBatch; afterCommit?: AfterCommit } = {},
): Promise<CreatedEmails> {
  const emails = await renderEmails(env, draft, recipients, options);
  const batch = options.batch ?? new WriteBatch(d1);
  emails.add(batch);
  const result = await batch.run({ env, now: emails.now, afterCommit: options.afterCommit });
  await emails.enqueue(result);
  return { emails: emails.emails, inserted: emails.inserted(result), result };
}
