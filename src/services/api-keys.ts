import { type Clock, systemClock } from "../lib/caches";
import { TtlCache } from "../lib/ttl-cache";
import { and, eq, isNull } from "drizzle-orm";
import type { Database } from "../db/client";
import { apiKeys, projects, projectShards } from "../db/schema";
import { randomHex, sha256Hex, timingSafeEqual, toHex } from "../lib/crypto";

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
  /** The project's double opt-in setting (a pk_ /v1/track reads its template only when on). */
  doubleOptIn: boolean;
  /** The reputation breaker's reason while the project's sending is paused, else null. */
  sendingPaused: string | null;
  /** The data shard of the project (project_shards; none: 0), read with the key: no lookup of its own per request. */
  shard: number;
  /** The shard a move is copying the project to, else null (src/db/shards.ts ShardRoute). */
  movingTo: number | null;
}

/**
 * Finds the project of a presented key. Only the SHA-256 of the key is stored
 * and looked up, so database timing reveals nothing about the key; the stored
 * hash is still compared in constant time.
 */
export async function findKeyOwner(db: Database, key: string, hash?: string): Promise<KeyOwner | null> {
  hash ??= await sha256Hex(key);
  const rows = await db
    .select({
      projectId: apiKeys.projectId,
      kind: apiKeys.kind,
      keyHash: apiKeys.keyHash,
      disabled: projects.disabled,
      doubleOptIn: projects.doubleOptIn,
      pausedAt: projects.sendingPausedAt,
      pausedReason: projects.sendingPausedReason,
      shard: projectShards.shard,
      movingTo: projectShards.movingTo,
    })
    .from(apiKeys)
    .innerJoin(projects, eq(projects.id, apiKeys.projectId))
    .leftJoin(projectShards, eq(projectShards.projectId, apiKeys.projectId))
    .where(and(eq(apiKeys.keyHash, hash), isNull(apiKeys.revokedAt)))
    .limit(1);
  const row = rows[0];
  if (!row || !timingSafeEqual(row.keyHash, hash)) return null;
  if (!key.startsWith(PREFIX[row.kind])) return null;
  return {
    projectId: row.projectId,
    kind: row.kind,
    projectDisabled: row.disabled,
    doubleOptIn: row.doubleOptIn,
    sendingPaused: row.pausedAt ? (row.pausedReason ?? "bounce or complaint rate too high") : null,
    shard: row.shard ?? 0,
    movingTo: row.movingTo ?? null,
  };
}

/**
 * How long a key lookup is reused in an isolate: a rotated (revoked) key, a
 * disabled or re-enabled project, a paused or resumed one, takes effect within this time (plus the
 * duration of the lookup itself). docs/security.md states the bound.
 */
export const KEY_CACHE_TTL_MS = 5_000;
/** Keys remembered per isolate, known and unknown ones each (least recently used dropped first). */
export const KEY_CACHE_MAX_ENTRIES = 1_000;

/** A random HMAC key made once per isolate, never stored anywhere. */
let cacheKeySecret: Promise<CryptoKey> | undefined;

/**
 * What the key caches are keyed by: HMAC-SHA-256 of the key under the
 * isolate's random secret, so no usable API key stays in the isolate's memory
 * after its request (expired entries linger until evicted). About a
 * microsecond per request; only the isolate can compute it.
 */
async function cacheKeyOf(key: string): Promise<string> {
  cacheKeySecret ??= crypto.subtle.generateKey({ name: "HMAC", hash: "SHA-256" }, false, ["sign"]) as Promise<CryptoKey>;
  return toHex(await crypto.subtle.sign("HMAC", await cacheKeySecret, new TextEncoder().encode(key)));
}

/** `beforeQuery` runs before a key that no cache knows is looked up in D1 (and may throw to refuse it). */
export type KeyLookup = (db: Database, key: string, beforeQuery?: () => Promise<void>) => Promise<KeyOwner | null>;

/**
 * findKeyOwner behind a short-lived in-isolate cache of key -> owner, so a
 * warm isolate authenticates without a D1 round trip (the SHA-256 is only
 * needed to look it up in D1, which stores hashes only). The caches are keyed
 * by an HMAC of the key under a per-isolate secret (cacheKeyOf), never by the
 * key itself. Unknown keys are cached
 * too, in a cache of their own, so a client repeating a bad key costs one
 * lookup per TTL and a flood of distinct bad keys can only evict other unknown
 * keys, never the known ones. Each request looks an uncached key up itself:
 * requests never wait on another request's lookup (a Workers pitfall: that
 * request may be cancelled). `now` is the app's clock (tests move it past the TTL).
 */
export function cachedKeyLookup(now: Clock = systemClock): KeyLookup {
  const options = { max: KEY_CACHE_MAX_ENTRIES, ttlMs: KEY_CACHE_TTL_MS, now };
  const known = new TtlCache<string, KeyOwner>(options);
  const unknown = new TtlCache<string, true>(options);
  return async (db, key, beforeQuery) => {
    const cacheKey = await cacheKeyOf(key);
    const hit = known.get(cacheKey);
    if (hit) return hit;
    if (unknown.get(cacheKey)) return null;
    await beforeQuery?.();
    const owner = await findKeyOwner(db, key);
    if (owner) known.set(cacheKey, owner);
    else unknown.set(cacheKey, true);
    return owner;
  };
}
