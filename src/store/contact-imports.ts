/**
 * The writer of the contact import tables (contact_imports, contact_import_ranges,
 * contact_import_chunks): fixed SQL, returned as statements for one batch.
 * src/services/contact-imports/ orchestrates the upload (upload.ts), the chunks
 * (process.ts) and the cron's recovery (recovery.ts). The file itself is an R2 object
 * (store/objects/imports.ts), counted in r2_usage; the job's header and errors count in
 * projects.stored_bytes (triggers, migration 0025).
 */

import { recordsWebhookEvents } from "./marks";

/** Open imports: those the per-project cap counts and the cron watches (the partial indexes' condition). */
const OPEN = "status IN ('PENDING', 'PROCESSING')";

/**
 * A new import, PENDING while its upload is read, unless the project already
 * has `maxOpen` open imports: one conditional INSERT, so two uploads racing for
 * the last place cannot both get it. Returns `id` when inserted, nothing otherwise.
 */
export function insertImport(
  d1: D1Database,
  job: { id: string; projectId: string; columns: string[]; defaultSubscribed?: boolean; now: number; maxOpen: number },
): D1PreparedStatement {
  return d1
    .prepare(INSERT_SQL)
    .bind(job.id, job.projectId, JSON.stringify(job.columns), job.defaultSubscribed === undefined ? null : job.defaultSubscribed ? 1 : 0, job.now, job.maxOpen);
}
const INSERT_SQL = `INSERT INTO contact_imports (id, project_id, status, columns, default_subscribed, created_at, progress_at)
  SELECT ?1, ?2, 'PENDING', ?3, ?4, ?5, ?5
  WHERE (SELECT count(*) FROM contact_imports WHERE project_id = ?2 AND ${OPEN}) < ?6
  RETURNING id`;

/** The upload is alive (while the file arrives): returns `id` while the import is still PENDING, nothing once the cron dropped it. */
export function uploadProgress(d1: D1Database, importId: string, now: number): D1PreparedStatement {
  return d1.prepare("UPDATE contact_imports SET progress_at = ?2 WHERE id = ?1 AND status = 'PENDING' RETURNING id").bind(importId, now);
}

/**
 * The upload is complete: `total` distinct rows (the last row of an address counts), the file's
 * key and record delimiter; PROCESSING (or COMPLETED when there are none). Nothing when no longer PENDING.
 */
export function startImport(
  d1: D1Database,
  importId: string,
  file: {
    total: number;
    objectKey: string | null;
    recordDelimiter: string | null;
    /** The column plan the upload settled (JSON). */
    planJson: string;
    /** Rows a later row of their address replaced, and the first 100 of them as row errors (JSON). */
    duplicates: number;
    duplicateErrorsJson: string;
  },
  now: number,
): D1PreparedStatement {
  return d1.prepare(START_SQL).bind(importId, now, file.total, file.objectKey, file.recordDelimiter, file.planJson, file.duplicates, file.duplicateErrorsJson);
}
const START_SQL = `UPDATE contact_imports SET total = ?3, object_key = ?4, record_delimiter = ?5, column_plan = ?6, duplicates = ?7, errors = ?8,
    status = 'PROCESSING', progress_at = ?2
  WHERE id = ?1 AND status = 'PENDING' RETURNING *`;

/** One chunk of the file: its rows [firstRow, lastRow], their bytes [startByte, endByte), the rows in it a later row replaces. */
export interface ImportRange {
  firstRow: number;
  lastRow: number;
  startByte: number;
  endByte: number;
  skip: number[];
}

/** Characters of range JSON per statement (a range with its skipped rows is at most a few KB). */
const MAX_RANGES_JSON_CHARS = 500_000;

