import { Buffer } from "node:buffer";
import { parse as csvParser, CsvError } from "csv-parse/stream";
import { stringify } from "csv-stringify/sync";
import { and, asc, eq, gt, type SQL } from "drizzle-orm";
import { fromRow as mapRow, getDb, runStatements, type Database } from "../db/client";
import { contactImports, contacts, type ContactImport, type JsonObject } from "../db/schema";
import type { Env } from "../env";
import type { ImportChunkMessage } from "../messages";
import { readConfig } from "../lib/config";
import { ApiError } from "../lib/errors";
import { newId } from "../lib/ids";
import { listNewestFirst } from "../lib/pagination";
import { ACK, backoffSeconds, retryAfter, type QueuedMessage, type Verdict } from "../lib/queue-consumer";
import { DataObjectSchema, EmailAddressSchema } from "../lib/validators";
import { type ContactRow, upsertContacts } from "../store/contacts";
import { queueRecordedEvents } from "./webhooks/deliver";
import {
  claimChunk,
  completeIfDone,
  countChunk,
  dropImport,
  FINISH_WEBHOOK_AT,
  finishChunk,
  insertImport,
  isChunkTaken,
  readChunk,
  readExisting,
  stageRows,
  startImport,
  uploadProgress,
  type ChunkOutcome,
} from "../store/imports";
import type { ImportJobView } from "../schemas/imports";
import { guardError, MAX_CONTACT_DATA_BYTES, quotaExceeded, quotaGuard, raisedGuard, storedBytesGuard } from "../store/guards";
import { CHUNK_CHARS, CHUNK_ROWS, type ChunkRange, queueChunks, UPLOAD_DIED } from "./import-jobs";
import { getSegment, segmentMembersWhere, storedCondition } from "./segments";

/** Largest CSV accepted by POST /contacts/imports (bytes). */
export const MAX_IMPORT_BYTES = 50 * 1024 * 1024;
/** Largest CSV record (characters): a contact's data is at most 64 KB, so a longer row cannot be stored. */
export const MAX_RECORD_CHARS = 128 * 1024;
/** Staging statements per D1 batch during the upload: fewer round trips (subrequests), at most ~7 MB held. */
const STAGE_PER_BATCH = 8;
/** Columns a header may have. */
const MAX_COLUMNS = 200;
/** Row errors kept on a job (the first by row number). */
export const MAX_KEPT_ERRORS = 100;

/** Columns that are not data keys: `id`, `createdat` and `updatedat` come from an export and are ignored. */
const RESERVED = new Set(["email", "subscribed", "data", "id", "createdat", "updatedat"]);

export function toImportView(job: ContactImport): ImportJobView {
  return {
    id: job.id,
    status: job.status,
    total: job.total,
    processed: job.processed,
    created: job.created,
    updated: job.updated,
    failed: job.failed,
    errors: job.errors,
    createdAt: job.createdAt.toISOString(),
    finishedAt: job.finishedAt ? job.finishedAt.toISOString() : null,
    failureReason: job.failureReason ?? null,
  };
}

/** The header as a column plan: where the email is, and what each other column means. */
function planColumns(header: string[]) {
  if (header.length > MAX_COLUMNS) {
    throw ApiError.validation([{ field: "body", message: `The header has ${header.length} columns; at most ${MAX_COLUMNS}`, code: "too_big" }]);
  }
  const seen = new Set<string>();
  for (const name of header.map((h) => h.trim().toLowerCase())) {
    if (name === "") continue;
    if (seen.has(name)) throw ApiError.validation([{ field: "body", message: `The column "${name}" appears twice in the header`, code: "duplicate_column" }]);
    if (name.length > 128) throw ApiError.validation([{ field: "body", message: "Column names may be at most 128 characters", code: "too_big" }]);
    seen.add(name);
  }
  const lower = header.map((h) => h.trim().toLowerCase());
  const email = lower.indexOf("email");
  if (email < 0) {
    throw ApiError.validation([
      { field: "email", message: "The CSV has no email column: its first row must be a header naming one (case-insensitive)", code: "required" },
    ]);
  }
  return { email, lower, names: header.map((h) => h.trim()) };
}

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
 * Content-Length; past QUOTA_STORED_BYTES) leaves nothing.
 */
