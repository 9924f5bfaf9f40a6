import { Buffer } from "node:buffer";
/**
 * Base64 and base64url for bytes and UTF-8 text. atob/btoa work on "binary
 * strings"; these convert to and from bytes in chunks so megabyte inputs
 * (attachments, raw mail) don't overflow the argument list.
 */

export function bytesToBase64(bytes: ArrayBuffer | Uint8Array): string {
  const view = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
  // The runtime's Buffer (nodejs_compat) encodes natively: every email's parts go through here.
  return Buffer.from(view.buffer, view.byteOffset, view.byteLength).toString("base64");
}

/** Decodes base64 (whitespace allowed); throws on anything else. */
export function base64ToBytes(text: string): Uint8Array {
  return Uint8Array.from(atob(text.replace(/\s+/g, "")), (ch) => ch.charCodeAt(0));
}

export const utf8ToBase64 = (text: string): string => Buffer.from(text, "utf8").toString("base64");

export const base64ToUtf8 = (text: string): string => new TextDecoder().decode(base64ToBytes(text));

export const toBase64Url = (base64: string): string => base64.replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");

/** base64url (padding optional) to bytes; null when the input is not base64url. */
export function base64UrlToBytes(input: string): Uint8Array | null {
  if (!/^[A-Za-z0-9_-]*$/.test(input) || input.length % 4 === 1) return null;
  try {
    return base64ToBytes(input.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((input.length + 3) % 4));
  } catch {
    return null;
  }
}
