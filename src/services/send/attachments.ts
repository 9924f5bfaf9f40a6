import { asc, eq } from "drizzle-orm";
import type { Database } from "../../db/client";
import { emailAttachments } from "../../db/schema";
import { readLegacyBlob } from "../blobs";
import { insertAttachments, type NewAttachment } from "../../store/attachments";
import { putAttachments, readAttachment } from "../../store/objects/attachments";
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

/**
 * Puts a send's attachments in R2 (one object each, shared by all its recipients), before the
 * send's batch writes the rows naming them; returns those rows.
 */
export async function storeAttachments(bucket: R2Bucket, projectId: string, sendId: string, attachments: readonly AttachmentInput[]): Promise<NewAttachment[]> {
  const contents = attachments.map((attachment) => attachment.content.replace(/\s+/g, ""));
  const objects = await putAttachments(bucket, projectId, sendId, contents);
  return attachments.map((attachment, i) => ({
    filename: attachment.filename,
    contentType: attachment.contentType.toLowerCase(),
    size: base64DecodedSize(contents[i]) ?? 0,
    objectKey: objects[i].key,
    objectBytes: objects[i].bytes,
  }));
}

/** Statements for the send's batch: the rows of attachments storeAttachments put, and their bytes on the R2 ledger. */
export function buildAttachmentInserts(d1: D1Database, projectId: string, sendId: string, stored: readonly NewAttachment[], now: Date) {
  return insertAttachments(d1, projectId, sendId, stored, now);
}

/** A send's attachments in order, each read from its R2 object (or, written before migration 0030, from blob_chunks). */
export async function loadAttachments(db: Database, bucket: R2Bucket, sendId: string): Promise<StoredAttachment[]> {
  const rows = await db.select().from(emailAttachments).where(eq(emailAttachments.sendId, sendId)).orderBy(asc(emailAttachments.position));
  return Promise.all(
    rows.map(async (row) => ({
      filename: row.filename,
      contentType: row.contentType,
      content: row.objectKey ? await readAttachment(bucket, row.objectKey) : await readLegacyBlob(db, row.blobId),
    })),
  );
}
