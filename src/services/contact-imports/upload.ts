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
import { completeIfDone, dropImport, type ImportRange, insertImport, insertRanges, startImport, uploadProgress } from "../../store/contact-imports";
import { guardError, r2StoredBytesGuard, storedBytesGuard } from "../../store/guards";
import { ImportFileWriter, IMPORTS_PREFIX, importKey } from "../../store/objects/imports";
import { addObjectBytes } from "../../store/objects/usage";
import { CHUNK_BYTES, CHUNK_CHARS, CHUNK_ROWS, queueChunks } from "./chunks";
import { ColumnTypes, CSV_OPTIONS, MAX_RECORD_CHARS, planColumns } from "./columns";
import type { ColumnMapping } from "../../schemas/contact-imports";
import { getImport, MAX_KEPT_ERRORS } from "./jobs";
import { LastRows } from "./last-rows";
import { UPLOAD_DIED } from "./recovery";

/** POST /contacts/imports: the CSV read as it arrives and written to R2, its chunks' byte ranges recorded in D1 and queued (process.ts applies them). */

/** Largest CSV accepted by POST /contacts/imports (bytes). */
export const MAX_IMPORT_BYTES = 50 * 1024 * 1024;
export { MAX_RECORD_CHARS };
/** While rows arrive, the upload tells D1 it is alive this often (the cron drops an upload silent for UPLOAD_TIMEOUT_MS). */
const PROGRESS_EVERY_MS = 30_000;
/** Bytes of the file's start kept to read the header's line ending (a header is at most MAX_RECORD_CHARS characters). */
const HEAD_BYTES = 4 * MAX_RECORD_CHARS + 8;

/** 413 for a CSV over the limit. */
export const importTooLarge = (maxBytes: number) =>
  new ApiError("PAYLOAD_TOO_LARGE", "The CSV is too large", { suggestion: `A CSV may be at most ${maxBytes} bytes; split the file.` });

/**
 * The body's bytes as Node Buffers (what csv-parse reads), piece by piece, erroring past
 * `maxBytes`; each piece is handed to `file` first (which awaits its part uploads) and the
 * first HEAD_BYTES are kept in `head`.
 */
