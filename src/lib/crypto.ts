import { base64ToBytes, bytesToBase64 } from "./base64";

const encoder = new TextEncoder();

export function toHex(bytes: ArrayBuffer | Uint8Array): string {
  const view = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
  let out = "";
  for (const b of view) out += b.toString(16).padStart(2, "0");
  return out;
}

export async function sha256Hex(input: string): Promise<string> {
  return toHex(await crypto.subtle.digest("SHA-256", encoder.encode(input)));
}

export function randomHex(bytes: number): string {
  return toHex(crypto.getRandomValues(new Uint8Array(bytes)));
}

/** Compares two strings in time that depends only on their length. */
export function timingSafeEqual(a: string, b: string): boolean {
  const left = encoder.encode(a);
  const right = encoder.encode(b);
  if (left.length !== right.length) return false;
  let diff = 0;
  for (let i = 0; i < left.length; i++) diff |= left[i] ^ right[i];
  return diff === 0;
}

/**
 * Sealed secrets (DKIM private keys, webhook signing secrets): AES-256-GCM
 * under a key derived (HKDF-SHA-256) from `key` (DKIM_ENCRYPTION_KEY), with
 * `context` bound in as additional data, so a sealed value moved to another
 * row (another domain, another endpoint) does not open. Stored as
 * `base64(iv).base64(ciphertext)`. The derivation's salt and info are those of
 * the first sealed values (DKIM keys): every stored value opens as before.
 */
async function sealingKey(key: string): Promise<CryptoKey> {
  const material = await crypto.subtle.importKey("raw", encoder.encode(key), "HKDF", false, ["deriveKey"]);
  return crypto.subtle.deriveKey(
    { name: "HKDF", hash: "SHA-256", salt: encoder.encode("edge-mail/dkim"), info: encoder.encode("dkim-private-key v1") },
    material,
    { name: "AES-GCM", length: 256 },
    false,
    ["encrypt", "decrypt"],
  );
}

/** Seals `value` for `context` (e.g. a domain name, `webhook-endpoint:<id>`). */
export async function sealSecret(key: string, context: string, value: string): Promise<string> {
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const ciphertext = await crypto.subtle.encrypt(
    { name: "AES-GCM", iv, additionalData: encoder.encode(context) },
    await sealingKey(key),
    encoder.encode(value),
  );
  return `${bytesToBase64(iv)}.${bytesToBase64(ciphertext)}`;
}

/** The sealed value back; throws if `key` or `context` does not match. */
export async function openSecret(key: string, context: string, sealed: string): Promise<string> {
  const [iv, ciphertext] = sealed.split(".");
  const plain = await crypto.subtle.decrypt(
    { name: "AES-GCM", iv: base64ToBytes(iv), additionalData: encoder.encode(context) },
    await sealingKey(key),
    base64ToBytes(ciphertext),
  );
  return new TextDecoder().decode(plain);
}
