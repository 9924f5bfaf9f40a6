import type { Env } from "../env";

/**
 * Projects on D1 shards (issue 34). `DB` is the control database (projects, keys, domains,
 * the project -> shard map) and shard 0, so a small install has one database; more data
 * shards are the bindings SHARD_1 … SHARD_n. Every project-scoped table lives on its
 * project's shard; dbFor is the one way to reach it.
 *
 * STUB (being built): one shard until the shards work lands.
 */
export type ShardId = number;

/** The shards this deployment has, in order. */
export function shardIds(_env: Env): ShardId[] {
  return [0];
}

/** The D1 database of one shard. */
export function shardDb(env: Env, shard: ShardId): D1Database {
  if (shard !== 0) throw new RangeError(`no data shard ${shard}`);
  return env.DB;
}

/** The D1 database that holds a project's data. */
export async function dbFor(env: Env, _projectId: string): Promise<D1Database> {
  return env.DB;
}
