import PostalMime, { type Email } from "postal-mime";
import { compile } from "html-to-text";
import type { ParsedInput } from "../../store/inbound";
import { stripReply } from "./strip";

/**
 * Reading a received message (postal-mime) into what its inbound_messages row keeps. A message
 * up to PARSE_CAP_BYTES is parsed whole; a larger one (up to INBOUND_MAX_BYTES, 25 MiB at most)
 * only from its first HEAD_BYTES, for its headers and the text at its start: a full parse of
 * 25 MiB takes over 100 MiB of memory, near the Worker's 128 MB (docs/api.md "Inbound email").
 */

/** Largest message parsed whole (its attachments listed and downloadable one by one). */
export const PARSE_CAP_BYTES = 8 * 1024 * 1024;
/** What is read of a larger message: its headers and the start of its body. */
export const HEAD_BYTES = 256 * 1024;
/** Caps of what a row keeps (UTF-8 bytes; counted in QUOTA_STORED_BYTES). */
export const MAX_TEXT_BYTES = 64 * 1024;
export const MAX_STRIPPED_BYTES = 16 * 1024;
/** Attachments listed per message (metadata only). */
export const MAX_ATTACHMENTS = 50;
/** References ids kept (the last ones: the nearest ancestors). */
export const MAX_REFERENCES = 100;

export const TOO_LARGE_TO_PARSE = `Larger than the ${PARSE_CAP_BYTES / 1024 / 1024} MiB parse cap: headers and the text at its start only, no attachments listed; the raw message has everything`;

const PARSER_LIMITS = { maxNestingDepth: 50, maxHeadersSize: 1024 * 1024, maxRfc822NestingDepth: 3 } as const;

/** What a parse finds: the row's parsed fields (store/inbound.ts ParsedInput), and whether only the message's start was read. */
export type ParsedMessage = Omit<ParsedInput, "id" | "projectId" | "emailId" | "contactId" | "match" | "error" | "at"> & {
  /** Set when only the message's start was read. */
  partial: boolean;
};

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** `text` cut to at most `max` UTF-8 bytes, never inside a character. */
export function capBytes(text: string, max: number): string {
  if (text.length * 3 <= max) return text;
  const bytes = encoder.encode(text);
  if (bytes.length <= max) return text;
  let end = max;
  // Back off continuation bytes (10xxxxxx) so the cut falls between characters.
  while (end > 0 && (bytes[end] & 0xc0) === 0x80) end--;
  return decoder.decode(bytes.subarray(0, end));
}

/** The message ids of a Message-ID, In-Reply-To or References header, with their brackets. */
export function messageIdsOf(header: string | undefined | null): string[] {
  if (!header) return [];
  return [...header.matchAll(/<([^<>\s]{1,500})>/g)].map((m) => `<${m[1]}>`);
}

let htmlToText: ((html: string) => string) | undefined;
const textOfHtml = (html: string) => {
  htmlToText ??= compile({ wordwrap: false, selectors: [{ selector: "img", format: "skip" }] });
  return htmlToText(html);
};

const header = (email: Email, key: string) => email.headers.find((h) => h.key === key)?.value.trim();

/**
 * An auto-reply, out-of-office or delivery report (RFC 3834 Auto-Submitted other than "no";
 * Precedence bulk, junk, list or auto_reply; X-Autoreply / X-Autorespond; an empty envelope
 * sender, which DSNs and MDNs carry; a multipart/report or message/delivery-status part).
 */
export function isAutoReply(email: Email, envelopeFrom: string): boolean {
  const submitted = header(email, "auto-submitted")?.toLowerCase();
  if (submitted && submitted.split(";")[0].trim() !== "no") return true;
  const precedence = header(email, "precedence")?.toLowerCase();
  if (precedence && ["bulk", "junk", "list", "auto_reply"].includes(precedence)) return true;
  if (["x-autoreply", "x-autorespond", "x-autoresponder"].some((key) => header(email, key) !== undefined)) return true;
  const sender = envelopeFrom.trim();
  if (sender === "" || sender === "<>") return true;
  if (/^multipart\/report\b/i.test(header(email, "content-type") ?? "")) return true;
  return email.attachments.some((a) => a.mimeType === "message/delivery-status" || a.mimeType === "message/disposition-notification");
}

const sizeOf = (content: ArrayBuffer | Uint8Array | string) => (typeof content === "string" ? encoder.encode(content).length : content.byteLength);

/** Parses the raw bytes (`partial`: only the message's start was read). */
export async function parseMessage(raw: ArrayBuffer | Uint8Array, envelopeFrom: string, partial = false): Promise<ParsedMessage> {
  const email = await PostalMime.parse(raw, PARSER_LIMITS);
  const from = email.from && "address" in email.from && email.from.address ? email.from : undefined;
  const text = email.text?.trim() ? email.text : email.html ? textOfHtml(email.html) : "";
  const references = messageIdsOf(email.references).slice(-MAX_REFERENCES);
  return {
    fromAddress: from?.address ? from.address.trim().toLowerCase().slice(0, 320) : null,
    fromName: from?.name ? from.name.slice(0, 200) : null,
    subject: email.subject ? capBytes(email.subject, 2000) : null,
    messageId: messageIdsOf(email.messageId)[0] ?? null,
    inReplyTo: messageIdsOf(email.inReplyTo)[0] ?? null,
    references,
    autoReply: isAutoReply(email, envelopeFrom),
    text: text ? capBytes(text, MAX_TEXT_BYTES) : null,
    strippedText: text ? capBytes(stripReply(text), MAX_STRIPPED_BYTES) : null,
    attachments: partial
      ? []
      : email.attachments
          .slice(0, MAX_ATTACHMENTS)
          .map((a) => ({ filename: a.filename ? a.filename.slice(0, 255) : null, contentType: a.mimeType, size: sizeOf(a.content) })),
    partial,
  };
}

/** One attachment of a message parsed whole (GET /inbound/{id}/attachments/{n}), or null when it has no such attachment. */
export async function attachmentOf(
  raw: ArrayBuffer | Uint8Array,
  n: number,
): Promise<{ filename: string | null; contentType: string; content: Uint8Array<ArrayBuffer> } | null> {
  const email = await PostalMime.parse(raw, PARSER_LIMITS);
  if (n >= Math.min(email.attachments.length, MAX_ATTACHMENTS)) return null;
  const a = email.attachments[n];
  const bytes = typeof a.content === "string" ? encoder.encode(a.content) : a.content instanceof Uint8Array ? a.content : new Uint8Array(a.content);
  // A copy of its own buffer (a Response body takes an ArrayBuffer-backed view).
  const content = new Uint8Array(bytes.byteLength);
  content.set(bytes);
  return { filename: a.filename, contentType: a.mimeType, content };
}

/** The HTML part of a message parsed whole (GET /inbound/{id}/html), or null when it has none. */
export async function htmlOf(raw: ArrayBuffer | Uint8Array): Promise<string | null> {
  const email = await PostalMime.parse(raw, PARSER_LIMITS);
  return email.html ?? null;
}
