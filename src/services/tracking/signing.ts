/**
 * HMAC-SHA256 signatures for links the service puts in mail (tracking,
 * unsubscribe), keyed by the LINK_SIGNING_SECRET secret. Signatures are
 * base64url without padding; verification goes through WebCrypto's
 * `verify`, which compares in constant time.
 */

import { base64UrlToBytes, bytesToBase64, toBase64Url } from "../../lib/base64";

const encoder = new TextEncoder();
const keyCache = new Map<string, Promise<CryptoKey>>();

function hmacKey(secret: string): Promise<CryptoKey> {
  let key = keyCache.get(secret);
  if (!key) {
    key = crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign", "verify"]);
    keyCache.set(secret, key);
  }
  return key;
}

/**
 * The signed message: a purpose label and length-prefixed parts, so that no
 * two different (purpose, parts) tuples produce the same bytes.
 */
function message(purpose: string, parts: string[]): Uint8Array {
  return encoder.encode([purpose, ...parts.map((p) => `${p.length}:${p}`)].join("\n"));
}

export async function sign(secret: string, purpose: string, ...parts: string[]): Promise<string> {
  const signature = await crypto.subtle.sign("HMAC", await hmacKey(secret), message(purpose, parts));
  return toBase64Url(bytesToBase64(signature));
}

export async function verify(secret: string, signature: string | undefined | null, purpose: string, ...parts: string[]): Promise<boolean> {
  if (!signature) return false;
  const bytes = base64UrlToBytes(signature);
  if (!bytes || bytes.length !== 32) return false;
  return crypto.subtle.verify("HMAC", await hmacKey(secret), bytes, message(purpose, parts));
}
