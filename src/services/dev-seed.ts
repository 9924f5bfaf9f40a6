import type { Database } from "../db/client";
import { upsertSeededDomain } from "../store/domains";
import { newId } from "../lib/ids";
import { dkimSelectorFor, encryptPrivateKey, generateDkimKeyPair } from "./domains/dkim";
import { domainRecordConfig, expectedRecords } from "./domains/records";

export const DEV_DOMAIN = "example.com";

/**
 * What `npm run dev` adds to the local dev project besides its keys (run only
 * by `npm run project -- ensure-dev`, never reachable through the API):
 * one sending domain, `example.com`, already VERIFIED, with a real DKIM key
 * encrypted under the local `DKIM_ENCRYPTION_KEY` (from .dev.vars), so the
 * README's send example works offline. It is never re-checked by the cron
 * (no next check), since example.com's real DNS would not match. If an older
 * dev project holds example.com, the domain moves to the new one.
 */
export async function buildDevSeed(db: Database, projectId: string, dkimEncryptionKey: string) {
  const now = new Date();
  const keys = await generateDkimKeyPair();
  const selector = dkimSelectorFor(now);
  const records = expectedRecords(domainRecordConfig({}), DEV_DOMAIN, selector, keys.publicKey).map((r) => ({
    ...r,
    status: "VERIFIED" as const,
    detail: "Local development seed: not looked up in DNS",
  }));
  const values = {
    projectId,
    status: "VERIFIED" as const,
    dkimSelector: selector,
    dkimPublicKey: keys.publicKey,
    dkimPrivateKeyEncrypted: await encryptPrivateKey(dkimEncryptionKey, DEV_DOMAIN, keys.privateKeyPkcs8),
    records,
    checkAttempts: 0,
    lastCheckedAt: now,
    nextCheckAt: null,
    verifiedAt: now,
    updatedAt: now,
  };
  const query = upsertSeededDomain(db.$client, { id: newId(), name: DEV_DOMAIN, createdAt: now }, values);
  return {
    queries: [query] as { toSQL(): { sql: string; params: unknown[] } }[],
    info: { domain: DEV_DOMAIN, from: `hello@${DEV_DOMAIN}` } as Record<string, unknown>,
  };
}
