import { asc, eq } from "drizzle-orm";
import type { Database } from "../db/client";
import { blobChunks } from "../db/schema";
import { newId } from "../lib/ids";

/** D1 rows are limited to 2 MB; large text (base64 attachments, raw mail) is stored in 1 MB chunks. */
export const BLOB_CHUNK_CHARS = 1_000_000;

/** Insert queries for a blob (to run inside the caller's batch) and its id. */
export function buildBlobInsert(db: Database, text: string) {
  const blobId = newId();
  const queries = [];
  for (let seq = 0, offset = 0; offset < text.length || seq === 0; seq++, offset += BLOB_CHUNK_CHARS) {
    queries.push(db.insert(blobChunks).values({ blobId, seq, data: text.slice(offset, offset + BLOB_CHUNK_CHARS) }));
  }
  return { blobId, queries };
}

export async function readBlob(db: Database, blobId: string): Promise<string> {
  const rows = await db.select({ data: blobChunks.data }).from(blobChunks).where(eq(blobChunks.blobId, blobId)).orderBy(asc(blobChunks.seq));
  return rows.map((r) => r.data).join("");
}
