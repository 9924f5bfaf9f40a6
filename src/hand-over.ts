import type { Env } from "./env";
import type { AfterCommit, Committed, RecordedEvent } from "./lib/after-commit";
import { enqueueWebhookEvents, type WebhookEventCoalescer } from "./queues";

/**
 * The one door out of an invocation (lib/after-commit.ts): built once per
 * request (app.ts), queue batch (queue.ts), cron tick (scheduled.ts) and
 * workflow step (entrypoints), told about every batch it commits, and
 * flushed when the work is done: recorded webhook events to the webhook queue
 * (coalesced per isolate for requests), then each project's waiting workflow
 * triggers to the workflow queue. A flush never throws: what it cannot hand
 * over stays in D1 for the cron.
 */
export class HandOver implements AfterCommit {
  private readonly events: RecordedEvent[] = [];
  /** Per project: whether workflow triggers may wait (true) or a probe found none (false). */
  private readonly triggers = new Map<string, boolean>();

  constructor(
    private readonly env: Env,
    private readonly coalescer?: WebhookEventCoalescer,
  ) {}

  committed(result: Committed): void {
    this.events.push(...result.webhookEvents);
    for (const [projectId, pending] of result.workflowTriggers) this.triggers.set(projectId, (this.triggers.get(projectId) ?? false) || pending);
  }

  /** Whether a committed batch probed the project's workflow outbox. */
  probed(projectId: string): boolean {
    return this.triggers.has(projectId);
  }

  /** A write whose batch did not probe may have left workflow triggers: dispatch the project's at the flush. */
  mayHaveWorkflowTriggers(projectId: string): void {
    this.triggers.set(projectId, true);
  }

  /** The invocation wrote nothing that starts a workflow (no dispatch for the project, unless a batch found triggers). */
  noWorkflowTriggers(projectId: string): void {
    if (!this.triggers.has(projectId)) this.triggers.set(projectId, false);
  }

  /** Whether anything waits to be handed over (events, or a project whose triggers may wait). */
  get pending(): boolean {
    return this.events.length > 0 || [...this.triggers.values()].some(Boolean);
  }

  /** Hands everything committed so far to the queues. */
  async flush(): Promise<void> {
    const events = this.events.splice(0);
    const projects = [...this.triggers].filter(([, pending]) => pending).map(([projectId]) => projectId);
    this.triggers.clear();
    const work: Promise<unknown>[] = [];
    if (events.length > 0)
      work.push(
        onShards(this.env, events).then(async (located) => {
          await (this.coalescer ? this.coalescer.handOver(this.env, located) : enqueueWebhookEvents(this.env, located));
        }),
      );
    if (projects.length > 0) work.push(dispatchTriggers(this.env, projects));
    await Promise.all(work.map((w) => w.catch((err) => console.error("hand-over after commit failed; the cron drains what is left", err))));
  }
}

/**
 * Each event with its project's data shard (src/db/shards.ts routeOf: in a request the auth
 * middleware left the route in the isolate's cache, so no lookup; a queue batch or cron tick
 * reads the routes it lacks from control in one statement, then once per SHARD_CACHE_TTL_MS).
 */
async function onShards(env: Env, events: readonly RecordedEvent[]): Promise<(RecordedEvent & { shard: number })[]> {
  const { prefetchRoutes, routeOf } = await import("./db/shards");
  await prefetchRoutes(
    env,
    events.map((e) => e.projectId),
  );
  return Promise.all(events.map(async (e) => ({ ...e, shard: (await routeOf(env, e.projectId)).shard })));
}

/** Each project's waiting workflow triggers onto the workflow queue, on the project's shard (loaded on first use). */
async function dispatchTriggers(env: Env, projectIds: readonly string[]): Promise<void> {
  const [{ getDb }, { envFor }, { dispatchWorkflowTriggers }] = await Promise.all([
    import("./db/client"),
    import("./db/shards"),
    import("./services/workflows/triggers"),
  ]);
  for (const projectId of projectIds) {
    const projectEnv = await envFor(env, projectId);
    await dispatchWorkflowTriggers(getDb(projectEnv.DB), projectEnv, projectId);
  }
}