export async function createImport(
  db: Database,
  env: Env,
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
      const results = await d1.batch([...pending, uploadProgress(d1, id, Date.now()), storedBytesGuard(d1, env, projectId)]);
      pending = [];
      if ((results[results.length - 2].results ?? []).length === 0) throw uploadDropped();
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
    const [started, imported] = await runStatements(db, [startImport(d1, id, Date.now()), ...completeIfDone(d1, id, newId(), Date.now())]);
    if (started.length === 0) throw uploadDropped();
    await queueRecordedEvents(env, imported);
    const job = mapRow(contactImports, started[0]);
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

export async function getImport(db: Database, projectId: string, id: string): Promise<ContactImport | undefined> {
  return db.query.contactImports.findFirst({ where: and(eq(contactImports.id, id), eq(contactImports.projectId, projectId)) });
}

export async function requireImport(db: Database, projectId: string, id: string): Promise<ContactImport> {
  const job = await getImport(db, projectId, id);
  if (!job) throw ApiError.notFound("Import");
  return job;
}

export async function listImports(db: Database, projectId: string, page: { limit: number; cursor?: string }) {
  return listNewestFirst(db, contactImports, eq(contactImports.projectId, projectId), page);
}

const TRUE = new Set(["true", "1", "yes"]);
const FALSE = new Set(["false", "0", "no"]);

type RowResult = { row: number; contact: ContactRow & { data: JsonObject } } | { row: number; error: string };

/** One staged row read against the header: the contact it writes, or why it cannot. */
function readRow(job: ContactImport, plan: ReturnType<typeof planColumns>, emailKey: string, row: number, cells: string[]): RowResult {
  const emailCell = (cells[plan.email] ?? "").trim();
  if (emailKey.startsWith("#")) return { row, error: emailCell === "" ? "email is empty" : `Invalid email address: ${emailCell.slice(0, 100)}` };
  if (cells.length > plan.lower.length && cells.slice(plan.lower.length).some((c) => c.trim() !== "")) {
    return { row, error: `The row has ${cells.length} fields; the header has ${plan.lower.length}` };
  }
  let subscribed: boolean | null = job.defaultSubscribed ?? null;
  let data: JsonObject = {};
  const columns: [string, string][] = [];
  for (let i = 0; i < plan.lower.length; i++) {
    const cell = cells[i] ?? "";
    if (cell === "") continue;
    const name = plan.lower[i];
    if (name === "subscribed") {
      const value = cell.trim().toLowerCase();
      if (TRUE.has(value)) subscribed = true;
      else if (FALSE.has(value)) subscribed = false;
      else if (value !== "") return { row, error: "subscribed must be true/false, 1/0 or yes/no" };
    } else if (name === "data") {
      let parsed: unknown;
      try {
        parsed = JSON.parse(cell);
      } catch {
        return { row, error: "data is not valid JSON" };
      }
      if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) return { row, error: "data must be a JSON object" };
      data = parsed as JsonObject;
    } else if (name !== "" && !RESERVED.has(name)) {
      columns.push([plan.names[i], cell]);
    }
  }
  // fromEntries defines every key as data (a column named __proto__ stays a key).
  const merged = { ...data, ...Object.fromEntries(columns) };
  const checked = DataObjectSchema.safeParse(merged);
  if (!checked.success) return { row, error: checked.error.issues[0]?.message ?? "data is invalid" };
  return { row, contact: { email: emailKey, subscribed: subscribed ?? undefined, data: merged } };
}

