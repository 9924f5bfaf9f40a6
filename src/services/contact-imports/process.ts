import { Buffer } from "node:buffer";
import { parse as parseCsv } from "csv-parse/sync";
import { fromRow as mapRow, getDb, runStatements, type Database } from "../../db/client";
import { contactImports, type ContactImport, type JsonObject, type StoredColumnPlan } from "../../db/schema";
import type { Env } from "../../env";
import type { AfterCommit } from "../../lib/after-commit";
import { readConfig } from "../../lib/config";
import { newId } from "../../lib/ids";
import { ACK, backoffSeconds, retryAfter, type QueuedMessage, type Verdict } from "../../lib/queue-consumer";
import { DataObjectSchema, EmailAddressSchema } from "../../lib/validators";
import type { ImportChunkMessage } from "../../messages";
import { WriteBatch } from "../../store/batch";
import { claimChunk, countChunk, finishChunk, isChunkTaken, readChunk, readExisting, type ChunkOutcome } from "../../store/contact-imports";
import { type ContactRow, upsertContacts } from "../../store/contacts";
import { guardError, MAX_CONTACT_DATA_BYTES, quotaExceeded, quotaGuard, raisedGuard, storedBytesGuard } from "../../store/guards";
import { CSV_OPTIONS, readCell, storedPlan } from "./columns";
import { MAX_KEPT_ERRORS } from "./jobs";
import { readImportRange } from "../../store/objects/imports";

/**
 * The import queue's consumer: a chunk of the uploaded file's rows read against the header
 * and written as contacts, once (the chunk's claim), with exact counts; and
 * the dead-letter queue's, which fails a chunk's rows so the job still ends.
 */

type RowResult = { row: number; contact: ContactRow & { data: JsonObject } } | { row: number; error: string };

/**
 * A chunk's rows: its byte range of the uploaded file (R2), parsed with the upload's options and
 * the header's record delimiter, so it reads the same records the upload counted. The range is
 * at most CHUNK_BYTES and each record MAX_RECORD_CHARS. A file gone (expired) throws: the
 * chunk is retried, then the dead-letter queue fails its rows.
 */
async function readRange(env: Env, job: ContactImport, start: number, end: number): Promise<string[][]> {
  const bytes = await readImportRange(env.STORAGE, job.objectKey!, start, end);
  if (!bytes) throw new Error(`import ${job.id}: its file ${job.objectKey} is gone`);
  return parseCsv(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength), {
    ...CSV_OPTIONS,
    ...(job.recordDelimiter ? { record_delimiter: job.recordDelimiter } : {}),
  }) as string[][];
}

/** One row read against the column plan: the contact it writes, or why it cannot. */
function readRow(job: ContactImport, plan: StoredColumnPlan, emailKey: string, row: number, cells: string[]): RowResult {
  const emailCell = (cells[plan.email] ?? "").trim();
  if (emailKey.startsWith("#")) return { row, error: emailCell === "" ? "email is empty" : `Invalid email address: ${emailCell.slice(0, 100)}` };
  if (cells.length > plan.roles.length && cells.slice(plan.roles.length).some((c) => c.trim() !== "")) {
    return { row, error: `The row has ${cells.length} fields; the header has ${plan.roles.length}` };
  }
  let subscribed: boolean | null = job.defaultSubscribed ?? null;
  let data: JsonObject = {};
  const columns: [string, unknown][] = [];
  for (let i = 0; i < plan.roles.length; i++) {
    const cell = cells[i] ?? "";
    if (cell === "") continue;
    const role = plan.roles[i];
    if (role === "subscribed") {
      if (cell.trim() === "") continue;
      const read = readCell(cell, "boolean", "subscribed");
      if ("error" in read) return { row, error: read.error };
      subscribed = read.value as boolean;
    } else if (role === "data") {
      let parsed: unknown;
      try {
        parsed = JSON.parse(cell);
      } catch {
        return { row, error: "data is not valid JSON" };
      }
      if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) return { row, error: "data must be a JSON object" };
      data = parsed as JsonObject;
    } else if (role === "key") {
      const read = readCell(cell, plan.types[i], plan.keys[i]);
      if ("error" in read) return { row, error: read.error };
      columns.push([plan.keys[i], read.value]);
    }
  }
  // fromEntries defines every key as data (a column named __proto__ stays a key).
  const merged = { ...data, ...Object.fromEntries(columns) };
  const checked = DataObjectSchema.safeParse(merged);
  if (!checked.success) return { row, error: checked.error.issues[0]?.message ?? "data is invalid" };
  return { row, contact: { email: emailKey, subscribed: subscribed ?? undefined, data: merged } };
}