/** Statements recording the import's ranges (after startImport in its batch: only while PROCESSING). */
export function insertRanges(d1: D1Database, importId: string, ranges: readonly ImportRange[]): D1PreparedStatement[] {
  const statements: D1PreparedStatement[] = [];
  let rows: string[] = [];
  let chars = 0;
  for (const r of ranges) {
    const row = JSON.stringify([r.firstRow, r.lastRow, r.startByte, r.endByte, r.lastRow - r.firstRow + 1 - r.skip.length, JSON.stringify(r.skip)]);
    if (rows.length > 0 && chars + row.length > MAX_RANGES_JSON_CHARS) {
      statements.push(d1.prepare(INSERT_RANGES_SQL).bind(importId, `[${rows.join(",")}]`));
      rows = [];
      chars = 0;
    }
    rows.push(row);
    chars += row.length + 1;
  }
  if (rows.length > 0) statements.push(d1.prepare(INSERT_RANGES_SQL).bind(importId, `[${rows.join(",")}]`));
  return statements;
}
const INSERT_RANGES_SQL = `INSERT INTO contact_import_ranges (import_id, first_row, last_row, start_byte, end_byte, rows, skip)
  SELECT ?1, json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]'), json_extract(value, '$[3]'),
    json_extract(value, '$[4]'), json_extract(value, '$[5]') FROM json_each(?2)
  WHERE EXISTS (SELECT 1 FROM contact_imports WHERE id = ?1 AND status = 'PROCESSING')`;

/** Removes an upload refused part way: the job while still PENDING (one the cron failed keeps its reason). */
export function dropImport(d1: D1Database, importId: string): D1PreparedStatement[] {
  return [d1.prepare("DELETE FROM contact_imports WHERE id = ?1 AND status = 'PENDING'").bind(importId)];
}

/** The import and the range starting at `fromRow` (a chunk). */
export function readChunk(d1: D1Database, importId: string, projectId: string, fromRow: number): D1PreparedStatement[] {
  return [
    d1.prepare("SELECT * FROM contact_imports WHERE id = ?1 AND project_id = ?2").bind(importId, projectId),
    d1
      .prepare("SELECT first_row, last_row, start_byte, end_byte, rows, skip FROM contact_import_ranges WHERE import_id = ?1 AND first_row = ?2")
      .bind(importId, fromRow),
  ];
}

/**
 * The existing contacts among [email, dataPatchJson] pairs, with the size their
 * data would have once merged (the data cap is checked per row, not by
 * aborting the chunk), and the project's contact count.
 */
export function readExisting(d1: D1Database, projectId: string, pairsJson: string): D1PreparedStatement[] {
  return [
    d1.prepare(EXISTING_SQL).bind(projectId, pairsJson),
    d1.prepare("SELECT coalesce((SELECT contacts FROM project_usage WHERE project_id = ?1), 0) AS contacts").bind(projectId),
  ];
}
const EXISTING_SQL = `SELECT c.email AS email, length(CAST(json_patch(c.data, json_patch('{}', json_extract(v.value, '$[1]'))) AS BLOB)) AS merged
  FROM json_each(?2) AS v CROSS JOIN contacts AS c ON c.project_id = ?1 AND c.email = json_extract(v.value, '$[0]')`;
// CROSS JOIN keeps json_each the outer loop (one unique-index probe per row); a plain JOIN let SQLite scan the project's contacts.

export interface ChunkOutcome {
  importId: string;
  projectId: string;
  fromRow: number;
  toRow: number;
  /** Rows of the chunk (the range's rows less those a later row replaces). */
  processed: number;
  /** Addresses written (valid rows); created + updated = their count. */
  emailsJson: string;
  failed: number;
  /** [{row, message}] of this chunk. */
  errorsJson: string;
  /** Id of the `contacts.imported` event, used if this chunk finishes the import. */
  eventId: string;
  now: number;
}

/**
 * A chunk's claim: the first statement of its batch, which it aborts when the
 * same chunk (its range's first row; ranges are fixed at upload) was claimed
 * before, or the import is no longer PROCESSING (the cron failed it meanwhile):
 * a row is applied once however often its chunk comes. The abort is the
 * primary key's failure or a NOT NULL one (outbox_mark) (isChunkTaken).
 * Notes the workflow outbox's last id.
 */
