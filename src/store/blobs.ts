import { inArray } from "drizzle-orm";
import { getDb } from "../db/client";
import { blobChunks } from "../db/schema";
import { chunks, IN_LIST_IDS } from "../lib/chunks";
import { newId } from "../lib/ids";

/**
 * Large text (base64 attachments, captured raw mail) kept in blob_chunks: D1
 * rows are limited to 2 MB, so a blob is stored in 1 MB chunks. A blob
 * belongs to the row that names it (email_attachments, captured_messages),
 * which writes and deletes its chunks in the same batch.
 */
export const BLOB_CHUNK_CHARS = 1_000_000;

/** Statements that store `text` as a new blob (for the caller's batch), and its id. */
export function insertBlob(d1: D1Database, text: string) {
  const db = getDb(d1);
  const blobId = newId();
  const statements = [];
  for (let seq = 0, offset = 0; offset < text.length || seq === 0; seq++, offset += BLOB_CHUNK_CHARS) {
    statements.push(db.insert(blobChunks).values({ blobId, seq, data: text.slice(offset, offset + BLOB_CHUNK_CHARS) }));
  }
  return { blobId, statements };
}

/** Statements that delete these blobs' chunks, one per IN_LIST_IDS ids. */
export function deleteBlobs(d1: D1Database, blobIds: readonly string[]) {
  const db = getDb(d1);
  return chunks(blobIds, IN_LIST_IDS).map((ids) => db.delete(blobChunks).where(inArray(blobChunks.blobId, ids)));
}

/** The module's fixed SQL, by name (none: drizzle builds its statements). */
export const FIXED_SQL = {};