/**
 * Processes one chunk: reads its staged rows, decides each row (invalid,
 * over the contacts quota, data too large once merged, or written), and in
 * one D1 batch claims the chunk, advances the job's counters, upserts the
 * contacts, removes the workflow triggers they queued and the staged rows, and
 * completes the job when it was the last. A redelivered or re-queued chunk
 * whose rows were applied meanwhile fails its claim and its batch writes
 * nothing, so the counts stay exact. `giveUp` (a reason) fails every row with it:
 * the dead-letter queue's verdict, or the stored-bytes quota the chunk's
 * contacts would pass.
 */
export async function processChunk(db: Database, env: Env, message: ImportChunkMessage, giveUp?: string): Promise<"done" | "already" | "quota-race"> {
  const d1 = db.$client;
  const { importId, projectId, fromRow, toRow } = message;
  const [jobRows, staged] = await runStatements(db, readChunk(d1, importId, projectId, fromRow, toRow));
  if (jobRows.length === 0 || staged.length === 0) return "already";
  const job = mapRow(contactImports, jobRows[0]);
  if (job.status !== "PROCESSING") return "already";
  const plan = planColumns(job.columns);
  const results: RowResult[] = staged.map((s) =>
    giveUp ? { row: Number(s.row), error: giveUp } : readRow(job, plan, String(s.email_key), Number(s.row), JSON.parse(String(s.cells)) as string[]),
  );

  const candidates = results.filter((r): r is Extract<RowResult, { contact: unknown }> => "contact" in r);
  const pairs = JSON.stringify(candidates.map((r) => [r.contact.email, JSON.stringify(r.contact.data)]));
  const [existingRows, [usage]] = candidates.length > 0 ? await runStatements(db, readExisting(d1, projectId, pairs)) : [[], [{ contacts: 0 }]];
  const existing = new Map(existingRows.map((r) => [String(r.email), Number(r.merged)]));
  const limit = readConfig(env).QUOTA_CONTACTS;
  let room = Math.max(0, limit - Number(usage.contacts));
  const quotaMessage = quotaExceeded("QUOTA_CONTACTS", limit).message;

  const errors: { row: number; message: string }[] = [];
  const write: ContactRow[] = [];
  for (const result of results) {
    if ("error" in result) {
      errors.push({ row: result.row, message: result.error });
      continue;
    }
    const { contact } = result;
    const mergedBytes = existing.get(contact.email) ?? new TextEncoder().encode(JSON.stringify(contact.data)).length;
    if (mergedBytes > MAX_CONTACT_DATA_BYTES) {
      errors.push({ row: result.row, message: `The contact's data would be more than ${MAX_CONTACT_DATA_BYTES} bytes as JSON` });
    } else if (!existing.has(contact.email) && room <= 0) {
      errors.push({ row: result.row, message: quotaMessage });
    } else {
      if (!existing.has(contact.email)) room--;
      write.push(contact);
    }
  }
  const emails = write.map((c) => c.email);
  const outcome: ChunkOutcome = {
    importId,
    projectId,
    fromRow,
    toRow,
    processed: results.length,
    emailsJson: JSON.stringify(emails),
    failed: errors.length,
    errorsJson: JSON.stringify(errors.slice(0, MAX_KEPT_ERRORS)),
    eventId: newId(),
    now: Date.now(),
  };
  const guard = emails.length > 0 ? quotaGuard(d1, env, projectId, { contacts: emails }) : null;
  const head = [
    claimChunk(d1, outcome),
    ...(guard ? [guard] : []),
    countChunk(d1, outcome),
    ...upsertContacts(d1, projectId, write, { onExisting: "merge", subscribedByDefault: false, now: new Date(outcome.now) }).statements,
  ];
  try {
    // The stored-bytes guard goes last: after the chunk's staged rows are deleted, their bytes are given back first.
    const results = await d1.batch([...head, ...finishChunk(d1, outcome), ...(write.length > 0 ? [storedBytesGuard(d1, env, projectId)] : [])]);
    // The last chunk's contacts.imported webhook event; the cron re-queues it if this fails.
    await queueRecordedEvents(env, (results[head.length + FINISH_WEBHOOK_AT].results ?? []) as Record<string, unknown>[]);
  } catch (err) {
    if (isChunkTaken(err)) return "already";
    const raised = raisedGuard(err);
    if (raised === "QUOTA_EXCEEDED:QUOTA_STORED_BYTES" && !giveUp) {
      return processChunk(db, env, message, quotaExceeded("QUOTA_STORED_BYTES", readConfig(env).QUOTA_STORED_BYTES).message);
    }
    if (guardError(err, env)) return "quota-race";
    throw err;
  }
  return "done";
}

