import { WorkflowEntrypoint, type WorkflowEvent, type WorkflowStep } from "cloudflare:workers";
import type { Env } from "./env";
import type { D1Source } from "./lib/d1-counter";
import type { ExecutionParams } from "./services/workflows/executions";
import type { MoveParams } from "./messages";

export { ProjectLimiter } from "./entrypoints/project-limiter";

// Worker startup evaluates this module and the small Durable Object only. Each entry
// point imports its code (the HTTP app, the queue consumers, the cron jobs, the workflow
// steps) on its first invocation in an isolate, so a queue, cron, rate-limiter or workflow
// isolate never builds the HTTP app; the HTTP app in turn imports a path's routes and their
// zod schemas on that path's first request (src/app.ts, docs/performance.md).

let httpApp: Promise<ReturnType<typeof import("./app").createApp>> | undefined;
const app = () =>
  (httpApp ??= import("./app")
    .then(({ createApp }) => createApp())
    .catch((err) => {
      httpApp = undefined;
      throw err;
    }));

/** `npm run bench` counts D1 statements and rows (development only, BENCH_COUNT_D1=1 or all; see src/lib/d1-counter.ts). */
async function countingEnv(env: Env, source: D1Source): Promise<Env> {
  const { readConfig } = await import("./lib/config");
  const config = readConfig(env);
  if (!(config.BENCH_COUNT_D1 && config.development)) return env;
  const { countingD1, d1Stats } = await import("./lib/d1-counter");
  // Counted twice: in the isolate's total and per entry point. Every data shard (SHARD_n, src/db/shards.ts) too.
  const count = (d1: D1Database) => countingD1(d1, d1Stats, d1Stats.bySource[source]);
  const shards = Object.entries(env).filter((entry): entry is [string, D1Database] => /^SHARD_[1-9][0-9]*$/.test(entry[0]) && entry[1] != null);
  return { ...env, DB: count(env.DB), ...Object.fromEntries(shards.map(([name, d1]) => [name, count(d1)])) };
}

// Decided once per env object and entry point: the same env then reaches the
// app every time, so what is cached per env or per D1 binding (the parsed
// config, the drizzle instance) is built once, not per request.
const envs = new WeakMap<Env, Map<D1Source, Promise<Env>>>();
function counted(env: Env, source: D1Source): Promise<Env> {
  const bySource = envs.get(env) ?? new Map<D1Source, Promise<Env>>();
  envs.set(env, bySource);
  let wrapped = bySource.get(source);
  if (!wrapped) {
    wrapped = countingEnv(env, source);
    wrapped.catch(() => bySource.delete(source));
    bySource.set(source, wrapped);
  }
  return wrapped;
}

/** The class the [[workflows]] binding names; the steps (src/entrypoints/automation.ts) load on the first run. */
export class AutomationWorkflow extends WorkflowEntrypoint<Env, ExecutionParams> {
  async run(event: Readonly<WorkflowEvent<ExecutionParams>>, step: WorkflowStep) {
    const [{ AutomationWorkflow: Automation }, { followingShard }] = await Promise.all([
      import("./entrypoints/automation"),
      import("./entrypoints/follow-shard"),
    ]);
    // The execution's steps run on its project's data shard, where the project is at each step (it may move meanwhile).
    const following = await followingShard(this.env, event.payload, step);
    return new Automation(this.ctx, following.env).run(event, following.step);
  }
}

/** `npm run project -- move`: a project's rows to another shard (src/entrypoints/project-move.ts, loaded on the first run). */
export class ProjectMoveWorkflow extends WorkflowEntrypoint<Env, MoveParams> {
  async run(event: Readonly<WorkflowEvent<MoveParams>>, step: WorkflowStep) {
    const { ProjectMove } = await import("./entrypoints/project-move");
    return new ProjectMove(this.ctx, this.env).run(event, step);
  }
}

export default {
  async fetch(request: Request, env: Env, ctx: ExecutionContext) {
    // Not counted unless BENCH_COUNT_D1=all (the bench's rows section): the HTTP paths' statements are
    // pinned by test/app.round-trips.test.ts, and the wrapper would add its own cost to the request figures.
    return (await app()).fetch(request, env.BENCH_COUNT_D1 === "all" ? await counted(env, "fetch") : env, ctx);
  },
  async queue(batch, env, _ctx) {
    const { handleQueue } = await import("./queue");
    await handleQueue(batch, await counted(env, "queue"));
  },
  // Email Routing's delivery of a received message (src/services/inbound/receive.ts): stored and queued, or rejected.
  async email(message, env, _ctx) {
    const { handleEmail } = await import("./services/inbound/receive");
    await handleEmail(message, env);
  },
  async scheduled(controller, env, _ctx) {
    const { runScheduledJobs } = await import("./scheduled");
    await runScheduledJobs(await counted(env, "scheduled"), controller);
  },
} satisfies ExportedHandler<Env>;
