import { createApp } from "./app";
import type { Env } from "./env";

export { ProjectLimiter } from "./durable/project-limiter";

const app = createApp();

export default {
  fetch: app.fetch,
} satisfies ExportedHandler<Env>;
