import { inArray } from "drizzle-orm";
import { getDb } from "../db/client";
import { emailAttachments } from "../db/schema";
import { chunks, IN_LIST_IDS } from "../lib/chunks";
import { newId } from "../lib/ids";
import { deleteBlobs } from "./blobs";
import { ATTACHMENTS_PREFIX } from "./objects/attachments";
import { addObjectBytes } from "./objects/usage";

/**
 * A send's attachments (email_attachments), stored once for all its recipients. The content is
 * an R2 object (store/objects/attachments.ts, put before this batch); its bytes count in the
 * project's r2_usage (migration 0030), not in projects.stored_bytes. Rows written before 0030
 * have no object_key: their content is still in blob_chunks until retention deletes them.
 */

export interface NewAttachment {
  filename: string;
  contentType: string;
  /** Decoded bytes. */
  size: number;
  /** The R2 object holding its content (base64). */
  objectKey: string;
  /** The object's bytes. */
  objectBytes: number;
}

/** Statements for the send's batch: each attachment's row, in order, and the objects' bytes on the project's R2 ledger. */
export function insertAttachments(d1: D1Database, projectId: string, sendId: string, attachments: readonly NewAttachment[], now: Date) {
  const db = getDb(d1);
  return [
    ...attachments.map((attachment, position) =>
      db.insert(emailAttachments).values({
        id: newId(),
        sendId,
        position,
        filename: attachment.filename,
        contentType: attachment.contentType,
        size: attachment.size,
        blobId: "",
        objectKey: attachment.objectKey,
      }),
    ),
    addObjectBytes(d1, [{ projectId, prefix: ATTACHMENTS_PREFIX, bytes: attachments.reduce((n, a) => n + a.objectBytes, 0) }], now),
  ];
}

/**
 * Statements for one batch: these sends' attachment rows, and the blob chunks of rows written
 * before migration 0030 (`blobIds`, read by the caller). Their R2 objects expire by the prefix's lifecycle.
 */
export function deleteAttachments(d1: D1Database, sendIds: readonly string[], blobIds: readonly string[]) {
  const db = getDb(d1);
  return [
    ...deleteBlobs(
      d1,
      blobIds.filter((id) => id !== ""),
    ),
    ...chunks(sendIds, IN_LIST_IDS).map((ids) => db.delete(emailAttachments).where(inArray(emailAttachments.sendId, ids))),
  ];
}

/** The module's fixed SQL, by name (none: drizzle builds its statements). */
export const FIXED_SQL = {};
