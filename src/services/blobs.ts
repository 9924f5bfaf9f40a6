import { asc, eq } from "drizzle-orm";
import type { Database } from "../db/client";
import { blobChunks } from "../db/schema";

/** The content of an attachment written before migration 0030: its blob_chunks joined in order (see store/blobs.ts). */
export async function readLegacyBlob(db: Database, blobId: string): Promise<string> {
  const rows = await db.select({ data: blobChunks.data }).from(blobChunks).where(eq(blobChunks.blobId, blobId)).orderBy(asc(blobChunks.seq));
  return rows.map((r) => r.data).join("");
}
