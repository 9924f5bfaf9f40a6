import type { Env } from "../env";
import { TtlCache } from "../lib/ttl-cache";

/**
 * Projects on D1 shards (issue 34). `DB` is the control database (projects, api_keys,
 * domains, domain_releases, the project -> shard map project_shards) and also data shard 0,
 * so a small install has one database. More data shards are the bindings SHARD_1 … SHARD_n
 * (wrangler.toml), each holding the project-scoped tables of the projects placed on it
 * (migrations-data/) and a `projects` row per project (its data-side state).
 *
 * How code reaches a project's data: a request after authentication, a queue message (its
 * `shard`), a signed link (its shard field) or a cron walk (`shardIds`) gives a shard; the
 * code then runs with `shardEnv(env, shard)`, whose `DB` is that shard. Control tables are
 * reached only through `controlDb(env)`, whatever env a function was handed.
 */
export type ShardId = number;

/** Where a project's data lives, from project_shards: `movingTo` is set while a move copies it (services/shards). */
export interface ShardRoute {
  shard: ShardId;
  movingTo: ShardId | null;
}

/** A shard binding's name: SHARD_1 … SHARD_n (shard 0 is DB). */
export const shardBinding = (shard: ShardId) => `SHARD_${shard}` as const;

const idsOf = new WeakMap<object, ShardId[]>();

/** The shards this deployment has, in order: 0 (DB) and every SHARD_n binding present. */
export function shardIds(env: Env): ShardId[] {
  const base = controlEnv(env);
  let ids = idsOf.get(base);
  if (!ids) {
    const extra = Object.keys(base)
      .map((key) => /^SHARD_([1-9][0-9]*)$/.exec(key)?.[1])
      .filter((n): n is string => n !== undefined && isD1(base[shardBinding(Number(n))]))
      .map(Number)
      .sort((a, b) => a - b);
    ids = [0, ...extra];
    idsOf.set(base, ids);
  }
  return ids;
}

const isD1 = (value: unknown): value is D1Database => typeof value === "object" && value !== null && "prepare" in value;

/** Each data shard's D1 (as shardDb handed it out) -> the control D1 of its deployment. */
const controlOfShard = new WeakMap<D1Database, D1Database>();

/** The D1 database of one shard; a shard this deployment does not have is a RangeError (an operator's or a message's mistake). */
export function shardDb(env: Env, shard: ShardId): D1Database {
  const base = controlEnv(env);
  if (shard === 0) return base.DB;
  const d1 = Number.isInteger(shard) && shard > 0 ? base[shardBinding(shard)] : undefined;
  if (!isD1(d1)) throw new RangeError(`no data shard ${shard}: bind SHARD_${shard} in wrangler.toml (docs/deploy.md "Adding a shard")`);
  controlOfShard.set(d1, base.DB);
  return d1;
}

/**
 * The control database behind a data D1 (for code handed only a project's D1, such as the
 * sender check): shard 0's D1 is the control database itself.
 */
export function controlDbOf(d1: D1Database): D1Database {
  return controlOfShard.get(d1) ?? d1;
}

/** Whether the deployment has this shard. */
export function hasShard(env: Env, shard: unknown): shard is ShardId {
  return typeof shard === "number" && shardIds(env).includes(shard);
}

/** The control database: projects, api_keys, domains, domain_releases, project_shards. Every access to those tables goes through this. */
export function controlDb(env: Env): D1Database {
  return controlEnv(env).DB;
}

/** The shard an env reaches with `env.DB` (0 for the Worker's own env). */
export function shardOf(env: Env): ShardId {
  return env.DATA_SHARD ?? 0;
}

/** The Worker's own env (DB = control) behind a shard env. */
function controlEnv(env: Env): Env {
  return env.CONTROL_ENV ?? env;
}

const envs = new WeakMap<Env, Map<ShardId, Env>>();

/**
 * The env a project's work runs with: `DB` is the shard's database, every other binding as
 * the Worker's. Shard 0 is the Worker's env itself (a small install changes nothing). Built
 * once per env and shard.
 */
export function shardEnv(env: Env, shard: ShardId): Env {
  const base = controlEnv(env);
  if (shard === 0) return base;
  let byShard = envs.get(base);
  if (!byShard) {
    byShard = new Map();
    envs.set(base, byShard);
  }
  let scoped = byShard.get(shard);
  if (!scoped) {
    scoped = { ...base, DB: shardDb(base, shard), DATA_SHARD: shard, CONTROL_ENV: base };
    byShard.set(shard, scoped);
  }
  return scoped;
}

/**
 * How long an isolate trusts a project's shard: a move (services/shards) marks the project
 * `moving_to` and waits longer than this before it copies, so every isolate has seen the mark
 * (the API key cache, KEY_CACHE_TTL_MS, carries the route too and has the same bound).
 */
export const SHARD_CACHE_TTL_MS = 5_000;

const routes = new TtlCache<string, ShardRoute>({ max: 10_000, ttlMs: SHARD_CACHE_TTL_MS });

const ROUTE_SQL = "SELECT shard, moving_to FROM project_shards WHERE project_id = ?1";

/** A project's shard route: the isolate's cache, else one control read. A project without a row is on shard 0. */
export async function routeOf(env: Env, projectId: string): Promise<ShardRoute> {
  const hit = routes.get(projectId);
  if (hit) return hit;
  const row = await controlDb(env).prepare(ROUTE_SQL).bind(projectId).first<{ shard: number; moving_to: number | null }>();
  const route = { shard: row?.shard ?? 0, movingTo: row?.moving_to ?? null };
  routes.set(projectId, route);
  return route;
}

