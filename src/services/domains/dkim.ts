/**
 * DKIM keys: one RSA-2048 key pair per domain (RSASSA-PKCS1-v1_5, SHA-256),
 * made with WebCrypto so it runs in the Worker and in Node 20 (dev seed).
 * The private key is kept as PKCS#8, sealed under the DKIM_ENCRYPTION_KEY
 * secret for its domain name (lib/crypto.ts sealSecret), so a ciphertext moved
 * to another row does not decrypt.
 */

import { bytesToBase64 } from "../../lib/base64";
import { openSecret, sealSecret } from "../../lib/crypto";

export const RSA_PARAMS = {
  name: "RSASSA-PKCS1-v1_5",
  modulusLength: 2048,
  publicExponent: new Uint8Array([1, 0, 1]),
  hash: "SHA-256",
} as const;

export interface DkimKeyPair {
  /** SubjectPublicKeyInfo DER, base64: the `p=` of the DKIM record. */
  publicKey: string;
  /** PKCS#8 DER, base64 (what SES BYODKIM takes). Never stored unencrypted. */
  privateKeyPkcs8: string;
}

export async function generateDkimKeyPair(): Promise<DkimKeyPair> {
  const pair = (await crypto.subtle.generateKey(RSA_PARAMS, true, ["sign", "verify"])) as CryptoKeyPair;
  const spki = (await crypto.subtle.exportKey("spki", pair.publicKey)) as ArrayBuffer;
  const pkcs8 = (await crypto.subtle.exportKey("pkcs8", pair.privateKey)) as ArrayBuffer;
  return { publicKey: bytesToBase64(spki), privateKeyPkcs8: bytesToBase64(pkcs8) };
}

/** The DKIM TXT record's value for a public key. */
export const dkimRecordValue = (publicKey: string) => `v=DKIM1; k=rsa; p=${publicKey}`;

/** `base64(iv).base64(ciphertext)`, as the domains.dkim_private_key_encrypted column holds it (sealed for the domain: lib/crypto.ts). */
export const encryptPrivateKey = (secret: string, domain: string, privateKeyPkcs8: string): Promise<string> => sealSecret(secret, domain, privateKeyPkcs8);

/** The PKCS#8 base64 back; throws if the secret or domain does not match. */
export const decryptPrivateKey = (secret: string, domain: string, stored: string): Promise<string> => openSecret(secret, domain, stored);

/** Selector naming: `em` + year and month of creation (em202607), so a later key rotation gets a new name. */
export function dkimSelectorFor(date: Date): string {
  return `em${date.getUTCFullYear()}${String(date.getUTCMonth() + 1).padStart(2, "0")}`;
}
