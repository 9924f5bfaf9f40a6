/**
 * HMAC-SHA256 signatures for links the service puts in mail (tracking,
 * unsubscribe), keyed by the LINK_SIGNING_SECRET secret. Signatures are
 * base64url without padding; verification goes through WebCrypto's
 * `verify`, which compares in constant time.
 */

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

export function base64UrlEncode(bytes: ArrayBuffer | Uint8Array): string {
  const view = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
  let binary = "";
  for (const b of view) binary += String.fromCharCode(b);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** Decodes base64url (no padding needed); null when the input is not base64url. */
export function base64UrlDecode(input: string): Uint8Array | null {
  if (!/^[A-Za-z0-9_-]*$/.test(input) || input.length % 4 === 1) return null;
  const b64 = input.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((input.length + 3) % 4);
  try {
    const binary = atob(b64);
    const out = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
    return out;
  } catch {
    return null;
  }
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
  return base64UrlEncode(signature);
}

export async function verify(secret: string, signature: string | undefined | null, purpose: string, ...parts: string[]): Promise<boolean> {
  if (!signature) return false;
  const bytes = base64UrlDecode(signature);
  if (!bytes || bytes.length !== 32) return false;
  return crypto.subtle.verify("HMAC", await hmacKey(secret), bytes, message(purpose, parts));
}
