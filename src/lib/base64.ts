/**
 * Base64 and base64url for bytes and UTF-8 text. atob/btoa work on "binary
 * strings"; these convert to and from bytes in chunks so megabyte inputs
 * (attachments, raw mail) don't overflow the argument list.
 */

export function bytesToBase64(bytes: ArrayBuffer | Uint8Array): string {
  const view = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
  let binary = "";
  for (let i = 0; i < view.length; i += 0x8000) binary += String.fromCharCode(...view.subarray(i, i + 0x8000));
  return btoa(binary);
}

/** Decodes base64 (whitespace allowed); throws on anything else. */
export function base64ToBytes(text: string): Uint8Array {
  return Uint8Array.from(atob(text.replace(/\s+/g, "")), (ch) => ch.charCodeAt(0));
}

export const utf8ToBase64 = (text: string): string => bytesToBase64(new TextEncoder().encode(text));

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