export function claimChunk(d1: D1Database, o: ChunkOutcome): D1PreparedStatement {
  return d1.prepare(CLAIM_SQL).bind(o.importId, o.fromRow);
}
const CLAIM_SQL = `INSERT INTO contact_import_chunks (import_id, first_row, outbox_mark)
  VALUES (?1, ?2, CASE WHEN EXISTS (SELECT 1 FROM contact_imports WHERE id = ?1 AND status = 'PROCESSING')
    THEN (SELECT coalesce(max(id), 0) FROM workflow_trigger_outbox) END)`;

/** The message of `err` and of the errors in its `cause` chain. */
function messagesOf(err: unknown): string[] {
  const out: string[] = [];
  for (let e = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) out.push(e instanceof Error ? e.message : String(e));
  return out;
}

/** Whether a chunk's batch was aborted by its claim: the chunk, or some of its rows, applied already. */
export const isChunkTaken = (err: unknown) =>
  messagesOf(err).some(
    (m) => m.includes("UNIQUE constraint failed: contact_import_chunks") || m.includes("NOT NULL constraint failed: contact_import_chunks.outbox_mark"),
  );

/**
 * Counters before the contacts are written (in the same batch): updated = the
 * chunk's addresses that are contacts already, created = the rest. The first
 * 100 errors by row number are kept. The job's progress time moves.
 */
export function countChunk(d1: D1Database, o: ChunkOutcome): D1PreparedStatement {
  return d1.prepare(COUNT_SQL).bind(o.importId, o.projectId, o.processed, o.emailsJson, o.failed, o.errorsJson, o.now);
}
const COUNT_SQL = `UPDATE contact_imports SET
    processed = processed + ?3,
    updated = updated + (SELECT count(*) FROM contacts WHERE project_id = ?2 AND email IN (SELECT value FROM json_each(?4))),
    created = created + json_array_length(?4) - (SELECT count(*) FROM contacts WHERE project_id = ?2 AND email IN (SELECT value FROM json_each(?4))),
    failed = failed + ?5,
    errors = CASE WHEN json_array_length(?6) = 0 THEN errors ELSE (
      SELECT json_group_array(json(value)) FROM (
        SELECT value FROM (SELECT value FROM json_each(contact_imports.errors) UNION ALL SELECT value FROM json_each(?6))
        ORDER BY json_extract(value, '$.row') LIMIT 100)) END,
    progress_at = ?7
  WHERE id = ?1`;

/**
 * After the upsert: the workflow triggers its contacts queued (CONTACT_CREATED,
 * CONTACT_SUBSCRIBED: outbox rows past the claim's mark) are removed, and,
 * when this chunk was the last, the import COMPLETED with one
 * `contacts.imported` event (contact_id NULL).
 */
export function finishChunk(d1: D1Database, o: ChunkOutcome): D1PreparedStatement[] {
  return [d1.prepare(DROP_TRIGGERS_SQL).bind(o.projectId, o.importId, o.fromRow, o.emailsJson), ...completeIfDone(d1, o.importId, o.eventId, o.now)];
}
const DROP_TRIGGERS_SQL = `DELETE FROM workflow_trigger_outbox WHERE project_id = ?1
  AND id > (SELECT outbox_mark FROM contact_import_chunks WHERE import_id = ?2 AND first_row = ?3)
  AND kind IN ('CONTACT_CREATED', 'CONTACT_SUBSCRIBED')
  AND contact_id IN (SELECT id FROM contacts WHERE project_id = ?1 AND email IN (SELECT value FROM json_each(?4)))`;

/**
 * The import's end, if every row is processed: the `contacts.imported` webhook
 * event (first, marked recordsWebhookEvents: it returns `id, project_id` when an
 * endpoint subscribes), the project event, then COMPLETED (each only once),
 * then its chunk claims and ranges, which a finished import no longer needs (a late
 * delivery finds it COMPLETED).
 */
