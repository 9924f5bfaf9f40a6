import { shardDb, shardIds } from "../../db/shards";
import type { Env } from "../../env";
import { type Config, readConfig } from "../../lib/config";
import { idAtTime, timeOfId } from "../../lib/ids";
import { WriteBatch } from "../../store/batch";
import {
  ARCHIVE_KINDS,
  type ArchiveKind,
  archivableRows,
  commitPart,
  gzipNdjson,
  nextPart,
  oldestArchivable,
  partKey,
  pruneRuns,
  putPart,
} from "../../store/objects/archive";
import { isUniqueViolation, raisedGuard } from "../../store/guards";

/**
 * The archive job (cron): on every shard, each kind's records older than the hot window
 * (EMAIL_HOT_DAYS, whole UTC days) leave D1 for R2 day archives, oldest first, in parts of at
 * most ROWS_PER_PART rows of one project and day, ARCHIVE_ROWS_PER_TICK rows per shard and kind
 * per tick. A part is put in R2, then committed in one D1 batch (its archive_runs row, its bytes
 * in r2_usage, its rows deleted); see store/objects/archive.ts for why a crash between the two
 * loses and duplicates nothing.
 */
export const DAY_MS = 86_400_000;
/** Rows in one part object: a part is built in memory (≈2 KB a row as JSON before gzip). */
export const ROWS_PER_PART = 1000;
/** archive_runs rows past retention one tick deletes per shard and kind. */
const RUNS_PRUNED_PER_TICK = 500;

/** Days a kind is kept in all; a kind kept no longer than the hot window is deleted by retention, never archived. */
export function retentionDays(kind: ArchiveKind, config: Config): number {
  if (kind === "emails") return config.EMAIL_RETENTION_DAYS;
  if (kind === "events") return config.EVENT_RETENTION_DAYS;
  return config.WEBHOOK_RETENTION_DAYS;
}
export const archives = (kind: ArchiveKind, config: Config) => retentionDays(kind, config) > config.EMAIL_HOT_DAYS;

/** The first UTC day (number) of the hot window: records of earlier days are archived. */
export const hotFromDay = (config: Config, now: Date) => Math.floor(now.getTime() / DAY_MS) - config.EMAIL_HOT_DAYS;

/** The UTC day number of a record by its UUIDv7 id (null when the id is not one). */
export function dayOfId(id: string): number | null {
  const ms = timeOfId(id);
  return ms === null ? null : Math.floor(ms / DAY_MS);
}

export interface KindResult {
  rows: number;
  parts: number;
  prunedRuns: number;
  /** A part whose rows changed while it was written: archived again next tick. */
  retry?: string;
}

/** One shard's work for one kind this tick. */
export async function archiveKind(d1: D1Database, bucket: R2Bucket, config: Config, kind: ArchiveKind, now: Date): Promise<KindResult> {
  const result: KindResult = { rows: 0, parts: 0, prunedRuns: 0 };
  const today = Math.floor(now.getTime() / DAY_MS);
  result.prunedRuns = (await pruneRuns(d1, kind, today - Math.ceil(retentionDays(kind, config)), RUNS_PRUNED_PER_TICK).run()).meta.changes ?? 0;
  if (!archives(kind, config)) return result;
  const beforeId = idAtTime(hotFromDay(config, now) * DAY_MS);
  // Records already past their retention are retention's to delete, not worth an archive.
  const fromId = idAtTime(now.getTime() - retentionDays(kind, config) * DAY_MS);
  let left = config.ARCHIVE_ROWS_PER_TICK;
  while (left > 0) {
    const oldest = await oldestArchivable(d1, kind, fromId, beforeId);
    const day = oldest && dayOfId(oldest.id);
    if (!oldest || day === null) break;
    // The hot window starts at a UTC midnight, so the oldest row's whole day is older than it.
    const dayEnd = idAtTime((day + 1) * DAY_MS);
    const rows = await archivableRows(d1, kind, oldest.projectId, oldest.id, dayEnd, Math.min(ROWS_PER_PART, left));
    if (rows.length === 0) break;
    const part = await nextPart(d1, kind, oldest.projectId, day);
    const key = partKey(kind, oldest.projectId, day, rows[0].id);
    const body = await gzipNdjson(rows);
    await putPart(bucket, key, body, rows.length);
    const batch = new WriteBatch(d1);
    batch.add(...commitPart(d1, { kind, projectId: oldest.projectId, day, part, key, rows, bytes: body.byteLength }, now));
    try {
      await batch.run();
    } catch (err) {
      // A row changed (a late open, a retried delivery) or went (its contact deleted) since it was read (the
      // quota_checks guard's abort), or a concurrent tick committed this part: the next tick writes it again
      // from the rows as they are then.
      if (raisedGuard(err) !== "QUOTA_EXCEEDED:UNKNOWN" && !isUniqueViolation(err, "archive_runs")) throw err;
      result.retry = key;
      break;
    }
    result.rows += rows.length;
    result.parts++;
    left -= rows.length;
  }
  return result;
}

/**
 * The cron job, bounded per shard and kind. Handed one shard's env (the tick runs a data job once
 * per shard with it: DATA_SHARD set, `DB` that shard), it works on that shard; handed the
 * Worker's own env, it walks every shard itself.
 */
export async function runArchive(env: Env, now = new Date()) {
  const config = readConfig(env);
  const given = (env as { DATA_SHARD?: number }).DATA_SHARD;
  const out: Record<string, Record<ArchiveKind, KindResult | { error: string }>> = {};
  for (const shard of given === undefined ? shardIds(env) : [given]) {
    const d1 = given === undefined ? shardDb(env, shard) : env.DB;
    const kinds = {} as Record<ArchiveKind, KindResult | { error: string }>;
    for (const kind of ARCHIVE_KINDS) {
      try {
        kinds[kind] = await archiveKind(d1, env.STORAGE, config, kind, now);
      } catch (err) {
        console.error(`archive: shard ${shard} ${kind} failed`, err);
        kinds[kind] = { error: err instanceof Error ? err.message : String(err) };
      }
    }
    out[shard] = kinds;
  }
  return out;
}
