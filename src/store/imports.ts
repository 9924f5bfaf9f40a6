/**
 * The writer of the import tables (contact_imports, contact_import_rows,
 * contact_import_chunks): fixed SQL, returned as statements for one batch.
 * src/services/imports.ts orchestrates.
 */

/** A new import, PENDING while its upload is read. */
export function insertImport(
  d1: D1Database,
  job: { id: string; projectId: string; columns: string[]; defaultSubscribed?: boolean; now: number },
): D1PreparedStatement {
  return d1
    .prepare("INSERT INTO contact_imports (id, project_id, status, columns, default_subscribed, created_at) VALUES (?1, ?2, 'PENDING', ?3, ?4, ?5)")
    .bind(job.id, job.projectId, JSON.stringify(job.columns), job.defaultSubscribed === undefined ? null : job.defaultSubscribed ? 1 : 0, job.now);
}

/** Stages rows [emailKey, row, cellsJson] (one JSON parameter): a later row with the same key replaces the earlier one. */
export function stageRows(d1: D1Database, importId: string, rowsJson: string): D1PreparedStatement {
  return d1.prepare(STAGE_ROWS_SQL).bind(importId, rowsJson);
}
const STAGE_ROWS_SQL = `INSERT INTO contact_import_rows (import_id, email_key, row, cells)
  SELECT ?1, json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]') FROM json_each(?2) WHERE true
  ON CONFLICT (import_id, email_key) DO UPDATE SET row = excluded.row, cells = excluded.cells`;

/** The upload is complete: the total is the distinct rows staged; PROCESSING (or COMPLETED when there are none). */
export function startImport(d1: D1Database, importId: string): D1PreparedStatement {
  return d1.prepare(START_SQL).bind(importId);
}
const START_SQL = `UPDATE contact_imports SET total = (SELECT count(*) FROM contact_import_rows WHERE import_id = ?1), status = 'PROCESSING'
  WHERE id = ?1 RETURNING *`;

/** Removes an import and whatever it staged (an upload refused part way). */
export function dropImport(d1: D1Database, importId: string): D1PreparedStatement[] {
  return [
    d1.prepare("DELETE FROM contact_import_rows WHERE import_id = ?1").bind(importId),
    d1.prepare("DELETE FROM contact_imports WHERE id = ?1").bind(importId),
  ];
}

