import { and, eq, isNull } from "drizzle-orm";
import type { Database } from "../db/client";
import { apiKeys, projects } from "../db/schema";
import { randomHex, sha256Hex, timingSafeEqual } from "../lib/crypto";

export type KeyKind = "secret" | "public";

const PREFIX: Record<KeyKind, string> = { secret: "sk_", public: "pk_" };
/** sk_/pk_ followed by 48 hex characters: 192 bits of randomness. */
const KEY_PATTERN = /^(sk|pk)_[0-9a-f]{48}$/;

export interface GeneratedKey {
  kind: KeyKind;
  key: string;
  hash: string;
  prefix: string;
}

export async function generateApiKey(kind: KeyKind): Promise<GeneratedKey> {
  const key = PREFIX[kind] + randomHex(24);
  return { kind, key, hash: await sha256Hex(key), prefix: key.slice(0, 7) };
}

export function isWellFormedKey(key: string): boolean {
  return KEY_PATTERN.test(key);
}

export interface KeyOwner {
  projectId: string;
  kind: KeyKind;
  projectDisabled: boolean;
}

/**
 * Finds the project of a presented key. Only the SHA-256 of the key is stored
 * and looked up, so database timing reveals nothing about the key; the stored
 * hash is still compared in constant time.
 */
export async function findKeyOwner(db: Database, key: string): Promise<KeyOwner | null> {
  const hash = await sha256Hex(key);
  const rows = await db
    .select({
      projectId: apiKeys.projectId,
      kind: apiKeys.kind,
      keyHash: apiKeys.keyHash,
      disabled: projects.disabled,
    })
    .from(apiKeys)
    .innerJoin(projects, eq(projects.id, apiKeys.projectId))
    .where(and(eq(apiKeys.keyHash, hash), isNull(apiKeys.revokedAt)))
    .limit(1);
  const row = rows[0];
  if (!row || !timingSafeEqual(row.keyHash, hash)) return null;
  if (!key.startsWith(PREFIX[row.kind])) return null;
  return { projectId: row.projectId, kind: row.kind, projectDisabled: row.disabled };
}
