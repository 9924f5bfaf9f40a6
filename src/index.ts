import { createApp } from "./app";
import type { Env } from "./env";
import { readConfig } from "./lib/config";
import { countingD1 } from "./lib/d1-counter";
import { handleQueue } from "./queue";
import { runScheduledJobs } from "./scheduled";

export { ProjectLimiter } from "./durable/project-limiter";
export { AutomationWorkflow } from "./workflows/automation";

const app = createApp();

/** `npm run bench` counts D1 statements (development only, BENCH_COUNT_D1=1; see src/lib/d1-counter.ts). */
const counted = (env: Env): Env => {
  const config = readConfig(env);
  return config.BENCH_COUNT_D1 && config.development ? { ...env, DB: countingD1(env.DB) } : env;
};

export default {
  fetch: (request: Request, env: Env, ctx: ExecutionContext) => app.fetch(request, counted(env), ctx),
  async queue(batch, env, _ctx) {
    await handleQueue(batch, counted(env));
  },
  async scheduled(controller, env, _ctx) {
    await runScheduledJobs(counted(env), controller);
  },
} satisfies ExportedHandler<Env>;
