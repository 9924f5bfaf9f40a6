import { createApp } from "./app";
import type { Env } from "./env";
import { runScheduledJobs } from "./scheduled";

export { ProjectLimiter } from "./durable/project-limiter";

const app = createApp();

export default {
  fetch: app.fetch,
  async scheduled(controller, env) {
    await runScheduledJobs(env, controller);
  },
} satisfies ExportedHandler<Env>;