const ROUTES_SQL = "SELECT project_id, shard, moving_to FROM project_shards WHERE project_id IN (SELECT value FROM json_each(?1))";

/**
 * The routes of many projects into the isolate's cache with at most one control read (a queue
 * batch's projects before its messages are routed one by one); projects without a row are on shard 0.
 */
export async function prefetchRoutes(env: Env, projectIds: Iterable<string>): Promise<void> {
  const missing = [...new Set(projectIds)].filter((id) => routes.get(id) === undefined);
  if (missing.length === 0) return;
  const { results } = await controlDb(env)
    .prepare(ROUTES_SQL)
    .bind(JSON.stringify(missing))
    .all<{ project_id: string; shard: number; moving_to: number | null }>();
  const found = new Map(results.map((r) => [r.project_id, { shard: r.shard, movingTo: r.moving_to ?? null }]));
  for (const id of missing) routes.set(id, found.get(id) ?? { shard: 0, movingTo: null });
}

/** What another lookup already read from control (the API key lookup joins project_shards): kept as the cached route. */
export function rememberRoute(projectId: string, route: ShardRoute): void {
  routes.set(projectId, route);
}

/** Drops a cached route (a move that switched the project, in this isolate; others wait out SHARD_CACHE_TTL_MS). */
export function forgetRoute(projectId: string): void {
  routes.delete(projectId);
}

/** The D1 database that holds a project's data. */
export async function dbFor(env: Env, projectId: string): Promise<D1Database> {
  return shardDb(env, (await routeOf(env, projectId)).shard);
}

/** The env a project's work runs with (shardEnv of its shard). */
export async function envFor(env: Env, projectId: string): Promise<Env> {
  return shardEnv(env, (await routeOf(env, projectId)).shard);
}

/** Default fill past which a shard takes no new project (SHARD_FILL_LIMIT_BYTES): well under D1's 10 GB per database. */
export const DEFAULT_SHARD_FILL_LIMIT_BYTES = 6 * 1024 ** 3;

/** The fill limit: SHARD_FILL_LIMIT_BYTES when it is a positive number, else 6 GiB. */
export function shardFillLimit(env: Pick<Env, "SHARD_FILL_LIMIT_BYTES">): number {
  const n = Number(env.SHARD_FILL_LIMIT_BYTES);
  return Number.isFinite(n) && n > 0 ? n : DEFAULT_SHARD_FILL_LIMIT_BYTES;
}

/**
 * The shard a new project goes to: the least-filled one under the limit (ties: the lowest
 * id, so a one-shard install always says 0), or null when every shard is full. Shared by
 * the Worker (placeProject) and the CLI (which reads sizes through wrangler).
 */
export function chooseShard(sizes: readonly { shard: ShardId; bytes: number }[], limitBytes: number): ShardId | null {
  let best: { shard: ShardId; bytes: number } | null = null;
  for (const size of sizes) {
    if (size.bytes >= limitBytes) continue;
    if (!best || size.bytes < best.bytes || (size.bytes === best.bytes && size.shard < best.shard)) best = size;
  }
  return best?.shard ?? null;
}

/** A shard's size in bytes, as D1 reports it with any statement (meta.size_after). */
export async function shardBytes(env: Env, shard: ShardId): Promise<number> {
  const result = await shardDb(env, shard).prepare("SELECT 1").run();
  return Number((result.meta as { size_after?: number }).size_after ?? 0);
}

/** Every shard is over SHARD_FILL_LIMIT_BYTES: an operator must add a shard (docs/deploy.md "Adding a shard"). */
export class AllShardsFullError extends Error {
  constructor(
    readonly sizes: readonly { shard: ShardId; bytes: number }[],
    readonly limitBytes: number,
  ) {
    super(
      `Every data shard is over its fill limit (${limitBytes} bytes: ${sizes.map((s) => `shard ${s.shard} ${s.bytes}`).join(", ")}); add a shard (docs/deploy.md "Adding a shard") or raise SHARD_FILL_LIMIT_BYTES`,
    );
    this.name = "AllShardsFullError";
  }
}

/** The shard for a new project (chooseShard over every shard's size); throws AllShardsFullError when none has room. */
export async function placeProject(env: Env): Promise<ShardId> {
  const sizes = await Promise.all(shardIds(env).map(async (shard) => ({ shard, bytes: await shardBytes(env, shard) })));
  const limit = shardFillLimit(env);
  const shard = chooseShard(sizes, limit);
  if (shard === null) throw new AllShardsFullError(sizes, limit);
  return shard;
}

/**
 * The shard a queue message or workflow's work runs on: the `shard` its producer stamped
 * (src/queues.ts); none (sent before shards existed) is shard 0. A shard this deployment no
 * longer has is looked up by the message's project.
 */
export async function shardOfWork(env: Env, body: unknown): Promise<ShardId> {
  const { shard, projectId } = (typeof body === "object" && body !== null ? body : {}) as { shard?: unknown; projectId?: unknown };
  if (shard === undefined || shard === null) return 0;
  if (hasShard(env, shard)) return shard;
  return typeof projectId === "string" ? (await routeOf(env, projectId)).shard : 0;
}

/** What a message or link says of the shard its work runs on: nothing for shard 0 (as before shards existed), else `{ shard }`. */
export function shardField(shard: ShardId): { shard?: ShardId } {
  return shard === 0 ? {} : { shard };
}

/**
 * The shards a key-less request tries for an email its signed link names: the link's shard first,
 * then the others in order (the project moved since the link was sent: its rows left that shard).
 * A shard this deployment does not have is skipped.
 */
export function shardsFrom(env: Env, named: ShardId): ShardId[] {
  const all = shardIds(env);
  return all.includes(named) ? [named, ...all.filter((s) => s !== named)] : all;
}
