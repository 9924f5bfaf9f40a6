import { asc, eq } from "drizzle-orm";
import type { Database } from "../../db/client";
import { emailAttachments } from "../../db/schema";
import { readBlob } from "../blobs";
import { insertAttachments } from "../../store/attachments";
import { base64DecodedSize } from "../../schemas/attachments";

export interface AttachmentInput {
  filename: string;
  content: string;
  contentType: string;
}

export interface StoredAttachment {
  filename: string;
  contentType: string;
  /** Base64, no whitespace. */
  content: string;
}

/** Statements that store a send's attachments once, shared by all its recipients (for the send's batch). */
export function buildAttachmentInserts(d1: D1Database, sendId: string, attachments: AttachmentInput[]) {
  return insertAttachments(
    d1,
    sendId,
    attachments.map((attachment) => {
      const content = attachment.content.replace(/\s+/g, "");
      return { filename: attachment.filename, contentType: attachment.contentType.toLowerCase(), content, size: base64DecodedSize(content) ?? 0 };
    }),
  );
}

export async function loadAttachments(db: Database, sendId: string): Promise<StoredAttachment[]> {
  const rows = await db.select().from(emailAttachments).where(eq(emailAttachments.sendId, sendId)).orderBy(asc(emailAttachments.position));
  return Promise.all(rows.map(async (row) => ({ filename: row.filename, contentType: row.contentType, content: await readBlob(db, row.blobId) })));
}
