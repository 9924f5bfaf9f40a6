/**
 * Email Routing at the Worker's boundary: the ForwardableEmailMessage it hands the email()
 * handler (envelope from/to, the raw message as a stream with its size, the headers), and what
 * the handler answered (setReject's reason). vitest-pool-workers has no email helper, so tests
 * build this and call worker.email() as Email Routing would.
 */

export interface FakeEmailMessage extends ForwardableEmailMessage {
  /** The reason given to setReject, or null when the message was taken. */
  readonly rejected: string | null;
  /** Whether the handler read the raw stream. */
  readonly streamRead: boolean;
}

/** Headers of the raw message's header section (unfolded), as Email Routing exposes them. */
function headersOf(raw: Uint8Array): Headers {
  const head = new TextDecoder().decode(raw.subarray(0, Math.min(raw.length, 64 * 1024)));
  const end = head.search(/\r?\n\r?\n/);
  const section = (end >= 0 ? head.slice(0, end) : head).replace(/\r?\n[ \t]+/g, " ");
  const headers = new Headers();
  for (const line of section.split(/\r?\n/)) {
    const colon = line.indexOf(":");
    if (colon <= 0) continue;
    try {
      headers.append(line.slice(0, colon).trim(), line.slice(colon + 1).trim());
    } catch {
      // a header Headers refuses: Email Routing would not expose it either
    }
  }
  return headers;
}

export function emailMessage(input: { from: string; to: string; raw: string | Uint8Array; rawSize?: number }): FakeEmailMessage {
  const bytes = typeof input.raw === "string" ? new TextEncoder().encode(input.raw.replace(/\r?\n/g, "\r\n")) : input.raw;
  let rejected: string | null = null;
  let streamRead = false;
  const message = {
    from: input.from,
    to: input.to,
    headers: headersOf(bytes),
    rawSize: input.rawSize ?? bytes.length,
    canBeForwarded: true,
    get raw(): ReadableStream<Uint8Array> {
      streamRead = true;
      // In chunks, as a network stream would arrive.
      let offset = 0;
      return new ReadableStream<Uint8Array>({
        pull(controller) {
          if (offset >= bytes.length) {
            controller.close();
            return;
          }
          const chunk = bytes.slice(offset, offset + 64 * 1024);
          offset += chunk.length;
          controller.enqueue(chunk);
        },
      });
    },
    setReject(reason: string) {
      rejected = reason;
    },
    async forward() {
      throw new Error("forward is not used");
    },
    async reply() {
      throw new Error("reply is not used");
    },
    get rejected() {
      return rejected;
    },
    get streamRead() {
      return streamRead;
    },
  };
  return message as unknown as FakeEmailMessage;
}

/** A message of about `bytes` bytes: a short reply with one large attachment (base64, 76-character lines). */
export function largeMessage(input: { from: string; to: string; bytes: number; subject?: string }): Uint8Array {
  const head = [
    `From: Big Sender <${input.from}>`,
    `To: ${input.to}`,
    `Subject: ${input.subject ?? "A large file"}`,
    `Message-ID: <big-${crypto.randomUUID()}@example.com>`,
    "Date: Tue, 01 Dec 2026 10:00:00 +0000",
    "MIME-Version: 1.0",
    'Content-Type: multipart/mixed; boundary="b1"',
    "",
    "--b1",
    "Content-Type: text/plain; charset=utf-8",
    "",
    "Here is the file you asked for.",
    "",
    "--b1",
    "Content-Type: application/octet-stream",
    'Content-Disposition: attachment; filename="big.bin"',
    "Content-Transfer-Encoding: base64",
    "",
    "",
  ].join("\r\n");
  const tail = "\r\n--b1--\r\n";
  const encoder = new TextEncoder();
  const headBytes = encoder.encode(head);
  const tailBytes = encoder.encode(tail);
  const line = encoder.encode(`${"QUJD".repeat(19)}\r\n`);
  const lines = Math.max(0, Math.ceil((input.bytes - headBytes.length - tailBytes.length) / line.length));
  const out = new Uint8Array(headBytes.length + lines * line.length + tailBytes.length);
  out.set(headBytes, 0);
  for (let i = 0; i < lines; i++) out.set(line, headBytes.length + i * line.length);
  out.set(tailBytes, headBytes.length + lines * line.length);
  return out;
}
