import { createMiddleware } from "hono/factory";
import type { AppBindings } from "../lib/context";

/** Responses that keep their own caching: the API reference (/docs, its assets, /openapi.json) and the dashboard (/app). */
const OWN_CACHING = /^\/(?:docs|docs-assets|openapi\.json|app)(?:\/|$)/;

/**
 * `Cache-Control: no-store` on every API response (JSON, errors, the CSV
 * export): they carry a project's data, and no cache between the client and
 * the Worker may keep them. A route that sets its own Cache-Control keeps it.
 */
export const noStore = createMiddleware<AppBindings>(async (c, next) => {
  await next();
  if (!OWN_CACHING.test(c.req.path) && !c.res.headers.has("Cache-Control")) c.header("Cache-Control", "no-store");
});
