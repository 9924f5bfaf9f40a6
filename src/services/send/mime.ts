import { compile } from "html-to-text";
import { createMimeMessage, Mailbox } from "mimetext/browser";
import type { Email } from "../../db/schema";
import { utf8ToBase64 } from "../../lib/base64";
import { foldHeaderValue } from "../../schemas/headers";
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
 * onto continuation lines, so long or non-ASCII subjects stay within line
 * limits: every line within 78 octets when `prefix` (what precedes the value
 * on its first line, such as "Subject: ") leaves room for a word.
 */
export function encodeHeaderWords(text: string, prefix = 0): string {
  const words: string[] = [];
  let chunk = "";
  let chunkBytes = 0;
  // 45 bytes of UTF-8 encode to 60 base64 characters: " =?utf-8?B?" + 60 + "?=" = 73. The first word gets what the prefix leaves.
  let budget = Math.min(45, Math.max(3, Math.floor((78 - prefix - 12) / 4) * 3));
  for (const ch of text) {
    const cp = ch.codePointAt(0)!;
    const bytes = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    if (chunk && chunkBytes + bytes > budget) {
      words.push(chunk);
      chunk = "";
      chunkBytes = 0;
      budget = 45;
    }
    chunk += ch;
    chunkBytes += bytes;
  }
  if (chunk || words.length === 0) words.push(chunk);
  return words.map((w) => `=?utf-8?B?${utf8ToBase64(w)}?=`).join("\r\n ");
}

/**
 * A custom header's value as written after `Name: `: folded at its whitespace,
 * or, when a word is too long for a 998-octet line, as encoded-words. The API
 * lets such a word only into unstructured (X-) fields, where encoded-words are
 * allowed (schemas/headers.ts); the fallback keeps any older record within the limit too.
 */
export function headerFieldValue(name: string, value: string): string {
  return foldHeaderValue(name, value) ?? encodeHeaderWords(value, name.length + 2);
}

/** Characters RFC 2231 leaves as they are in a parameter value: ASCII except space, controls, "*", "'", "%" and tspecials. */
const ATTRIBUTE_CHAR = /^[A-Za-z0-9!#$&+.^_`|~-]$/;
const utf8 = new TextEncoder();

/**
 * One MIME parameter (RFC 2045, RFC 2231) as the sections to write: `name="value"`
 * for printable ASCII; otherwise UTF-8, percent-encoded, as `name*=utf-8''...`, split
 * into `name*0*=utf-8''...`, `name*1*=...` sections (between characters) when one
 * line would pass 78 octets. Never an encoded-word inside quotes (RFC 2047 section 5).
 */
export function mimeParameterSections(attribute: string, value: string): string[] {
  if (/^[\x20-\x7e]*$/.test(value) && !/["\\]/.test(value)) return [`${attribute}="${value}"`];
  const encoded = Array.from(value, (ch) =>
    ATTRIBUTE_CHAR.test(ch) ? ch : Array.from(utf8.encode(ch), (byte) => `%${byte.toString(16).toUpperCase().padStart(2, "0")}`).join(""),
  );
  const whole = `${attribute}*=utf-8''${encoded.join("")}`;
  if (whole.length + 2 <= 78) return [whole];
  // " name*NN*=utf-8''" + section + ";" within 78 octets.
  const room = 78 - (attribute.length + 15);
  const sections: string[] = [];
  let section = "";
  for (const e of encoded) {
    if (section && section.length + e.length > room) {
      sections.push(section);
      section = "";
    }
    section += e;
  }
  sections.push(section);
  return sections.map((text, i) => `${attribute}*${i}*=${i === 0 ? "utf-8''" : ""}${text}`);
}

/** `value; param; param` for a header named `name`: on one line when it fits in 78 octets, else one parameter section per folded line. */
function withParameters(name: string, value: string, params: string[]): string {
  const line = [value, ...params].join("; ");
  return name.length + 2 + line.length <= 78 ? line : [value, ...params].join(";\r\n ");
}

type MailboxValue = { name: string; addr: string; dump(): string };

/**
 * A mailbox with its display name as encoded-words of at most 75 characters,
 * folded (mimetext writes one word of any length), the address on the last
 * word's line while that stays within 78 octets.
 */
function dumpMailbox(mailbox: MailboxValue, prefix: number): string {
  if (mailbox.name.length === 0) return mailbox.dump();
  const words = encodeHeaderWords(mailbox.name, prefix);
  const lastLine = words.includes("\n") ? words.length - words.lastIndexOf("\n") - 1 : prefix + words.length;
  return `${words}${lastLine + mailbox.addr.length + 3 <= 78 ? " " : "\r\n "}<${mailbox.addr}>`;
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
  /** Mail aimed at a topic: its List-Id (RFC 2919), `<key>.<project id>.<host>`. */
  listId?: string;
}

/** The plain-text alternative of an HTML body (images dropped, 78-column lines). */
export function plainTextOf(html: string): string {
  htmlToText ??= compile({ wordwrap: 78, selectors: [{ selector: "img", format: "skip" }] });
  return htmlToText(html);
}
// Compiled on first use and kept: `convert` compiled these options again for every email.
let htmlToText: ((html: string) => string) | undefined;

/** The sender's custom headers plus, on marketing mail, RFC 8058 one-click unsubscribe with a mailto fallback. */
export function messageHeaders(email: Pick<MimeEmail, "headers">, options: Pick<MimeOptions, "listUnsubscribe" | "listId">): Record<string, string> {
  const headers: Record<string, string> = { ...(email.headers ?? {}) };
  if (options.listId) headers["List-Id"] = `<${options.listId}>`;
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
  // mimetext writes the subject and each display name as one encoded-word of any length: ours are
  // words of at most 75 characters on folded lines, so every line stays within 998 octets.
  const fields = (msg.headers as unknown as { fields: { name: string; dump?: (v: unknown) => string }[] }).fields;
  for (const field of fields) {
    const prefix = field.name.length + 2;
    if (field.name === "Subject") field.dump = (value) => encodeHeaderWords(String(value), prefix);
    if (field.name === "From" || field.name === "Reply-To" || field.name === "To") {
      field.dump = (value) => (Array.isArray(value) ? value : [value]).map((m: MailboxValue, i) => dumpMailbox(m, i === 0 ? prefix : 1)).join(",\r\n ");
    }
  }
  msg.setHeader("Message-ID", `<${email.messageId}>`);
  for (const [name, value] of Object.entries(messageHeaders(email, options))) msg.setHeader(name, headerFieldValue(name, value));
  const text = options.text ?? plainTextOf(options.html);
  msg.addMessage({ contentType: "text/plain", data: wrap76(utf8ToBase64(text)), encoding: "base64" });
  msg.addMessage({ contentType: "text/html", data: wrap76(utf8ToBase64(options.html)), encoding: "base64" });
  for (const attachment of options.attachments) {
    const part = msg.addAttachment({ filename: "", contentType: attachment.contentType, data: wrap76(attachment.content), encoding: "base64" });
    // The file name as an RFC 2231 parameter, in both places readers look for it.
    part.setHeader("Content-Type", withParameters("Content-Type", attachment.contentType, mimeParameterSections("name", attachment.filename)));
    part.setHeader("Content-Disposition", withParameters("Content-Disposition", "attachment", mimeParameterSections("filename", attachment.filename)));
    // mimetext calls a part inline when its Content-Disposition merely contains "inline" (a file named
    // "inline.pdf"), which would write it twice; every part here is an attachment.
    part.isInlineAttachment = () => false;
  }
  return msg.asRaw();
}
