import { compile } from "html-to-text";
import { createMimeMessage, Mailbox } from "mimetext/browser";
import type { Email } from "../../db/schema";
import { utf8ToBase64 } from "../../lib/base64";
import type { StoredAttachment } from "./attachments";

/** Base64 body lines of at most 76 characters (RFC 2045). */
function wrap76(base64: string): string {
  if (base64.length <= 76) return base64;
  const lines: string[] = [];
  for (let at = 0; at < base64.length; at += 76) lines.push(base64.slice(at, at + 76));
  return lines.join("\r\n");
}

/**
 * A header value as RFC 2047 encoded-words of at most 75 characters, folded
 * onto continuation lines, so long or non-ASCII subjects stay within line limits.
 */
export function encodeHeaderWords(text: string): string {
  const words: string[] = [];
  let chunk = "";
  let chunkBytes = 0;
  for (const ch of text) {
    const cp = ch.codePointAt(0)!;
    const bytes = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    // 45 bytes of UTF-8 encode to 60 base64 characters: "=?utf-8?B?" + 60 + "?=" = 72.
    if (chunkBytes + bytes > 45) {
      words.push(chunk);
      chunk = "";
      chunkBytes = 0;
    }
    chunk += ch;
    chunkBytes += bytes;
  }
  if (chunk || words.length === 0) words.push(chunk);
  return words.map((w) => `=?utf-8?B?${utf8ToBase64(w)}?=`).join("\r\n ");
}

/** What a message is built from: the email record's addresses, subject, Message-ID and custom headers. */
export type MimeEmail = Pick<Email, "fromAddress" | "fromName" | "toAddress" | "toName" | "replyTo" | "subject" | "messageId" | "headers">;

export interface MimeOptions {
  html: string;
  /** The plain-text part; made from `html` when absent. */
  text?: string;
  attachments: StoredAttachment[];
  /** Marketing mail: one-click unsubscribe (RFC 8058) plus a mailto fallback. */
  listUnsubscribe?: { url: string; mailto: string };
}

/** The plain-text alternative of an HTML body (images dropped, 78-column lines). */
export function plainTextOf(html: string): string {
  htmlToText ??= compile({ wordwrap: 78, selectors: [{ selector: "img", format: "skip" }] });
  return htmlToText(html);
}
// Compiled on first use and kept: `convert` compiled these options again for every email.
let htmlToText: ((html: string) => string) | undefined;

/** The sender's custom headers plus, on marketing mail, RFC 8058 one-click unsubscribe with a mailto fallback. */
export function messageHeaders(email: Pick<MimeEmail, "headers">, options: Pick<MimeOptions, "listUnsubscribe">): Record<string, string> {
  const headers: Record<string, string> = { ...(email.headers ?? {}) };
  if (options.listUnsubscribe) {
    headers["List-Unsubscribe"] = `<${options.listUnsubscribe.url}>, <${options.listUnsubscribe.mailto}>`;
    headers["List-Unsubscribe-Post"] = "List-Unsubscribe=One-Click";
  }
  return headers;
}

/**
 * Builds the RFC 5322 message: multipart/alternative (a plain-text part made
 * from the HTML, then the HTML), attachments in multipart/mixed, Message-ID on
 * the sender's domain, the sender's custom headers, and List-Unsubscribe
 * headers on marketing mail. All inputs were checked for CR/LF on the way in.
 */
export function buildMime(email: MimeEmail, options: MimeOptions): string {
  const msg = createMimeMessage();
  msg.setSender(email.fromName ? { name: email.fromName, addr: email.fromAddress } : email.fromAddress);
  msg.setTo(email.toName ? { name: email.toName, addr: email.toAddress } : email.toAddress);
  if (email.replyTo) msg.setHeader("Reply-To", new Mailbox(email.replyTo));
  msg.setSubject(email.subject);
  // mimetext encodes the subject as one encoded-word; long subjects need folding.
  const subjectField = (msg.headers as unknown as { fields: { name: string; dump?: (v: unknown) => string }[] }).fields.find((f) => f.name === "Subject");
  if (subjectField) subjectField.dump = (value) => encodeHeaderWords(String(value));
  msg.setHeader("Message-ID", `<${email.messageId}>`);
  for (const [name, value] of Object.entries(messageHeaders(email, options))) msg.setHeader(name, value);
  const text = options.text ?? plainTextOf(options.html);
  msg.addMessage({ contentType: "text/plain", data: wrap76(utf8ToBase64(text)), encoding: "base64" });
  msg.addMessage({ contentType: "text/html", data: wrap76(utf8ToBase64(options.html)), encoding: "base64" });
  for (const attachment of options.attachments) {
    msg.addAttachment({
      // Non-ASCII filenames as an encoded-word inside the quoted parameter, as common mail clients write them.
      filename: /^[\x20-\x7e]*$/.test(attachment.filename) ? attachment.filename : encodeHeaderWords(attachment.filename).replace(/\r\n /g, ""),
      contentType: attachment.contentType,
      data: wrap76(attachment.content),
      encoding: "base64",
    });
  }
  return msg.asRaw();
}
