import { WorkflowEntrypoint, type WorkflowEvent, type WorkflowStep } from "cloudflare:workers";
import { NonRetryableError } from "cloudflare:workflows";
import { controlDb, forgetRoute, hasShard, SHARD_CACHE_TTL_MS, shardDb } from "../db/shards";
import type { Env } from "../env";
import type { MoveParams } from "../messages";
import { KEY_CACHE_TTL_MS } from "../services/api-keys";
import { type Cursor, copyCounters, copyTable, DELETE_ORDER, deleteTable, MoveVerifyError, ROW_TABLES, verifyCopy } from "../services/shards/move";
import { clearMoving, markMoving, readRoute, switchShard } from "../store/moves";

export type MoveResult = { status: "moved"; from: number; to: number; rows: number } | { status: "unchanged"; shard: number };

/** D1 steps: a few quick retries; each repeats at most one bounded call (copies are INSERT OR IGNORE). */
const STEP = { retries: { limit: 5, delay: "5 seconds", backoff: "exponential" }, timeout: "5 minutes" } as const;

/**
 * How long a mark takes to reach every isolate: the shard route and API key caches'
 * TTL, and time for a request or queue batch that read the old state to finish its writes.
 */
export const MOVE_SETTLE_SECONDS = Math.ceil(Math.max(SHARD_CACHE_TTL_MS, KEY_CACHE_TTL_MS) / 1000) + 55;

/**
 * Moves a project's rows to another data shard, as durable steps (a deploy or a crash
 * resumes after the last finished step): mark the project moving in control (its API
 * writes answer 503, its queue messages wait, the cron leaves both shards), wait out the
 * isolates' caches, copy every table in bounded pages, set the counters, verify the
 * counts, switch the route, wait again, delete the source's rows in bounded pages, and
 * clear the mark. A copy that does not verify deletes what it copied and leaves the
 * project where it was.
 */
export class ProjectMove extends WorkflowEntrypoint<Env, MoveParams> {
  async run(event: Readonly<WorkflowEvent<MoveParams>>, step: WorkflowStep): Promise<MoveResult> {
    const { projectId, to } = event.payload;
    const control = controlDb(this.env);

    const begun = await step.do("mark moving", STEP, async () => {
      if (!hasShard(this.env, to)) throw new NonRetryableError(`No shard ${to}: this deployment has shards 0 to the last SHARD_n binding`);
      const route = await readRoute(control, projectId).first<{ shard: number; movingTo: number | null }>();
      if (!route) throw new NonRetryableError(`No project ${projectId}`);
      if (route.shard === to && route.movingTo === null) return { from: route.shard, unchanged: true };
      if (route.movingTo !== null && route.movingTo !== to) throw new NonRetryableError(`Project ${projectId} is already moving to shard ${route.movingTo}`);
      // A move that switched and stopped before it finished: its source is not known here any more.
      if (route.shard === to)
        throw new NonRetryableError(`Project ${projectId} is on shard ${to} already, with an unfinished move; see docs/deploy.md "Moving a project"`);
      const marked = await markMoving(control, projectId, route.shard, to).first();
      if (!marked) throw new NonRetryableError(`Project ${projectId} changed shard while the move began; run it again`);
      forgetRoute(projectId);
      return { from: route.shard, unchanged: false };
    });
    if (begun.unchanged) return { status: "unchanged", shard: to };
    const from = begun.from;
    const source = () => shardDb(this.env, from);
    const target = () => shardDb(this.env, to);

    await step.sleep("wait for every isolate to see the mark", `${MOVE_SETTLE_SECONDS} seconds`);

    let rows = 0;
    let copyFailed: string | null = null;
    try {
      for (const t of ROW_TABLES) {
        let cursor: Cursor = null;
        for (let call = 1; ; call++) {
          const progress = await step.do(`copy ${t.name} #${call}`, STEP, () => copyTable(source(), target(), t, projectId, cursor));
          rows += progress.copied;
          cursor = progress.cursor;
          if (cursor === null) break;
        }
      }
      await step.do("copy counters", STEP, () => copyCounters(source(), target(), projectId));
      await step.do("verify", STEP, async () => {
        try {
          return await verifyCopy(source(), target(), projectId);
        } catch (err) {
          if (err instanceof MoveVerifyError) throw new NonRetryableError(err.message);
          throw err;
        }
      });
    } catch (err) {
      copyFailed = err instanceof Error ? err.message : String(err);
    }
    if (copyFailed !== null) {
      // Nothing switched: the copy goes, the project stays and takes writes again.
      await this.deleteAll(step, "undo", to, projectId);
      await step.do("clear the mark (move given up)", STEP, async () => {
        await clearMoving(control, projectId).run();
      });
      throw new NonRetryableError(`Move of ${projectId} to shard ${to} given up, nothing changed: ${copyFailed}`);
    }

    await step.do("switch", STEP, async () => {
      await switchShard(control, projectId, to, Date.now()).run();
      forgetRoute(projectId);
    });
    await step.sleep("wait for every isolate to see the switch", `${MOVE_SETTLE_SECONDS} seconds`);
    await this.deleteAll(step, "delete", from, projectId);
    await step.do("clear the mark", STEP, async () => {
      await clearMoving(control, projectId).run();
      forgetRoute(projectId);
    });
    return { status: "moved", from, to, rows };
  }

  /** Deletes the project's rows from one shard, children first; the control database keeps the registry row. */
  private async deleteAll(step: WorkflowStep, what: string, shard: number, projectId: string) {
    for (const t of DELETE_ORDER) {
      for (let call = 1; ; call++) {
        const deleted = await step.do(`${what} ${t.name} on shard ${shard} #${call}`, STEP, () =>
          deleteTable(shardDb(this.env, shard), t, projectId, shard === 0),
        );
        if (deleted === 0) break;
      }
    }
  }
}
