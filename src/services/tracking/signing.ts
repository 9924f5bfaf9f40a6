/**
 * HMAC-SHA256 signatures for links the service puts in mail (tracking,
 * unsubscribe), keyed by the LINK_SIGNING_SECRET secret. Signatures are
 * base64url without padding; verification goes through WebCrypto's
 * `verify`, which compares in constant time.
 */

import { base64UrlToBytes, bytesToBase64, toBase64Url } from "../../lib/base64";
import { ApiError } from "../../lib/errors";
import { TtlCache } from "../../lib/ttl-cache";

const encoder = new TextEncoder();
/** Imported keys by secret: the current and the previous one, a few more across a rotation. */
const keyCache = new TtlCache<string, Promise<CryptoKey>>({ max: 4, ttlMs: Number.POSITIVE_INFINITY });

/** An HMAC-SHA256 key shorter than its 32-byte output can be guessed more cheaply than a signature can. */
export const MIN_SIGNING_SECRET_BYTES = 32;

function hmacKey(secret: string): Promise<CryptoKey> {
  if (encoder.encode(secret).length < MIN_SIGNING_SECRET_BYTES) {
    const message = `Server misconfigured: LINK_SIGNING_SECRET (and LINK_SIGNING_SECRET_PREVIOUS, when set) must be at least ${MIN_SIGNING_SECRET_BYTES} bytes`;
    console.error(message);
    throw new ApiError("INTERNAL_ERROR", message, {
      suggestion: "An operator must run `openssl rand -base64 32 | npx wrangler secret put LINK_SIGNING_SECRET`.",
    });
  }
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

/**
 * True when `signature` was made with one of `secrets` (the current secret,
 * then the previous one during a rotation, so links in mail already sent
 * keep working until the previous secret is removed).
 */
export async function verify(secrets: string | readonly string[], signature: string | undefined | null, purpose: string, ...parts: string[]): Promise<boolean> {
  if (!signature) return false;
  const bytes = base64UrlToBytes(signature);
  if (bytes?.length !== 32) return false;
  const signed = message(purpose, parts);
  for (const secret of typeof secrets === "string" ? [secrets] : secrets) {
    if (await crypto.subtle.verify("HMAC", await hmacKey(secret), bytes, signed)) return true;
  }
  return false;
}

/** The first `bytes` bytes of the HMAC as lowercase hex: for signatures that must survive case folding (an address's local part). */
export async function signHex(secret: string, bytes: number, purpose: string, ...parts: string[]): Promise<string> {
  const signature = await crypto.subtle.sign("HMAC", await hmacKey(secret), message(purpose, parts));
  return [...new Uint8Array(signature, 0, bytes)].map((b) => b.toString(16).padStart(2, "0")).join("");
}
