import { createApp } from "./app";
import type { Env } from "./env";
import { handleQueue } from "./queue";
import { runScheduledJobs } from "./scheduled";

export { ProjectLimiter } from "./durable/project-limiter";
export { AutomationWorkflow } from "./workflows/automation";

const app = createApp();

export default {
  fetch: app.fetch,
  async queue(batch, env, _ctx) {
    await handleQueue(batch, env);
  },
  async scheduled(controller, env, _ctx) {
    await runScheduledJobs(env, controller);
  },
} satisfies ExportedHandler<Env>;
