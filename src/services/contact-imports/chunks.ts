import type { Env } from "../../env";
import type { ImportChunkMessage } from "../../messages";
import { enqueueImportChunks } from "../../queues";

/** How an import's staged rows are cut into chunks: one D1 batch and one queue message each. */

/** Rows per chunk, and bytes of staged rows per chunk. */
export const CHUNK_ROWS = 500;
export const CHUNK_CHARS = 900_000;

export type ChunkRange = Pick<ImportChunkMessage, "fromRow" | "toRow">;

/** Cuts consecutive staged rows (row order) into chunks of at most CHUNK_ROWS rows and CHUNK_CHARS bytes. */
export function cutChunks(rows: readonly { row: number; size: number }[]): ChunkRange[] {
  const chunks: ChunkRange[] = [];
  let from = 0;
  let count = 0;
  let size = 0;
  for (const [i, r] of rows.entries()) {
    if (count > 0 && (count >= CHUNK_ROWS || size + r.size > CHUNK_CHARS)) {
      chunks.push({ fromRow: from, toRow: rows[i - 1].row });
      count = 0;
      size = 0;
    }
    if (count === 0) from = r.row;
    count++;
    size += r.size;
  }
  if (count > 0) chunks.push({ fromRow: from, toRow: rows[rows.length - 1].row });
  return chunks;
}

/** One message per chunk on the import queue. */
export function queueChunks(env: Env, importId: string, projectId: string, chunks: readonly ChunkRange[]) {
  return enqueueImportChunks(
    env,
    chunks.map((c) => ({ importId, projectId, fromRow: c.fromRow, toRow: c.toRow })),
  );
}
