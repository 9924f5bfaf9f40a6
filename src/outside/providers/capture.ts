import type { Database } from "../../db/client";
import { newId } from "../../lib/ids";
import { insertCapturedMessages } from "../../store/captured";
import { putCapturedMail } from "../../store/objects/captured";
import type { EmailProvider, OutgoingMessage, ProviderResult } from "./types";

interface PendingCapture {
  message: OutgoingMessage;
  id: string;
  createdAt: number;
  resolve: (result: ProviderResult) => void;
  reject: (err: unknown) => void;
}

/**
 * Local development: keeps each message instead of sending it; see GET /dev/outbox.
 * The consumer sends several messages at once; those that arrive together are
 * written as one R2 object and one D1 batch of rows (one local commit instead of
 * one per message), so the stand-in for SES does not become the bottleneck of `npm run bench`.
 */
export class CaptureProvider implements EmailProvider {
  readonly name = "capture";
  /** No connections to wait for: a whole batch at once, so its messages share one write. */
  readonly maxConcurrency = 100;
  private pending: PendingCapture[] = [];
  private scheduled = false;
  constructor(
    private readonly db: Database,
    private readonly bucket: R2Bucket,
  ) {}

  send(message: OutgoingMessage): Promise<ProviderResult> {
    return new Promise((resolve, reject) => {
      this.pending.push({ message, id: newId(), createdAt: Date.now(), resolve, reject });
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
      // The object first: a row never names raw text that is not there.
      const { key, places } = await putCapturedMail(
        this.bucket,
        group.map((g) => g.message.raw),
        new Date(group[0].createdAt),
      );
      const statements = insertCapturedMessages(
        d1,
        group.map(({ message, id, createdAt }, i) => ({
          id,
          emailId: message.emailId,
          projectId: message.projectId,
          from: message.from,
          to: message.to,
          subject: message.subject,
          objectKey: key,
          objectOffset: places[i].offset,
          size: places[i].size,
          createdAt,
        })),
      );
      await d1.batch(statements);
      for (const g of group) g.resolve({ providerMessageId: `capture-${g.id}` });
    } catch (err) {
      for (const g of group) g.reject(err);
    }
  }
}
