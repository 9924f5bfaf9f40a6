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

// Plain prepared statements (one per row, the SQL text fixed): a batch of 100
// messages built through the query builder cost more CPU than the rest of
// the capture.
const INSERT_CAPTURED_SQL = `INSERT INTO captured_messages (id, email_id, project_id, from_address, to_address, subject, size, blob_id, created_at)
  VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)`;
const INSERT_CHUNK_SQL = "INSERT INTO blob_chunks (blob_id, seq, data) VALUES (?1, ?2, ?3)";

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
      const statements = group.flatMap(({ message, id, blobId, createdAt }) => {
        const raw = message.raw;
        const chunks = [];
        for (let seq = 0, offset = 0; offset < raw.length || seq === 0; seq++, offset += BLOB_CHUNK_CHARS) {
          chunks.push(d1.prepare(INSERT_CHUNK_SQL).bind(blobId, seq, raw.slice(offset, offset + BLOB_CHUNK_CHARS)));
        }
        return [
          d1
            .prepare(INSERT_CAPTURED_SQL)
            .bind(id, message.emailId, message.projectId, message.from, message.to, message.subject, raw.length, blobId, createdAt),
          ...chunks,
        ];
      });
      await d1.batch(statements);
      for (const g of group) g.resolve({ providerMessageId: `capture-${g.id}` });
    } catch (err) {
      for (const g of group) g.reject(err);
    }
  }
}
