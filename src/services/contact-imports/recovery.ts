import type { Env } from "../../env";
import { WriteBatch } from "../../store/batch";
import { failStalled, leftoverImports, markResumed, stalledImports, sweepRanges, unappliedRanges } from "../../store/contact-imports";
import { queueChunks } from "./chunks";

/**
 * The cron's import job: finishes what a crash left of an import (kept apart
 * from upload.ts, so the cron does not load the CSV libraries).
 */

/** An upload from which no rows arrived for this long is dead (its invocation ended): FAILED, its file never kept. */
export const UPLOAD_TIMEOUT_MS = 3 * 60_000;
/** A PROCESSING import with no chunk applied for this long has lost messages: its chunks not applied are queued again. */
export const STALL_MS = 60_000;
/** A PROCESSING import without progress for this long (the queue itself failing) is given up: FAILED, its rows not applied dropped. */
export const ABANDON_MS = 24 * 60 * 60_000;
/** Work per cron tick: rows re-queued (200 chunks of 500) and ranges of ended imports deleted. */
const RESUME_ROWS_PER_TICK = 100_000;
const SWEEP_RANGES_PER_TICK = 2_000;
const IMPORTS_PER_TICK = 20;

export const UPLOAD_DIED =
  "The upload stopped: no rows arrived for 3 minutes (the request was cut off or its Worker invocation ended); nothing was imported. Upload the file again.";
const ABANDONED = "The import made no progress for 24 hours; the rows not yet processed were dropped. Import the file again.";

/**
 * The cron's import job, bounded per tick:
 * - an upload from which no rows arrived for UPLOAD_TIMEOUT_MS is FAILED with UPLOAD_DIED
 *   (a PROCESSING import without progress for ABANDON_MS with ABANDONED);
 * - the ranges (and chunk claims) of imports that failed are deleted (their files
 *   expire by the `imports/` lifecycle rule);
 * - a PROCESSING import with no chunk applied for STALL_MS has its chunks not yet
 *   applied queued again, a round of up to RESUME_ROWS_PER_TICK rows per
 *   tick until its last chunk. A chunk applies its rows once however often it
 *   comes (store/contact-imports.ts claimChunk), so re-queuing what is only late is harmless.
 */
export async function runImportJobs(env: Env, now: Date, limits = { resumeRowsPerTick: RESUME_ROWS_PER_TICK, sweepRangesPerTick: SWEEP_RANGES_PER_TICK }) {
  const d1 = env.DB;
  const t = now.getTime();
  const failing = new WriteBatch(d1);
  const expired = failing.add(failStalled(d1, "PENDING", t - UPLOAD_TIMEOUT_MS, UPLOAD_DIED, t, IMPORTS_PER_TICK));
  const abandoned = failing.add(failStalled(d1, "PROCESSING", t - ABANDON_MS, ABANDONED, t, IMPORTS_PER_TICK));
  const failed = await failing.run();

  let swept = 0;
  const { results: leftovers } = await leftoverImports(d1, IMPORTS_PER_TICK).all<{ id: string }>();
  for (const { id } of leftovers) {
    if (swept >= limits.sweepRangesPerTick) break;
    const sweep = new WriteBatch(d1);
    const [ranges, claims] = sweepRanges(d1, id, limits.sweepRangesPerTick - swept);
    const removed = sweep.add(ranges);
    sweep.add(claims);
    swept += (await sweep.run()).rows(removed).length;
  }

  let requeued = 0;
  const resumed: string[] = [];
  const { results: stalled } = await stalledImports(d1, t - STALL_MS, IMPORTS_PER_TICK).all<{ id: string; project_id: string; resume_row: number }>();
  for (const job of stalled) {
    const room = limits.resumeRowsPerTick - requeued;
    if (room <= 0) break;
    // Each range has at least one row: `room` ranges always hold `room` rows or all that are left.
    const { results: ranges } = await unappliedRanges(d1, job.id, job.resume_row, room).all<{ first_row: number; last_row: number; rows: number }>();
    const chunks: { fromRow: number; toRow: number }[] = [];
    let rows = 0;
    for (const r of ranges) {
      if (chunks.length > 0 && rows + r.rows > room) break;
      chunks.push({ fromRow: r.first_row, toRow: r.last_row });
      rows += r.rows;
    }
    await queueChunks(env, job.id, job.project_id, chunks);
    // Ranges left after this round's: the next tick goes on after its last one.
    const more = chunks.length < ranges.length || ranges.length === room;
    const last = chunks.at(-1);
    await markResumed(d1, job.id, more && last ? last.fromRow : 0, t).run();
    requeued += rows;
    if (chunks.length > 0) resumed.push(job.id);
  }
  return { expired: failed.rows(expired).length, abandoned: failed.rows(abandoned).length, swept, requeued, resumed };
}
