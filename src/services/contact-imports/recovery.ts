import type { Env } from "../../env";
import { WriteBatch } from "../../store/batch";
import { failStalled, leftoverImports, markResumed, stagedRowsAfter, stalledImports, sweepRows } from "../../store/contact-imports";
import { cutChunks, queueChunks } from "./chunks";

/**
 * The cron's import job: finishes what a crash left of an import (kept apart
 * from upload.ts, so the cron does not load the CSV libraries).
 */

/** An upload that staged nothing for this long is dead (its invocation ended): FAILED, its rows dropped. */
export const UPLOAD_TIMEOUT_MS = 3 * 60_000;
/** A PROCESSING import with no chunk applied for this long has lost messages: its remaining rows are queued again. */
export const STALL_MS = 60_000;
/** A PROCESSING import without progress for this long (the queue itself failing) is given up: FAILED, its rows dropped. */
export const ABANDON_MS = 24 * 60 * 60_000;
/** Work per cron tick: rows re-queued (200 chunks of 500) and staged rows deleted. */
const RESUME_ROWS_PER_TICK = 100_000;
const SWEEP_ROWS_PER_TICK = 50_000;
const IMPORTS_PER_TICK = 20;

export const UPLOAD_DIED =
  "The upload stopped: no rows arrived for 3 minutes (the request was cut off or its Worker invocation ended); nothing was imported. Upload the file again.";
const ABANDONED = "The import made no progress for 24 hours; the rows not yet processed were dropped. Import the file again.";

/**
 * The cron's import job, bounded per tick:
 * - an upload that staged nothing for UPLOAD_TIMEOUT_MS is FAILED with UPLOAD_DIED
 *   (a PROCESSING import without progress for ABANDON_MS with ABANDONED);
 * - staged rows of imports no longer open are deleted (their bytes given back);
 * - a PROCESSING import with no chunk applied for STALL_MS has the chunks of its
 *   remaining rows queued again, a round of up to RESUME_ROWS_PER_TICK rows per
 *   tick until its last row. A chunk applies each row once however often it
 *   comes (store/contact-imports.ts claimChunk), so re-queuing what is only late is harmless.
 */
export async function runImportJobs(env: Env, now: Date, limits = { resumeRowsPerTick: RESUME_ROWS_PER_TICK, sweepRowsPerTick: SWEEP_ROWS_PER_TICK }) {
  const d1 = env.DB;
  const t = now.getTime();
  const failing = new WriteBatch(d1);
  const expired = failing.add(failStalled(d1, "PENDING", t - UPLOAD_TIMEOUT_MS, UPLOAD_DIED, t, IMPORTS_PER_TICK));
  const abandoned = failing.add(failStalled(d1, "PROCESSING", t - ABANDON_MS, ABANDONED, t, IMPORTS_PER_TICK));
  const failed = await failing.run();

  let swept = 0;
  const { results: leftovers } = await leftoverImports(d1, IMPORTS_PER_TICK).all<{ id: string }>();
  for (const { id } of leftovers) {
    if (swept >= limits.sweepRowsPerTick) break;
    const sweep = new WriteBatch(d1);
    const { count, remove } = sweepRows(d1, id, limits.sweepRowsPerTick - swept);
    const counted = sweep.add(count);
    sweep.add(remove);
    swept += Number((await sweep.run()).rows(counted)[0]?.n ?? 0);
  }

  let requeued = 0;
  const resumed: string[] = [];
  const { results: stalled } = await stalledImports(d1, t - STALL_MS, IMPORTS_PER_TICK).all<{ id: string; project_id: string; resume_row: number }>();
  for (const job of stalled) {
    const room = limits.resumeRowsPerTick - requeued;
    if (room <= 0) break;
    const { results: rows } = await stagedRowsAfter(d1, job.id, job.resume_row, room).all<{ row: number; size: number }>();
    await queueChunks(env, job.id, job.project_id, cutChunks(rows));
    // A full page may have more rows after it: the next tick goes on from its last row.
    await markResumed(d1, job.id, rows.length === room ? rows[rows.length - 1].row : 0, t).run();
    requeued += rows.length;
    if (rows.length > 0) resumed.push(job.id);
  }
  return { expired: failed.rows(expired).length, abandoned: failed.rows(abandoned).length, swept, requeued, resumed };
}
