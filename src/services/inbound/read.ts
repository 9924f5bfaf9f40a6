import type { InboundMessage } from "../../db/inbound-schema";
import type { Database } from "../../db/client";
import { ApiError } from "../../lib/errors";
import { decodeCursor, type Page, toPage } from "../../lib/pagination";
import type { InboundListQuery, InboundMessageDetailView, InboundMessageView } from "../../schemas/inbound";
import { inboundOf, listInbound } from "../../store/inbound";
import { getInboundRaw } from "../../store/objects/inbound";
import { getEmail } from "../emails/views";
import { attachmentOf, htmlOf, PARSE_CAP_BYTES } from "./parse";

/** GET /inbound and the rest: received messages of the project, another project's ids are 404. */

export function toInboundView(row: InboundMessage): InboundMessageView {
  return {
    id: row.id,
    emailId: row.emailId,
    contactId: row.contactId,
    from: row.fromAddress,
    fromName: row.fromName,
    to: row.envelopeTo,
    subject: row.subject,
    match: row.match,
    autoReply: row.autoReply,
    size: row.size,
    strippedText: row.strippedText,
    status: row.status,
    error: row.error,
    createdAt: row.createdAt.toISOString(),
  };
}

export function toInboundDetail(row: InboundMessage): InboundMessageDetailView {
  return {
    ...toInboundView(row),
    text: row.text,
    messageId: row.messageId,
    inReplyTo: row.inReplyTo,
    references: row.referencesJson,
    attachments: row.attachmentsJson,
  };
}

/** Newest first, cursor on the id (UUIDv7), filters on their indexes. */
export async function listInboundMessages(db: Database, projectId: string, query: InboundListQuery): Promise<Page<InboundMessageView> & { total: number }> {
  const list = listInbound(db.$client, projectId, query, { limit: query.limit, after: decodeCursor(query.cursor) });
  const [rows, [{ total }]] = await db.batch([list.rows, list.total]);
  const page = toPage(rows, query.limit);
  return { ...page, items: page.items.map(toInboundView), total };
}

/** GET /emails/{id}/replies: the messages linked to one of the project's emails (404 for an unknown email). */
export async function listReplies(db: Database, projectId: string, emailId: string, page: { limit: number; cursor?: string }) {
  await getEmail(db, projectId, emailId);
  return listInboundMessages(db, projectId, { ...page, emailId });
}

export async function getInbound(db: Database, projectId: string, id: string): Promise<InboundMessage> {
  const [row] = await inboundOf(db.$client, projectId, id);
  if (!row) throw ApiError.notFound("Inbound message");
  return row;
}

const gone = () =>
  new ApiError("NOT_FOUND", "The raw message is no longer stored", {
    suggestion: "Received messages are kept 30 days; the row outlives its object by at most a day.",
  });

/** The raw message as received (message/rfc822). */
export async function inboundRaw(db: Database, bucket: R2Bucket, projectId: string, id: string): Promise<{ row: InboundMessage; body: ReadableStream }> {
  const row = await getInbound(db, projectId, id);
  const object = await getInboundRaw(bucket, row.r2Key);
  if (!object) throw gone();
  return { row, body: object.body };
}

/** Attachment `n` of a message parsed whole, parsed again from the raw message (never stored apart). */
export async function inboundAttachment(db: Database, bucket: R2Bucket, projectId: string, id: string, n: number) {
  const row = await getInbound(db, projectId, id);
  if (row.size > PARSE_CAP_BYTES) {
    throw ApiError.invalidState(
      `This message is larger than the ${PARSE_CAP_BYTES / 1024 / 1024} MiB parse cap: its attachments are not parsed`,
      "Download the raw message (GET /inbound/{id}/raw) and open it in a mail program.",
    );
  }
  if (n >= row.attachmentsJson.length) throw ApiError.notFound("Attachment");
  const object = await getInboundRaw(bucket, row.r2Key);
  if (!object) throw gone();
  const attachment = await attachmentOf(await object.arrayBuffer(), n);
  if (!attachment) throw ApiError.notFound("Attachment");
  return attachment;
}

/** The message's HTML part, parsed again from the raw message (never stored); 404 when it has none. */
export async function inboundHtml(db: Database, bucket: R2Bucket, projectId: string, id: string): Promise<string> {
  const row = await getInbound(db, projectId, id);
  if (row.size > PARSE_CAP_BYTES) {
    throw ApiError.invalidState(
      `This message is larger than the ${PARSE_CAP_BYTES / 1024 / 1024} MiB parse cap: its HTML is not parsed`,
      "Download the raw message (GET /inbound/{id}/raw) and open it in a mail program.",
    );
  }
  const object = await getInboundRaw(bucket, row.r2Key);
  if (!object) throw gone();
  const html = await htmlOf(await object.arrayBuffer());
  if (html === null) throw ApiError.notFound("HTML part");
  return html;
}