/**
 * Processes one chunk: reads its rows from the file, decides each row (invalid,
 * over the contacts quota, data too large once merged, or written), and in
 * one D1 batch claims the chunk, advances the job's counters, upserts the
 * contacts, removes the workflow triggers they queued, and
 * completes the job when it was the last (its `contacts.imported` webhook event
 * leaves through `afterCommit`). A redelivered or re-queued chunk
 * whose rows were applied meanwhile fails its claim and its batch writes
 * nothing, so the counts stay exact. `giveUp` (a reason) fails every row with it:
 * the dead-letter queue's verdict, or the stored-bytes quota the chunk's
 * contacts would pass.
 */
export async function processChunk(
  db: Database,
  env: Env,
  message: ImportChunkMessage,
  afterCommit: AfterCommit,
  giveUp?: string,
): Promise<"done" | "already" | "quota-race"> {
  const d1 = db.$client;
  const { importId, projectId, fromRow } = message;
  const [jobRows, rangeRows] = await runStatements(db, readChunk(d1, importId, projectId, fromRow));
  if (jobRows.length === 0 || rangeRows.length === 0) return "already";
  const job = mapRow(contactImports, jobRows[0]);
  if (job.status !== "PROCESSING" || !job.objectKey) return "already";
  const range = rangeRows[0];
  const firstRow = Number(range.first_row);
  const lastRow = Number(range.last_row);
  const skip = new Set(JSON.parse(String(range.skip)) as number[]);
  const plan = storedPlan(job);
  let results: RowResult[];
  if (giveUp) {
    results = [];
    for (let row = firstRow; row <= lastRow; row++) if (!skip.has(row)) results.push({ row, error: giveUp });
  } else {
    const records = await readRange(env, job, Number(range.start_byte), Number(range.end_byte));
    if (records.length !== lastRow - firstRow + 1) throw new Error(`import ${importId}: rows ${firstRow}-${lastRow} parsed as ${records.length} records`);
    results = [];
    for (const [i, cells] of records.entries()) {
      const row = firstRow + i;
      if (skip.has(row)) continue;
      const parsed = EmailAddressSchema.safeParse(cells[plan.email] ?? "");
      results.push(readRow(job, plan, parsed.success ? parsed.data : `#${row}`, row, cells));
    }
  }

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
    toRow: lastRow,
    processed: results.length,
    emailsJson: JSON.stringify(emails),
    failed: errors.length,
    errorsJson: JSON.stringify(errors.slice(0, MAX_KEPT_ERRORS)),
    eventId: newId(),
    now: Date.now(),
  };
  const batch = new WriteBatch(d1);
  batch.add(
    claimChunk(d1, outcome),
    emails.length > 0 ? quotaGuard(d1, env, projectId, { contacts: emails }) : null,
    countChunk(d1, outcome),
    ...upsertContacts(d1, projectId, write, { onExisting: "merge", subscribedByDefault: false, now: new Date(outcome.now) }).statements,
    ...finishChunk(d1, outcome),
    write.length > 0 ? storedBytesGuard(d1, env, projectId) : null,
  );
  try {
    // The last chunk's contacts.imported webhook event leaves through afterCommit; the cron re-queues it if that fails.
    await batch.run({ afterCommit });
  } catch (err) {
    if (isChunkTaken(err)) return "already";
    const raised = raisedGuard(err);
    if (raised === "QUOTA_EXCEEDED:QUOTA_STORED_BYTES" && !giveUp) {
      return processChunk(db, env, message, afterCommit, quotaExceeded("QUOTA_STORED_BYTES", readConfig(env).QUOTA_STORED_BYTES).message);
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
export async function settleImportDeadLetters(messages: readonly QueuedMessage<unknown>[], env: Env, afterCommit: AfterCommit): Promise<Verdict[]> {
  const db = getDb(env.DB);
  const verdicts: Verdict[] = [];
  for (const message of messages) {
    try {
      await processChunk(db, env, message.body as ImportChunkMessage, afterCommit, GAVE_UP);
      verdicts.push(ACK);
    } catch (err) {
      console.error("settling a dead import chunk failed; retrying it", err);
      verdicts.push(retryAfter(backoffSeconds(message.attempts)));
    }
  }
  return verdicts;
}

/** The import queue's consumer: chunk by chunk; a chunk whose batch failed (D1 unavailable, a quota race) is retried alone. */
export async function consumeImportChunks(messages: readonly QueuedMessage<unknown>[], env: Env, afterCommit: AfterCommit): Promise<Verdict[]> {
  const db = getDb(env.DB);
  const verdicts: Verdict[] = [];
  for (const message of messages) {
    try {
      const outcome = await processChunk(db, env, message.body as ImportChunkMessage, afterCommit);
      verdicts.push(outcome === "quota-race" ? retryAfter(1) : ACK);
    } catch (err) {
      console.error("an import chunk failed; retrying it", err);
      verdicts.push(retryAfter(backoffSeconds(message.attempts)));
    }
  }
  return verdicts;
}
