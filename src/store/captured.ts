import { inArray } from "drizzle-orm";
import { getDb } from "../db/client";
import { capturedMessages } from "../db/schema";
import { chunks, IN_LIST_IDS } from "../lib/chunks";

/**
 * Mail kept by the local `capture` provider (captured_messages): the row names where the raw
 * text is in R2 (store/objects/captured.ts: key, byte offset, size). The rows of one flush go
 * in as one JSON parameter (json_each), one statement per ~800 KB of rows.
 */

export interface CapturedMessage {
  id: string;
  emailId: string;
  projectId: string;
  from: string;
  to: string;
  subject: string;
  objectKey: string;
  objectOffset: number;
  size: number;
  createdAt: number;
}

/** Characters of row JSON per statement, well under D1's 2 MB per value. */
const MAX_ROWS_JSON_CHARS = 800_000;

/** Statements for one batch that store these messages' rows. */
export function insertCapturedMessages(d1: D1Database, messages: readonly CapturedMessage[]): D1PreparedStatement[] {
  const statements: D1PreparedStatement[] = [];
  let rows: string[] = [];
  let chars = 0;
  for (const m of messages) {
    const row = JSON.stringify([m.id, m.emailId, m.projectId, m.from, m.to, m.subject, m.size, m.objectKey, m.objectOffset, m.createdAt]);
    if (rows.length > 0 && chars + row.length > MAX_ROWS_JSON_CHARS) {
      statements.push(d1.prepare(INSERT_CAPTURED_ROWS_SQL).bind(`[${rows.join(",")}]`));
      rows = [];
      chars = 0;
    }
    rows.push(row);
    chars += row.length + 1;
  }
  if (rows.length > 0) statements.push(d1.prepare(INSERT_CAPTURED_ROWS_SQL).bind(`[${rows.join(",")}]`));
  return statements;
}
const INSERT_CAPTURED_ROWS_SQL = `INSERT INTO captured_messages (id, email_id, project_id, from_address, to_address, subject, size, object_key, object_offset, created_at)
  SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]'), json_extract(value, '$[3]'), json_extract(value, '$[4]'),
    json_extract(value, '$[5]'), json_extract(value, '$[6]'), json_extract(value, '$[7]'), json_extract(value, '$[8]'), json_extract(value, '$[9]')
  FROM json_each(?1)`;

/** Statements for one batch: these captured messages' rows (their objects expire by the prefix's lifecycle). */
export function deleteCapturedMessages(d1: D1Database, ids: readonly string[]) {
  const db = getDb(d1);
  return chunks(ids, IN_LIST_IDS).map((part) => db.delete(capturedMessages).where(inArray(capturedMessages.id, part)));
}

/** The module's fixed SQL, by name (test/store/statements.test.ts compiles each against the schema). */
export const FIXED_SQL = { INSERT_CAPTURED_ROWS_SQL };
