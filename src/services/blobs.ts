import { asc, eq } from "drizzle-orm";
import type { Database } from "../db/client";
import { blobChunks } from "../db/schema";

/** A blob's text, its chunks joined in order (store/blobs.ts writes them). */
export async function readBlob(db: Database, blobId: string): Promise<string> {
  const rows = await db.select({ data: blobChunks.data }).from(blobChunks).where(eq(blobChunks.blobId, blobId)).orderBy(asc(blobChunks.seq));
  return rows.map((r) => r.data).join("");
}
