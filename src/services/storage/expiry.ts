import { type Config, readConfig } from "../../lib/config";
import type { Env } from "../../env";
import { deleteObjectsUploadedBefore } from "../../store/objects/expiry";
import { OBJECT_PREFIXES } from "../../store/objects/prefixes";
import { expireObjectBytes, usageDay } from "../../store/objects/usage";

const DAY_MS = 86_400_000;
/** r2_usage rows one run drops per prefix (one row is a project's day of one prefix). */
const USAGE_ROWS_PER_TICK = 1000;

/**
 * Object expiry for every prefix of store/objects/prefixes.ts, run by the cron on each data shard (`d1`):
 * - on every deployment, the r2_usage days whose objects have expired are dropped (bounded), so
 *   projects.r2_stored_bytes (QUOTA_R2_STORED_BYTES) follows what the bucket keeps; a day goes once
 *   every object written that day is past the prefix's keep (days before today - keepDays);
 * - only where ENVIRONMENT is development or test, the objects older than the keep are deleted (one
 *   listing per prefix), as the bucket's lifecycle rules (`npm run setup:cloudflare`) do in production.
 */
export async function expireObjects(d1: D1Database, bucket: R2Bucket, config: Config, now = new Date()) {
  const local = config.ENVIRONMENT === "development" || config.ENVIRONMENT === "test";
  const result: Record<string, { usageRows: number; objects: number | null }> = {};
  for (const [name, { prefix, keepDays }] of Object.entries(OBJECT_PREFIXES)) {
    const days = keepDays(config);
    const run = await expireObjectBytes(d1, prefix, usageDay(now) - Math.ceil(days), USAGE_ROWS_PER_TICK).run();
    const objects = local ? await deleteObjectsUploadedBefore(bucket, prefix, new Date(now.getTime() - days * DAY_MS)) : null;
    result[name] = { usageRows: run.meta.changes ?? 0, objects };
  }
  return result;
}

/** The cron job (src/scheduled.ts): this invocation's shard and the bucket. */
export const runObjectExpiry = (env: Env, now: Date) => expireObjects(env.DB, env.STORAGE, readConfig(env), now);
