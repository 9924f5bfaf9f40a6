import { inArray } from "drizzle-orm";
import { getDb } from "../db/client";
import { blobChunks } from "../db/schema";
import { chunks, IN_LIST_IDS } from "../lib/chunks";

/**
 * blob_chunks: the content of attachments written before migration 0030 (since then every
 * attachment is an R2 object, store/objects/attachments.ts). Nothing writes it any more;
 * retention deletes these chunks with their attachment rows, and a later migration can drop
 * the table once it is empty everywhere.
 */

/** Statements that delete these blobs' chunks, one per IN_LIST_IDS ids. */
export function deleteBlobs(d1: D1Database, blobIds: readonly string[]) {
  const db = getDb(d1);
  return chunks(blobIds, IN_LIST_IDS).map((ids) => db.delete(blobChunks).where(inArray(blobChunks.blobId, ids)));
}

/** The module's fixed SQL, by name (none: drizzle builds its statements). */
export const FIXED_SQL = {};