export function completeIfDone(d1: D1Database, importId: string, eventId: string, now: number): D1PreparedStatement[] {
  return [
    recordsWebhookEvents(d1.prepare(WEBHOOK_EVENT_SQL).bind(importId, eventId, new Date(now).toISOString(), now)),
    d1.prepare(EVENT_SQL).bind(importId, eventId, now),
    d1.prepare(COMPLETE_SQL).bind(importId, now),
    d1.prepare(DROP_CLAIMS_SQL).bind(importId),
    d1.prepare(DROP_RANGES_SQL).bind(importId),
  ];
}
export const IMPORTED_EVENT = "contacts.imported";
// The webhook body's data is the finished job, as GET /contacts/imports/{id} shows it (errors aside).
const WEBHOOK_EVENT_SQL = `INSERT INTO webhook_events (id, project_id, type, payload, created_at)
  SELECT ?2, i.project_id, '${IMPORTED_EVENT}', json_object('type', '${IMPORTED_EVENT}', 'timestamp', ?3, 'data', json_object(
      'id', i.id, 'status', 'COMPLETED', 'total', i.total, 'processed', i.processed, 'created', i.created, 'updated', i.updated,
      'failed', i.failed, 'duplicates', i.duplicates, 'subscribedDefault', CASE i.default_subscribed WHEN 1 THEN json('true') WHEN 0 THEN json('false') END, 'createdAt', strftime('%Y-%m-%dT%H:%M:%fZ', i.created_at / 1000.0, 'unixepoch'), 'finishedAt', ?3)), ?4
  FROM contact_imports i WHERE i.id = ?1 AND i.status = 'PROCESSING' AND i.processed >= i.total
    AND EXISTS (SELECT 1 FROM webhook_endpoints w WHERE w.project_id = i.project_id AND w.enabled = 1
      AND (w.events = '[]' OR EXISTS (SELECT 1 FROM json_each(w.events) WHERE value = '${IMPORTED_EVENT}')))
  RETURNING id, project_id`;
const EVENT_SQL = `INSERT INTO events (id, project_id, contact_id, name, data, created_at)
  SELECT ?2, project_id, NULL, '${IMPORTED_EVENT}',
    json_object('importId', id, 'total', total, 'created', created, 'updated', updated, 'failed', failed, 'duplicates', duplicates), ?3
  FROM contact_imports WHERE id = ?1 AND status = 'PROCESSING' AND processed >= total`;
const COMPLETE_SQL = `UPDATE contact_imports SET status = 'COMPLETED', finished_at = ?2, resume_row = 0
  WHERE id = ?1 AND status = 'PROCESSING' AND processed >= total`;
const DROP_CLAIMS_SQL = `DELETE FROM contact_import_chunks WHERE import_id = ?1
  AND EXISTS (SELECT 1 FROM contact_imports WHERE id = ?1 AND status = 'COMPLETED')`;
const DROP_RANGES_SQL = `DELETE FROM contact_import_ranges WHERE import_id = ?1
  AND EXISTS (SELECT 1 FROM contact_imports WHERE id = ?1 AND status = 'COMPLETED')`;

// The cron (src/services/contact-imports/recovery.ts).

/**
 * Open imports without progress since `before`, in `status`, FAILED with
 * `reason` (at most `limit`); their ranges are left to sweepRanges. Returns their ids.
 */
export function failStalled(d1: D1Database, status: "PENDING" | "PROCESSING", before: number, reason: string, now: number, limit: number): D1PreparedStatement {
  return d1.prepare(FAIL_STALLED_SQL).bind(status, before, reason, now, limit);
}
const FAIL_STALLED_SQL = `UPDATE contact_imports SET status = 'FAILED', failure_reason = ?3, finished_at = ?4, resume_row = 0
  WHERE id IN (SELECT id FROM contact_imports WHERE ${OPEN} AND status = ?1 AND progress_at < ?2 LIMIT ?5)
  RETURNING id`;

/**
 * Imports that still have ranges but are no longer open (failed by the cron):
 * a skip scan over the ranges' primary key, one index probe per import that has some.
 */
export function leftoverImports(d1: D1Database, limit: number): D1PreparedStatement {
  return d1.prepare(LEFTOVER_SQL).bind(limit);
}
const LEFTOVER_SQL = `WITH RECURSIVE ranged(id) AS (
    SELECT (SELECT min(import_id) FROM contact_import_ranges)
    UNION ALL SELECT (SELECT min(import_id) FROM contact_import_ranges WHERE import_id > ranged.id) FROM ranged WHERE ranged.id IS NOT NULL)
  SELECT id FROM ranged WHERE id IS NOT NULL
    AND NOT EXISTS (SELECT 1 FROM contact_imports i WHERE i.id = ranged.id AND i.${OPEN})
  LIMIT ?1`;

