import { Buffer } from "node:buffer";
import { parse as csvParser, CsvError } from "csv-parse/stream";
import { fromRow as mapRow, type Database } from "../../db/client";
import { contactImports } from "../../db/schema";
import type { Env } from "../../env";
import type { AfterCommit } from "../../lib/after-commit";
import { readConfig } from "../../lib/config";
import { ApiError } from "../../lib/errors";
import { newId } from "../../lib/ids";
import { EmailAddressSchema } from "../../lib/validators";
import { WriteBatch } from "../../store/batch";
import { completeIfDone, dropImport, insertImport, stageRows, startImport, uploadProgress } from "../../store/contact-imports";
import { guardError, storedBytesGuard } from "../../store/guards";
import { CHUNK_CHARS, CHUNK_ROWS, type ChunkRange, queueChunks } from "./chunks";
import { planColumns } from "./columns";
import { getImport } from "./jobs";
import { UPLOAD_DIED } from "./recovery";

/** POST /contacts/imports: the CSV read as it arrives and staged in D1, then its chunks queued (process.ts applies them). */

/** Largest CSV accepted by POST /contacts/imports (bytes). */
export const MAX_IMPORT_BYTES = 50 * 1024 * 1024;
/** Largest CSV record (characters): a contact's data is at most 64 KB, so a longer row cannot be stored. */
export const MAX_RECORD_CHARS = 128 * 1024;
/** Staging statements per D1 batch during the upload: fewer round trips (subrequests), at most ~7 MB held. */
const STAGE_PER_BATCH = 8;

/** 413 for a CSV over the limit. */
export const importTooLarge = (maxBytes: number) =>
  new ApiError("PAYLOAD_TOO_LARGE", "The CSV is too large", { suggestion: `A CSV may be at most ${maxBytes} bytes; split the file.` });

