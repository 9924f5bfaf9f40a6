import type { Database } from "../../db/client";
import { capturedMessages } from "../../db/schema";
import { newId } from "../../lib/ids";
import { buildBlobInsert } from "../blobs";
import type { EmailProvider, OutgoingMessage } from "./types";

/** Local development: keeps each message in D1 instead of sending it; see GET /dev/outbox. */
export class CaptureProvider implements EmailProvider {
  readonly name = "capture";
  constructor(private readonly db: Database) {}

  async send(message: OutgoingMessage) {
    const id = newId();
    const blob = buildBlobInsert(this.db, message.raw);
    await this.db.batch([
      this.db.insert(capturedMessages).values({
        id,
        emailId: message.emailId,
        projectId: message.projectId,
        fromAddress: message.from,
        toAddress: message.to,
        subject: message.subject,
        size: message.raw.length,
        blobId: blob.blobId,
        createdAt: new Date(),
      }),
      ...blob.queries,
    ]);
    return { providerMessageId: `capture-${id}` };
  }
}