/** Deletes up to `limit` ranges and chunk claims of an import no longer open (the first statement returns the ranges' first rows). */
export function sweepRanges(d1: D1Database, importId: string, limit: number): D1PreparedStatement[] {
  return [d1.prepare(SWEEP_RANGES_SQL).bind(importId, limit), d1.prepare(SWEEP_CLAIMS_SQL).bind(importId, limit)];
}
const SWEEP_RANGES_SQL = `DELETE FROM contact_import_ranges WHERE import_id = ?1
  AND first_row IN (SELECT first_row FROM contact_import_ranges WHERE import_id = ?1 ORDER BY first_row LIMIT ?2) RETURNING first_row`;
const SWEEP_CLAIMS_SQL = `DELETE FROM contact_import_chunks WHERE import_id = ?1
  AND first_row IN (SELECT first_row FROM contact_import_chunks WHERE import_id = ?1 ORDER BY first_row LIMIT ?2)`;

/**
 * PROCESSING imports to re-queue: no chunk applied since `before` (their
 * messages were lost), or a re-queue round under way (resume_row > 0).
 */
export function stalledImports(d1: D1Database, before: number, limit: number): D1PreparedStatement {
  return d1.prepare(STALLED_SQL).bind(before, limit);
}
const STALLED_SQL = `SELECT id, project_id, resume_row FROM contact_imports INDEXED BY contact_imports_progress_idx
  WHERE ${OPEN} AND status = 'PROCESSING' AND (progress_at < ?1 OR resume_row > 0)
  ORDER BY progress_at LIMIT ?2`;

/** An import's ranges starting after `afterRow` that no chunk applied yet, in row order: their rows (first, last, how many apply). */
export function unappliedRanges(d1: D1Database, importId: string, afterRow: number, limit: number): D1PreparedStatement {
  return d1.prepare(UNAPPLIED_SQL).bind(importId, afterRow, limit);
}
const UNAPPLIED_SQL = `SELECT r.first_row, r.last_row, r.rows FROM contact_import_ranges r
  WHERE r.import_id = ?1 AND r.first_row > ?2
    AND NOT EXISTS (SELECT 1 FROM contact_import_chunks c WHERE c.import_id = r.import_id AND c.first_row = r.first_row)
  ORDER BY r.first_row LIMIT ?3`;

/**
 * The re-queue round got to the range starting at `resumeRow` (0: it is over; the progress time
 * then restarts, so the next round only comes after another stall).
 */
export function markResumed(d1: D1Database, importId: string, resumeRow: number, now: number): D1PreparedStatement {
  return d1.prepare(MARK_RESUMED_SQL).bind(importId, resumeRow, now);
}
const MARK_RESUMED_SQL = `UPDATE contact_imports SET resume_row = ?2, progress_at = CASE WHEN ?2 = 0 THEN ?3 ELSE progress_at END
  WHERE id = ?1 AND status = 'PROCESSING'`;

/** The module's fixed SQL, by name (test/store/statements.test.ts compiles each against the schema). */
export const FIXED_SQL = {
  INSERT_SQL,
  START_SQL,
  INSERT_RANGES_SQL,
  EXISTING_SQL,
  CLAIM_SQL,
  COUNT_SQL,
  DROP_TRIGGERS_SQL,
  WEBHOOK_EVENT_SQL,
  EVENT_SQL,
  COMPLETE_SQL,
  DROP_CLAIMS_SQL,
  DROP_RANGES_SQL,
  FAIL_STALLED_SQL,
  LEFTOVER_SQL,
  SWEEP_RANGES_SQL,
  SWEEP_CLAIMS_SQL,
  STALLED_SQL,
  UNAPPLIED_SQL,
  MARK_RESUMED_SQL,
};
