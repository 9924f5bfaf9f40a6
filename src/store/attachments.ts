import { inArray } from "drizzle-orm";
import { getDb } from "../db/client";
import { emailAttachments } from "../db/schema";
import { chunks, IN_LIST_IDS } from "../lib/chunks";
import { newId } from "../lib/ids";
import { deleteBlobs, insertBlob } from "./blobs";

/**
 * A send's attachments (email_attachments, their content in blob_chunks),
 * stored once for all its recipients. The triggers of migration 0019 add and
 * take off their bytes on the project's count.
 */

export interface NewAttachment {
  filename: string;
  contentType: string;
  /** Base64, no whitespace. */
  content: string;
  /** Decoded bytes. */
  size: number;
}

/** Statements for the send's batch: each attachment's row and its blob, in order. */
export function insertAttachments(d1: D1Database, sendId: string, attachments: readonly NewAttachment[]) {
  const db = getDb(d1);
  return attachments.flatMap((attachment, position) => {
    const blob = insertBlob(d1, attachment.content);
    return [
      db.insert(emailAttachments).values({
        id: newId(),
        sendId,
        position,
        filename: attachment.filename,
        contentType: attachment.contentType,
        size: attachment.size,
        blobId: blob.blobId,
      }),
      ...blob.statements,
    ];
  });
}

/** Statements for one batch: these sends' attachments and their blobs (`blobIds`, read by the caller). */
export function deleteAttachments(d1: D1Database, sendIds: readonly string[], blobIds: readonly string[]) {
  const db = getDb(d1);
  return [...deleteBlobs(d1, blobIds), ...chunks(sendIds, IN_LIST_IDS).map((ids) => db.delete(emailAttachments).where(inArray(emailAttachments.sendId, ids)))];
}

/** The module's fixed SQL, by name (none: drizzle builds its statements). */
export const FIXED_SQL = {};
