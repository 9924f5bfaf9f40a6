import { controlDb, routeOf, SHARD_CACHE_TTL_MS, type ShardId, shardOfWork } from "../../db/shards";
import type { Env } from "../../env";
import type { Clock } from "../../lib/caches";
import { ApiError } from "../../lib/errors";
import { TtlCache } from "../../lib/ttl-cache";
import { movingShards } from "../../store/moves";

/**
 * What the rest of the Worker does while a project moves between shards (src/entrypoints/project-move.ts
 * marks it in project_shards.moving_to): its API writes are refused, its queue messages wait, and the
 * cron leaves the two shards' project jobs alone. The move's own waits outlast the route caches these
 * read through (SHARD_CACHE_TTL_MS), so every isolate holds back before the copy starts.
 */

/** How long a client or a held message waits before it tries again. */
export const MOVE_RETRY_SECONDS = 30;

/** 503 for a write to a project that is moving: nothing was changed, the same request works after the move. */
export function projectMovingError(): ApiError {
  return new ApiError("SERVICE_UNAVAILABLE", "This project is being moved to another database; writes are paused for a few minutes", {
    headers: { "Retry-After": String(MOVE_RETRY_SECONDS) },
    suggestion: `Retry after ${MOVE_RETRY_SECONDS} seconds; reads keep working meanwhile.`,
  });
}

/** Reads (and preflights) go on during a move; everything else writes. */
export const isWrite = (method: string) => !["GET", "HEAD", "OPTIONS"].includes(method.toUpperCase());

/** The project a queue message works for, when its body names one. */
export function projectOfMessage(body: unknown): string | null {
  const projectId = (typeof body === "object" && body !== null ? body : {}) as { projectId?: unknown };
  return typeof projectId.projectId === "string" ? projectId.projectId : null;
}

/**
 * Where a queue message's work runs: its project's shard now (the route cache, else one control
 * read per project and SHARD_CACHE_TTL_MS), so a message sent before a move reaches the rows
 * where they went; `held` while the project is moving. A message without a project: the shard it names.
 */
export async function routeOfWork(env: Env, body: unknown): Promise<{ shard: ShardId; held: boolean }> {
  const projectId = projectOfMessage(body);
  if (projectId === null) return { shard: await shardOfWork(env, body), held: false };
  const route = await routeOf(env, projectId);
  return { shard: route.shard, held: route.movingTo !== null };
}

/**
 * The shards a move copies from or to now, each with why the cron leaves its project jobs this
 * tick (one control read per tick). A failed read skips nothing: a move is rare, a tick is not.
 */
export async function shardsInMoves(env: Env): Promise<Map<ShardId, string>> {
  const busy = new Map<ShardId, string>();
  try {
    const { results } = await movingShards(controlDb(env)).all<{ shard: number; movingTo: number }>();
    for (const r of results) {
      const why = `a project is moving between shards ${r.shard} and ${r.movingTo}`;
      busy.set(r.shard, why);
      busy.set(r.movingTo, why);
    }
  } catch (err) {
    console.error("could not read the moves in progress; the cron runs every shard's jobs", err);
  }
  return busy;
}

/** Whether a project is moving between shards now (its route: the isolate's cache, else one control read). */
export async function isMoving(env: Env, projectId: string): Promise<boolean> {
  return (await routeOf(env, projectId)).movingTo !== null;
}

/**
 * The shards in a move, per app (`caches.get(shardsInMovesCache)`) for SHARD_CACHE_TTL_MS: the bound a
 * move waits out before it copies. Lets a key-less request (a signed link) skip its email's project
 * lookup unless the email's shard is in a move.
 */
export const shardsInMovesCache = (now: Clock) => new TtlCache<"moves", ReadonlySet<ShardId>>({ max: 1, ttlMs: SHARD_CACHE_TTL_MS, now });

/** Whether a move copies from or to this shard now (one control read per SHARD_CACHE_TTL_MS with the cache). */
export async function shardInMove(env: Env, shard: ShardId, cache?: ReturnType<typeof shardsInMovesCache>): Promise<boolean> {
  let busy = cache?.get("moves");
  if (!busy) {
    busy = new Set((await shardsInMoves(env)).keys());
    cache?.set("moves", busy);
  }
  return busy.has(shard);
}