const GAVE_UP = "The row could not be processed (its chunk failed on every retry); import it again";

/**
 * The import dead-letter queue's consumer: a chunk that failed on every
 * retry counts its rows in `failed`, so the job still completes with exact counts.
 */
export async function settleImportDeadLetters(messages: readonly QueuedMessage<unknown>[], env: Env): Promise<Verdict[]> {
  const db = getDb(env.DB);
  const verdicts: Verdict[] = [];
  for (const message of messages) {
    try {
      await processChunk(db, env, message.body as ImportChunkMessage, GAVE_UP);
      verdicts.push(ACK);
    } catch (err) {
      console.error("settling a dead import chunk failed; retrying it", err);
      verdicts.push(retryAfter(backoffSeconds(message.attempts)));
    }
  }
  return verdicts;
}

/** The import queue's consumer: chunk by chunk; a chunk whose batch failed (D1 unavailable, a quota race) is retried alone. */
export async function consumeImportChunks(messages: readonly QueuedMessage<unknown>[], env: Env): Promise<Verdict[]> {
  const db = getDb(env.DB);
  const verdicts: Verdict[] = [];
  for (const message of messages) {
    try {
      const outcome = await processChunk(db, env, message.body as ImportChunkMessage);
      verdicts.push(outcome === "quota-race" ? retryAfter(1) : ACK);
    } catch (err) {
      console.error("an import chunk failed; retrying it", err);
      verdicts.push(retryAfter(backoffSeconds(message.attempts)));
    }
  }
  return verdicts;
}

/** Contacts per export page (one keyset query each). */
const EXPORT_PAGE = 1000;
export const EXPORT_HEADER = ["id", "email", "subscribed", "createdAt", "updatedAt", "data"];

/**
 * GET /contacts/export: the project's contacts (filtered by subscription
 * and/or a segment's condition) as CSV, oldest first, read page by page
 * (keyset on id) as the client reads the stream.
 */
export async function exportContacts(
  db: Database,
  projectId: string,
  filter: { subscribed?: boolean; segmentId?: string },
): Promise<ReadableStream<Uint8Array>> {
  const conditions: (SQL | undefined)[] = [eq(contacts.projectId, projectId)];
  if (filter.segmentId) {
    const segment = await getSegment(db, projectId, filter.segmentId);
    conditions.push(segmentMembersWhere(projectId, storedCondition(segment.condition)));
  }
  if (filter.subscribed !== undefined) conditions.push(eq(contacts.subscribed, filter.subscribed));
  const where = and(...conditions);
  const encoder = new TextEncoder();
  let after: string | null = null;
  let headerSent = false;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (!headerSent) {
        headerSent = true;
        controller.enqueue(encoder.encode(stringify([EXPORT_HEADER])));
      }
      const page = await db
        .select()
        .from(contacts)
        .where(after ? and(where, gt(contacts.id, after)) : where)
        .orderBy(asc(contacts.id))
        .limit(EXPORT_PAGE);
      if (page.length > 0) {
        after = page[page.length - 1].id;
        const rows = page.map((c) => [
          c.id,
          c.email,
          c.subscribed ? "true" : "false",
          c.createdAt.toISOString(),
          c.updatedAt.toISOString(),
          JSON.stringify(c.data ?? {}),
        ]);
        controller.enqueue(encoder.encode(stringify(rows)));
      }
      if (page.length < EXPORT_PAGE) controller.close();
    },
  });
}
