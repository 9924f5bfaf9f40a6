import type { Database } from "../../db/client";
import { newId } from "../../lib/ids";
import { BLOB_CHUNK_CHARS } from "../blobs";
import type { EmailProvider, OutgoingMessage, ProviderResult } from "./types";

interface PendingCapture {
  message: OutgoingMessage;
  id: string;
  blobId: string;
  createdAt: number;
  resolve: (result: ProviderResult) => void;
  reject: (err: unknown) => void;
}

// Fixed SQL: the messages of one flush go in as rows of one JSON parameter
// (json_each), two statements per ~800 KB of messages rather than two per
// message. A message too large for that goes alone, its raw text in
// BLOB_CHUNK_CHARS chunks of its own.
const INSERT_CAPTURED_ROWS_SQL = `INSERT INTO captured_messages (id, email_id, project_id, from_address, to_address, subject, size, blob_id, created_at)
  SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]'), json_extract(value, '$[3]'),
    json_extract(value, '$[4]'), json_extract(value, '$[5]'), json_extract(value, '$[6]'), json_extract(value, '$[7]'), json_extract(value, '$[8]')
  FROM json_each(?1)`;
const INSERT_CHUNK_ROWS_SQL = `INSERT INTO blob_chunks (blob_id, seq, data)
  SELECT json_extract(value, '$[0]'), 0, json_extract(value, '$[1]') FROM json_each(?1)`;
const INSERT_CHUNK_SQL = "INSERT INTO blob_chunks (blob_id, seq, data) VALUES (?1, ?2, ?3)";
/** Characters of message JSON per pair of statements, well under D1's 2 MB per value. */
const MAX_ROWS_JSON_CHARS = 800_000;

/**
 * Local development: keeps each message in D1 instead of sending it; see GET /dev/outbox.
 * The consumer sends several messages at once; those that arrive together are
 * written in one D1 batch (one local commit instead of one per message), so the
 * stand-in for SES does not become the bottleneck of `npm run bench`.
 */
export class CaptureProvider implements EmailProvider {
  readonly name = "capture";
  /** No connections to wait for: a whole batch at once, so its messages share one write. */
  readonly maxConcurrency = 100;
  private pending: PendingCapture[] = [];
  private scheduled = false;
  constructor(private readonly db: Database) {}

  send(message: OutgoingMessage): Promise<ProviderResult> {
    return new Promise((resolve, reject) => {
      this.pending.push({ message, id: newId(), blobId: newId(), createdAt: Date.now(), resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        // Whatever else is sent before the event loop turns joins this write.
        setTimeout(() => void this.flush(), 0);
      }
    });
  }

  private async flush() {
    this.scheduled = false;
    const group = this.pending.splice(0);
    try {
      const d1 = this.db.$client;
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
      for (const { message, id, blobId, createdAt } of group) {
        const raw = message.raw;
        const row = JSON.stringify([id, message.emailId, message.projectId, message.from, message.to, message.subject, raw.length, blobId, createdAt]);
        // JSON escaping at most doubles MIME text (CRLF, quotes); anything near the budget goes alone, unescaped.
        const chunk = raw.length <= MAX_ROWS_JSON_CHARS / 4 ? JSON.stringify([blobId, raw]) : null;
        if (chunk === null || row.length + chunk.length > MAX_ROWS_JSON_CHARS) {
          statements.push(d1.prepare(INSERT_CAPTURED_ROWS_SQL).bind(`[${row}]`));
          for (let seq = 0, offset = 0; offset < raw.length || seq === 0; seq++, offset += BLOB_CHUNK_CHARS) {
            statements.push(d1.prepare(INSERT_CHUNK_SQL).bind(blobId, seq, raw.slice(offset, offset + BLOB_CHUNK_CHARS)));
          }
          continue;
        }
        if (chars + row.length + chunk.length > MAX_ROWS_JSON_CHARS) flushRows();
        messageRows.push(row);
        chunkRows.push(chunk);
        chars += row.length + chunk.length + 2;
      }
      flushRows();
      await d1.batch(statements);
      for (const g of group) g.resolve({ providerMessageId: `capture-${g.id}` });
    } catch (err) {
      for (const g of group) g.reject(err);
    }
  }
}