/** The body's bytes as Node Buffers (what csv-parse reads), piece by piece, erroring past `maxBytes`. */
const toBuffers = (maxBytes: number) => {
  let size = 0;
  return new TransformStream<Uint8Array, Buffer>({
    transform(chunk, controller) {
      size += chunk.byteLength;
      if (size > maxBytes) controller.error(importTooLarge(maxBytes));
      else controller.enqueue(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
    },
  });
};

function csvError(err: CsvError): ApiError {
  const line = (err as CsvError & { lines?: number }).lines;
  return ApiError.validation([
    { field: "body", message: `The CSV is malformed${line ? ` at line ${line}` : ""}: ${err.message.replace(/^[A-Za-z_ ]*:\s*/, "")}`, code: "invalid_csv" },
  ]);
}

/** 409 when the project has its maximum of imports open. */
export const tooManyImports = (max: number) =>
  new ApiError("CONFLICT", `This project already has ${max} imports in progress (PENDING or PROCESSING)`, {
    suggestion: "Wait until one of them is COMPLETED or FAILED (GET /contacts/imports), then upload again. Nothing of this upload was kept.",
  });

/** The upload went on after the cron had dropped it as dead (no rows for UPLOAD_TIMEOUT_MS). */
const uploadDropped = () => ApiError.invalidState(UPLOAD_DIED, "Upload the file again, without long pauses.");

/**
 * POST /contacts/imports: reads the CSV as it arrives (never the whole file
 * at once), stages its rows in D1 in chunks of 500 (a later row with the same
 * address replacing the earlier one), then queues one message per chunk.
 * The job row is only inserted while the project has fewer than
 * MAX_ACTIVE_IMPORTS_PER_PROJECT open imports (409 otherwise). Staged rows count
 * in the project's stored bytes: each staging batch ends with the stored-bytes
 * guard. A file refused part way (malformed CSV, a row too long, past `maxBytes`:
 * counted here, since the app's body limit would buffer a body without a
 * Content-Length; past QUOTA_STORED_BYTES) leaves nothing. An empty file's
 * `contacts.imported` event leaves through `afterCommit`.
 */
export async function createImport(
  db: Database,
  env: Env,
  afterCommit: AfterCommit,
  projectId: string,
  body: ReadableStream<Uint8Array>,
  defaultSubscribed?: boolean,
  maxBytes = MAX_IMPORT_BYTES,
) {
  const d1 = db.$client;
  const records = body
    .pipeThrough(toBuffers(maxBytes))
    .pipeThrough(csvParser({ bom: true, relax_column_count: true, skip_empty_lines: true, max_record_size: MAX_RECORD_CHARS }))
    .getReader() as ReadableStreamDefaultReader<string[]>;
  let importId: string | null = null;
  const chunks: ChunkRange[] = [];
  try {
    const first = await records.read();
    if (first.done) throw ApiError.validation([{ field: "body", message: "The CSV is empty: it needs a header row naming an email column", code: "required" }]);
    const plan = planColumns(first.value);
    const id = newId();
    const maxOpen = readConfig(env).MAX_ACTIVE_IMPORTS_PER_PROJECT;
    const inserted = await insertImport(d1, { id, projectId, columns: first.value, defaultSubscribed, now: Date.now(), maxOpen }).all();
    if (inserted.results.length === 0) throw tooManyImports(maxOpen);
    importId = id;
    let row = 0;
    let parts: string[] = [];
    let chars = 0;
    let fromRow = 1;
    let pending: D1PreparedStatement[] = [];
    // One round trip: the staging statements, the upload's progress (nothing once the cron dropped it), the stored-bytes guard.
    const write = async () => {
      if (pending.length === 0) return;
      const batch = new WriteBatch(d1);
      batch.add(...pending);
      const progress = batch.add(uploadProgress(d1, id, Date.now()));
      batch.add(storedBytesGuard(d1, env, projectId));
      pending = [];
      const result = await batch.run();
      if (result.rows(progress).length === 0) throw uploadDropped();
    };
    // A chunk's rows become one staging statement; STAGE_PER_BATCH of them go to D1 in one round trip.
    const flush = async () => {
      if (parts.length > 0) {
        pending.push(stageRows(d1, id, `[${parts.join(",")}]`));
        chunks.push({ fromRow, toRow: row });
        parts = [];
        chars = 0;
        fromRow = row + 1;
      }
      if (pending.length >= STAGE_PER_BATCH) await write();
    };
    for (;;) {
      const next = await records.read();
      if (next.done) break;
      row++;
      const cells = next.value;
      const parsed = EmailAddressSchema.safeParse(cells[plan.email] ?? "");
      const part = JSON.stringify([parsed.success ? parsed.data : `#${row}`, row, JSON.stringify(cells)]);
      parts.push(part);
      chars += part.length + 1;
      if (parts.length >= CHUNK_ROWS || chars >= CHUNK_CHARS) await flush();
    }
    await flush();
    await write();
    // PROCESSING, or COMPLETED at once (with its contacts.imported event) when the file had no rows.
    const batch = new WriteBatch(d1);
    const start = batch.add(startImport(d1, id, Date.now()));
    batch.add(...completeIfDone(d1, id, newId(), Date.now()));
    const [started] = (await batch.run({ afterCommit })).rows(start);
    if (!started) throw uploadDropped();
    const job = mapRow(contactImports, started);
    if (chunks.length > 0) {
      // Staged and PROCESSING: chunks that could not be queued now are queued by the cron (runImportJobs) within minutes.
      await queueChunks(env, id, projectId, chunks).catch((err) => console.error("queueing an import's chunks failed; the cron will", err));
    }
    return (await getImport(db, projectId, id)) ?? job;
  } catch (err) {
    records.cancel().catch(() => {});
    if (importId) await d1.batch(dropImport(d1, importId)).catch((e) => console.error("dropping a refused import failed", e));
    if (err instanceof CsvError) throw csvError(err);
    throw guardError(err, env) ?? err;
  }
}