const toBuffers = (maxBytes: number, file: ImportFileWriter, head: Uint8Array[]) => {
  let size = 0;
  return new TransformStream<Uint8Array, Buffer>({
    async transform(chunk, controller) {
      size += chunk.byteLength;
      if (size > maxBytes) {
        controller.error(importTooLarge(maxBytes));
        return;
      }
      if (size - chunk.byteLength < HEAD_BYTES) head.push(chunk.slice(0, HEAD_BYTES));
      await file.write(chunk);
      controller.enqueue(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
    },
  });
};

/** The record delimiter the header ended with (the one csv-parse detected and read every row with), from the file's first bytes. */
function delimiterBefore(head: Uint8Array[], end: number): string | null {
  const bytes = new Uint8Array(Math.min(end, HEAD_BYTES));
  let at = 0;
  for (const piece of head) {
    if (at >= bytes.length) break;
    const part = piece.subarray(0, bytes.length - at);
    bytes.set(part, at);
    at += part.length;
  }
  if (at < end) return null;
  if (bytes[end - 2] === 13 && bytes[end - 1] === 10) return "\r\n";
  if (bytes[end - 1] === 10) return "\n";
  if (bytes[end - 1] === 13) return "\r";
  return null;
}

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

/** The first MAX_KEPT_ERRORS rows (by row number) a later row of the same address replaced, as the job's row errors. */
class FirstDuplicates {
  private readonly pairs: [replaced: number, by: number][] = [];
  add(replaced: number, by: number) {
    if (this.pairs.length < MAX_KEPT_ERRORS) {
      this.pairs.push([replaced, by]);
      return;
    }
    let last = 0;
    for (let i = 1; i < this.pairs.length; i++) if (this.pairs[i][0] > this.pairs[last][0]) last = i;
    if (replaced < this.pairs[last][0]) this.pairs[last] = [replaced, by];
  }
  errors(): { row: number; message: string }[] {
    return this.pairs
      .sort((a, b) => a[0] - b[0])
      .map(([row, by]) => ({ row, message: `Duplicate: the same email appears again in row ${by}, which was imported instead` }));
  }
}

/** Puts each row a later row of the same address replaces (ascending) into its range's `skip`. */
function assignSkipped(ranges: ImportRange[], superseded: number[]) {
  superseded.sort((a, b) => a - b);
  let r = 0;
  for (const row of superseded) {
    while (ranges[r].lastRow < row) r++;
    ranges[r].skip.push(row);
  }
}

/**
 * POST /contacts/imports: reads the CSV as it arrives (never the whole file at once) and writes
 * it to R2 as it goes (imports/<projectId>/<importId>.csv), cutting its data rows into ranges of
 * at most CHUNK_ROWS rows and CHUNK_BYTES bytes (byte offsets in the file). A later row with the
 * same address replaces the earlier one: the earlier row goes into its range's `skip` and counts
 * nowhere. Then one D1 batch starts the import (total, the ranges, the file's bytes on the
 * project's R2 ledger, the quota guards) and one message per range is queued. The job row is only
 * inserted while the project has fewer than MAX_ACTIVE_IMPORTS_PER_PROJECT open imports (409
 * otherwise). A file refused part way (malformed CSV, a row too long, past `maxBytes`: counted
 * here, since the app's body limit would buffer a body without a Content-Length; past a quota)
 * leaves no job and no object. An empty file's `contacts.imported` event leaves through `afterCommit`.
 */
export async function createImport(
  db: Database,
  env: Env,
  afterCommit: AfterCommit,
  projectId: string,
  body: ReadableStream<Uint8Array>,
  options: { defaultSubscribed?: boolean; columns?: ColumnMapping } = {},
  maxBytes = MAX_IMPORT_BYTES,
) {
  const { defaultSubscribed } = options;
  const d1 = db.$client;
  const id = newId();
  const file = new ImportFileWriter(env.STORAGE, importKey(projectId, id));
  const head: Uint8Array[] = [];
  const records = body
    .pipeThrough(toBuffers(maxBytes, file, head))
    .pipeThrough(csvParser({ ...CSV_OPTIONS, bom: true, info: true }))
    .getReader() as ReadableStreamDefaultReader<{ record: string[]; info: { bytes: number } }>;
  let inserted = false;
  try {
    const first = await records.read();
    if (first.done) throw ApiError.validation([{ field: "body", message: "The CSV is empty: it needs a header row naming an email column", code: "required" }]);
    const header = first.value.record;
    const plan = planColumns(header, options.columns);
    const types = new ColumnTypes(plan);
    const maxOpen = readConfig(env).MAX_ACTIVE_IMPORTS_PER_PROJECT;
    const insert = await insertImport(d1, { id, projectId, columns: header, defaultSubscribed, now: Date.now(), maxOpen }).all();
    if (insert.results.length === 0) throw tooManyImports(maxOpen);
    inserted = true;
    const headerEnd = first.value.info.bytes;
    // The upload is alive while rows arrive: nothing once the cron dropped it.
    let aliveAt = Date.now();
    const alive = async () => {
      aliveAt = Date.now();
      if ((await uploadProgress(d1, id, aliveAt).all()).results.length === 0) throw uploadDropped();
    };
    const lastRows = new LastRows();
    const superseded: number[] = [];
    const duplicates = new FirstDuplicates();
    const ranges: ImportRange[] = [];
    let row = 0;
    let firstRow = 1;
    let start = headerEnd;
    let end = headerEnd;
    let chars = 0;
    for (;;) {
      const next = await records.read();
      if (next.done) break;
      row++;
      const { record: cells, info } = next.value;
      const rowChars = JSON.stringify(JSON.stringify(cells)).length + 1;
      // A range ends where a record ends, so it holds CHUNK_BYTES of rows at most, plus any blank lines before its first row.
      if (row > firstRow && (row - firstRow >= CHUNK_ROWS || info.bytes - start > CHUNK_BYTES || chars + rowChars > CHUNK_CHARS)) {
        ranges.push({ firstRow: firstRow, lastRow: row - 1, startByte: start, endByte: end, skip: [] });
        firstRow = row;
        start = end;
        chars = 0;
      }
      end = info.bytes;
      chars += rowChars;
      const parsed = EmailAddressSchema.safeParse(cells[plan.email] ?? "");
      if (parsed.success) {
        const replaced = lastRows.set(parsed.data, row);
        if (replaced > 0) {
          superseded.push(replaced);
          duplicates.add(replaced, row);
        }
      }
      types.see(cells);
      if (Date.now() - aliveAt >= PROGRESS_EVERY_MS) await alive();
    }
    if (row > 0) ranges.push({ firstRow: firstRow, lastRow: row, startByte: start, endByte: end, skip: [] });
    assignSkipped(ranges, superseded);
    await alive();
    // The object before the batch that names it; a file without rows is not kept.
    if (row > 0) await file.finish();
    const now = Date.now();
    const batch = new WriteBatch(d1);
    const started_ = batch.add(
      startImport(
        d1,
        id,
        {
          total: row - superseded.length,
          objectKey: row > 0 ? file.key : null,
          recordDelimiter: delimiterBefore(head, headerEnd),
          planJson: JSON.stringify(types.types()),
          duplicates: superseded.length,
          duplicateErrorsJson: JSON.stringify(duplicates.errors()),
        },
        now,
      ),
    );
    batch.add(...insertRanges(d1, id, ranges));
    if (row > 0) {
      batch.add(addObjectBytes(d1, [{ projectId, prefix: IMPORTS_PREFIX, bytes: file.size }], now));
      batch.add(r2StoredBytesGuard(d1, env, projectId, 0));
    }
    batch.add(storedBytesGuard(d1, env, projectId));
    // PROCESSING, or COMPLETED at once (with its contacts.imported event) when the file had no rows.
    batch.add(...completeIfDone(d1, id, newId(), now));
    const [started] = (await batch.run({ afterCommit })).rows(started_);
    if (!started) throw uploadDropped();
    const job = mapRow(contactImports, started);
    if (ranges.length > 0) {
      // PROCESSING: chunks that could not be queued now are queued by the cron (runImportJobs) within minutes.
      await queueChunks(
        env,
        id,
        projectId,
        ranges.map((r) => ({ fromRow: r.firstRow, toRow: r.lastRow })),
      ).catch((err) => console.error("queueing an import's chunks failed; the cron will", err));
    }
    return (await getImport(db, projectId, id)) ?? job;
  } catch (err) {
    records.cancel().catch(() => {});
    await file.abort();
    if (inserted) await d1.batch(dropImport(d1, id)).catch((e) => console.error("dropping a refused import failed", e));
    if (err instanceof CsvError) throw csvError(err);
    throw guardError(err, env) ?? err;
  }
}
