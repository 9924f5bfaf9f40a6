import type { Env } from "../../env";
import type { ImportChunkMessage } from "../../messages";
import { enqueueImportChunks } from "../../queues";

/** How an import's file is cut into chunks: one byte range of the R2 object, one D1 batch and one queue message each. */

/**
 * Rows per chunk, bytes of the file per chunk (what its consumer reads and parses), and characters
 * of its rows as JSON strings within JSON (what its D1 statements carry at most: the existing
 * contacts' read binds each row's data that way), under D1's 2 MB per value.
 */
export const CHUNK_ROWS = 500;
export const CHUNK_BYTES = 900_000;
export const CHUNK_CHARS = 900_000;

export type ChunkRange = Pick<ImportChunkMessage, "fromRow" | "toRow">;

/** One message per chunk on the import queue. */
export function queueChunks(env: Env, importId: string, projectId: string, chunks: readonly ChunkRange[]) {
  return enqueueImportChunks(
    env,
    chunks.map((c) => ({ importId, projectId, fromRow: c.fromRow, toRow: c.toRow })),
  );
}
