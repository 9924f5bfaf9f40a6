import { runBatch, type Database } from "../../db/client";
import { capturedMessages } from "../../db/schema";
import { newId } from "../../lib/ids";
import { buildBlobInsert } from "../blobs";
import type { EmailProvider, OutgoingMessage, ProviderResult } from "./types";

interface PendingCapture {
  queries: ReturnType<typeof buildBlobInsert>["queries"];
  row: typeof capturedMessages.$inferInsert;
  resolve: (result: ProviderResult) => void;
  reject: (err: unknown) => void;
}

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
    const id = newId();
    const blob = buildBlobInsert(this.db, message.raw);
    const row = {
      id,
      emailId: message.emailId,
      projectId: message.projectId,
      fromAddress: message.from,
      toAddress: message.to,
      subject: message.subject,
      size: message.raw.length,
      blobId: blob.blobId,
      createdAt: new Date(),
    };
    return new Promise((resolve, reject) => {
      this.pending.push({ queries: blob.queries, row, resolve, reject });
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
      const inserts = [];
      // 9 columns a row: 10 rows a statement stays under D1's 100 bound parameters.
      for (let i = 0; i < group.length; i += 10) inserts.push(this.db.insert(capturedMessages).values(group.slice(i, i + 10).map((g) => g.row)));
      await runBatch(this.db, [...inserts, ...group.flatMap((g) => g.queries)]);
      for (const g of group) g.resolve({ providerMessageId: `capture-${g.row.id}` });
    } catch (err) {
      for (const g of group) g.reject(err);
    }
  }
}
