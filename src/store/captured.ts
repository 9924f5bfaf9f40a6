import { inArray } from "drizzle-orm";
import { getDb } from "../db/client";
import { capturedMessages } from "../db/schema";
import { chunks, IN_LIST_IDS } from "../lib/chunks";
import { BLOB_CHUNK_CHARS, deleteBlobs } from "./blobs";

/**
 * Mail kept by the local `capture` provider (captured_messages, the raw text
 * in blob_chunks). The messages of one flush go in as rows of one JSON
 * parameter (json_each), two statements per ~800 KB of messages rather than
 * two per message; a message too large for that goes alone, its raw text in
 * BLOB_CHUNK_CHARS chunks of its own.
 */

export interface CapturedMessage {
  id: string;
  emailId: string;
  projectId: string;
  from: string;
  to: string;
  subject: string;
  raw: string;
  blobId: string;
  createdAt: number;
}

/** Characters of message JSON per pair of statements, well under D1's 2 MB per value. */
const MAX_ROWS_JSON_CHARS = 800_000;

/** Statements for one batch that store these messages and their raw text. */
export function insertCapturedMessages(d1: D1Database, messages: readonly CapturedMessage[]): D1PreparedStatement[] {
  const statements: D1PreparedStatement[] = [];
  let messageRows: string[] = [];
  let chunkRows: string[] = [];
  let chars = 0;
  const flushRows = () => {
    if (messageRows.length === 0) return;
    statements.push(d1.prepare(INSERT_CAPTURED_ROWS_SQL).bind(`[${messageRows.join(",")}]`));
    statements.push(d1.prepare(INSERT_CHUNK_ROWS_SQL).bind(`[${chunkRows.join(",")}]`));
    messageRows = [];
    chunkRows = [];
    chars = 0;
  };
  for (const m of messages) {
    const raw = m.raw;
    const row = JSON.stringify([m.id, m.emailId, m.projectId, m.from, m.to, m.subject, raw.length, m.blobId, m.createdAt]);
    // JSON escaping at most doubles MIME text (CRLF, quotes); anything near the budget goes alone, unescaped.
    const chunk = raw.length <= MAX_ROWS_JSON_CHARS / 4 ? JSON.stringify([m.blobId, raw]) : null;
    if (chunk === null || row.length + chunk.length > MAX_ROWS_JSON_CHARS) {
      statements.push(d1.prepare(INSERT_CAPTURED_ROWS_SQL).bind(`[${row}]`));
      for (let seq = 0, offset = 0; offset < raw.length || seq === 0; seq++, offset += BLOB_CHUNK_CHARS) {
        statements.push(d1.prepare(INSERT_CHUNK_SQL).bind(m.blobId, seq, raw.slice(offset, offset + BLOB_CHUNK_CHARS)));
      }
      continue;
    }
    if (chars + row.length + chunk.length > MAX_ROWS_JSON_CHARS) flushRows();
    messageRows.push(row);
    chunkRows.push(chunk);
    chars += row.length + chunk.length + 2;
  }
  flushRows();
  return statements;
}
const INSERT_CAPTURED_ROWS_SQL = `INSERT INTO captured_messages (id, email_id, project_id, from_address, to_address, subject, size, blob_id, created_at)
  SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]'), json_extract(value, '$[3]'),
    json_extract(value, '$[4]'), json_extract(value, '$[5]'), json_extract(value, '$[6]'), json_extract(value, '$[7]'), json_extract(value, '$[8]')
  FROM json_each(?1)`;
const INSERT_CHUNK_ROWS_SQL = `INSERT INTO blob_chunks (blob_id, seq, data)
  SELECT json_extract(value, '$[0]'), 0, json_extract(value, '$[1]') FROM json_each(?1)`;
const INSERT_CHUNK_SQL = "INSERT INTO blob_chunks (blob_id, seq, data) VALUES (?1, ?2, ?3)";

/** Statements for one batch: these captured messages and their blobs. */
export function deleteCapturedMessages(d1: D1Database, rows: readonly { id: string; blobId: string }[]) {
  const db = getDb(d1);
  return [
    ...deleteBlobs(
      d1,
      rows.map((r) => r.blobId),
    ),
    ...chunks(
      rows.map((r) => r.id),
      IN_LIST_IDS,
    ).map((ids) => db.delete(capturedMessages).where(inArray(capturedMessages.id, ids))),
  ];
}

/** The module's fixed SQL, by name (test/store/statements.test.ts compiles each against the schema). */
export const FIXED_SQL = { INSERT_CAPTURED_ROWS_SQL, INSERT_CHUNK_ROWS_SQL, INSERT_CHUNK_SQL };
