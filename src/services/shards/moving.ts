import { controlDb, routeOf, type ShardId, shardOfWork } from "../../db/shards";
import type { Env } from "../../env";
import { ApiError } from "../../lib/errors";
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
