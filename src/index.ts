import { createApp } from "./app";
import type { Env } from "./env";
import { readConfig } from "./lib/config";
import { countingD1, d1Stats, type D1Source } from "./lib/d1-counter";
import { handleQueue } from "./queue";
import { runScheduledJobs } from "./scheduled";

export { ProjectLimiter } from "./durable/project-limiter";
export { AutomationWorkflow } from "./workflows/automation";

const app = createApp();

/** `npm run bench` counts D1 statements (development only, BENCH_COUNT_D1=1; see src/lib/d1-counter.ts). */
const counted = (env: Env, source: D1Source): Env => {
  const config = readConfig(env);
  // Counted twice: per entry point (inside) and in the isolate's total (outside).
  return config.BENCH_COUNT_D1 && config.development ? { ...env, DB: countingD1(countingD1(env.DB, d1Stats.bySource[source])) } : env;
};

export default {
  fetch: (request: Request, env: Env, ctx: ExecutionContext) => app.fetch(request, counted(env, "fetch"), ctx),
  async queue(batch, env, _ctx) {
    await handleQueue(batch, counted(env, "queue"));
  },
  async scheduled(controller, env, _ctx) {
    await runScheduledJobs(counted(env, "scheduled"), controller);
  },
} satisfies ExportedHandler<Env>;
