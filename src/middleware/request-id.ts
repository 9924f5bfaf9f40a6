import { createMiddleware } from "hono/factory";
import type { AppBindings } from "../lib/context";

/** Gives every request an id, returned in X-Request-Id and in every error body. */
export const requestId = createMiddleware<AppBindings>(async (c, next) => {
  const id = crypto.randomUUID();
  c.set("requestId", id);
  c.header("X-Request-Id", id);
  await next();
  c.header("X-Request-Id", id);
});
