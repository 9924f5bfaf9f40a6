import { asc, eq } from "drizzle-orm";
import type { Database } from "../../db/client";
import { emailAttachments } from "../../db/schema";
import { newId } from "../../lib/ids";
import { buildBlobInsert, readBlob } from "../blobs";
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

/** Queries that store a send's attachments once, shared by all its recipients. */
export function buildAttachmentInserts(db: Database, sendId: string, attachments: AttachmentInput[]) {
  return attachments.flatMap((attachment, position) => {
    const content = attachment.content.replace(/\s+/g, "");
    const blob = buildBlobInsert(db, content);
    return [
      db.insert(emailAttachments).values({
        id: newId(),
        sendId,
        position,
        filename: attachment.filename,
        contentType: attachment.contentType.toLowerCase(),
        size: base64DecodedSize(content) ?? 0,
        blobId: blob.blobId,
      }),
      ...blob.queries,
    ];
  });
}

export async function loadAttachments(db: Database, sendId: string): Promise<StoredAttachment[]> {
  const rows = await db.select().from(emailAttachments).where(eq(emailAttachments.sendId, sendId)).orderBy(asc(emailAttachments.position));
  return Promise.all(rows.map(async (row) => ({ filename: row.filename, contentType: row.contentType, content: await readBlob(db, row.blobId) })));
}
