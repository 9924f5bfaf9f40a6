import { base64ToBytes, bytesToBase64 } from "./base64";

/**
 * Standard Webhooks (standardwebhooks.com) signing, shared by workflow WEBHOOK
 * steps and event webhooks: `webhook-signature` is `v1,` + base64(HMAC-SHA256
 * keyed with the secret's decoded bytes, of "<id>.<timestamp>.<body>"). With
 * several secrets (a rotation's overlap) the header lists one `v1,` signature
 * per secret, separated by spaces; a receiver accepts any that verifies.
 */

/** `whsec_` + base64 of 32 random bytes (the Standard Webhooks secret format). */
export function newWebhookSecret(): string {
  return `whsec_${bytesToBase64(crypto.getRandomValues(new Uint8Array(32)))}`;
}

async function signature(secret: string, content: Uint8Array): Promise<string> {
  const key = await crypto.subtle.importKey("raw", base64ToBytes(secret.replace(/^whsec_/, "")), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  return `v1,${bytesToBase64(await crypto.subtle.sign("HMAC", key, content))}`;
}

/** The Standard Webhooks headers for one call, signed with each of `secrets` (the current one first). */
export async function signWebhook(secrets: string | readonly string[], id: string, timestampSeconds: number, body: string) {
  const content = new TextEncoder().encode(`${id}.${timestampSeconds}.${body}`);
  const list = typeof secrets === "string" ? [secrets] : secrets;
  const signatures = await Promise.all(list.map((secret) => signature(secret, content)));
  return {
    "webhook-id": id,
    "webhook-timestamp": String(timestampSeconds),
    "webhook-signature": signatures.join(" "),
  };
}