/** The import and its staged rows in [fromRow, toRow] (a chunk), row order. */
export function readChunk(d1: D1Database, importId: string, projectId: string, fromRow: number, toRow: number): D1PreparedStatement[] {
  return [
    d1.prepare("SELECT * FROM contact_imports WHERE id = ?1 AND project_id = ?2").bind(importId, projectId),
    d1
      .prepare("SELECT email_key, row, cells FROM contact_import_rows WHERE import_id = ?1 AND row BETWEEN ?2 AND ?3 ORDER BY row")
      .bind(importId, fromRow, toRow),
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
  /** Rows of the chunk (staged rows in the range). */
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
 * A chunk's claim: the first statement of its batch. A second claim of the
 * same chunk (redelivery) fails on the primary key and its whole batch is
 * rolled back (isUniqueViolation in store/guards). Notes the workflow outbox's last id.
 */
export function claimChunk(d1: D1Database, o: ChunkOutcome): D1PreparedStatement {
  return d1.prepare(CLAIM_SQL).bind(o.importId, o.fromRow);
}
const CLAIM_SQL = `INSERT INTO contact_import_chunks (import_id, first_row, outbox_mark)
  VALUES (?1, ?2, (SELECT coalesce(max(id), 0) FROM workflow_trigger_outbox))`;

/**
 * Counters before the contacts are written (in the same batch): updated = the
 * chunk's addresses that are contacts already, created = the rest. The first
 * 100 errors by row number are kept.
 */
export function countChunk(d1: D1Database, o: ChunkOutcome): D1PreparedStatement {
  return d1.prepare(COUNT_SQL).bind(o.importId, o.projectId, o.processed, o.emailsJson, o.failed, o.errorsJson);
}
const COUNT_SQL = `UPDATE contact_imports SET
    processed = processed + ?3,
    updated = updated + (SELECT count(*) FROM contacts WHERE project_id = ?2 AND email IN (SELECT value FROM json_each(?4))),
    created = created + json_array_length(?4) - (SELECT count(*) FROM contacts WHERE project_id = ?2 AND email IN (SELECT value FROM json_each(?4))),
    failed = failed + ?5,
    errors = CASE WHEN json_array_length(?6) = 0 THEN errors ELSE (
      SELECT json_group_array(json(value)) FROM (
        SELECT value FROM (SELECT value FROM json_each(contact_imports.errors) UNION ALL SELECT value FROM json_each(?6))
        ORDER BY json_extract(value, '$.row') LIMIT 100)) END
  WHERE id = ?1`;

/**
 * After the upsert: the workflow triggers its contacts queued (CONTACT_CREATED,
 * CONTACT_SUBSCRIBED: outbox rows past the claim's mark) are removed, the
 * chunk's staged rows deleted, and, when this chunk was the last, the import
 * COMPLETED with one `contacts.imported` event (contact_id NULL).
 */
export function finishChunk(d1: D1Database, o: ChunkOutcome): D1PreparedStatement[] {
  return [
    d1.prepare(DROP_TRIGGERS_SQL).bind(o.projectId, o.importId, o.fromRow, o.emailsJson),
    d1.prepare("DELETE FROM contact_import_rows WHERE import_id = ?1 AND row BETWEEN ?2 AND ?3").bind(o.importId, o.fromRow, o.toRow),
    ...completeIfDone(d1, o.importId, o.eventId, o.now),
  ];
}
const DROP_TRIGGERS_SQL = `DELETE FROM workflow_trigger_outbox WHERE project_id = ?1
  AND id > (SELECT outbox_mark FROM contact_import_chunks WHERE import_id = ?2 AND first_row = ?3)
  AND kind IN ('CONTACT_CREATED', 'CONTACT_SUBSCRIBED')
  AND contact_id IN (SELECT id FROM contacts WHERE project_id = ?1 AND email IN (SELECT value FROM json_each(?4)))`;

/**
 * The import's end, if every row is processed: the `contacts.imported` webhook
 * event (first: it returns `id, project_id` when an endpoint subscribes, for
 * queueRecordedEvents), the project event, then COMPLETED (each only once).
 */
export function completeIfDone(d1: D1Database, importId: string, eventId: string, now: number): D1PreparedStatement[] {
  return [
    d1.prepare(WEBHOOK_EVENT_SQL).bind(importId, eventId, new Date(now).toISOString(), now),
    d1.prepare(EVENT_SQL).bind(importId, eventId, now),
    d1.prepare(COMPLETE_SQL).bind(importId, now),
  ];
}
export const IMPORTED_EVENT = "contacts.imported";
// The webhook body's data is the finished job, as GET /contacts/imports/{id} shows it (errors aside).
const WEBHOOK_EVENT_SQL = `INSERT INTO webhook_events (id, project_id, type, payload, created_at)
  SELECT ?2, i.project_id, '${IMPORTED_EVENT}', json_object('type', '${IMPORTED_EVENT}', 'timestamp', ?3, 'data', json_object(
      'id', i.id, 'status', 'COMPLETED', 'total', i.total, 'processed', i.processed, 'created', i.created, 'updated', i.updated,
      'failed', i.failed, 'createdAt', strftime('%Y-%m-%dT%H:%M:%fZ', i.created_at / 1000.0, 'unixepoch'), 'finishedAt', ?3)), ?4
  FROM contact_imports i WHERE i.id = ?1 AND i.status = 'PROCESSING' AND i.processed >= i.total
    AND EXISTS (SELECT 1 FROM webhook_endpoints w WHERE w.project_id = i.project_id AND w.enabled = 1
      AND (w.events = '[]' OR EXISTS (SELECT 1 FROM json_each(w.events) WHERE value = '${IMPORTED_EVENT}')))
  RETURNING id, project_id`;
const EVENT_SQL = `INSERT INTO events (id, project_id, contact_id, name, data, created_at)
  SELECT ?2, project_id, NULL, '${IMPORTED_EVENT}',
    json_object('importId', id, 'total', total, 'created', created, 'updated', updated, 'failed', failed), ?3
  FROM contact_imports WHERE id = ?1 AND status = 'PROCESSING' AND processed >= total`;
const COMPLETE_SQL = `UPDATE contact_imports SET status = 'COMPLETED', finished_at = ?2
  WHERE id = ?1 AND status = 'PROCESSING' AND processed >= total`;

/** An import whose chunks could not be queued: FAILED, its staged rows dropped. */
export function failImport(d1: D1Database, importId: string, now: number): D1PreparedStatement[] {
  return [
    d1.prepare("UPDATE contact_imports SET status = 'FAILED', finished_at = ?2 WHERE id = ?1").bind(importId, now),
    d1.prepare("DELETE FROM contact_import_rows WHERE import_id = ?1").bind(importId),
  ];
}
