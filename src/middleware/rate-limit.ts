import { createMiddleware } from "hono/factory";
import type { AppBindings } from "../env";
import { readConfig } from "../lib/config";
import { ApiError } from "../lib/errors";

/** Milliseconds since the epoch; the app's clock, injectable so tests never wait for a real minute. */
export type Clock = () => number;

/**
 * 1000 API requests per minute per project (RATE_LIMIT_PER_MINUTE), counted in the project's Durable Object.
 * Public (pk_) keys count in a bucket of their own: the key sits in browser
 * JavaScript, so anyone can spend it, and that must never use up the budget of
 * the project's server-side (sk_) calls.
 * `now` is read here and passed to the object, so the window a request counts in is decided by the app's clock.
 */
export const rateLimit = (now: Clock = Date.now) => createMiddleware<AppBindings>(async (c, next) => {
  const { projectId, keyKind } = c.get("auth");
  const limit = readConfig(c.env).RATE_LIMIT_PER_MINUTE;
  const limiter = c.env.PROJECT_LIMITER.get(c.env.PROJECT_LIMITER.idFromName(keyKind === "public" ? `public:${projectId}` : projectId));
  const result = await limiter.hitApi(limit, now());
  const headers = {
    "RateLimit-Limit": String(result.limit),
    "RateLimit-Remaining": String(result.remaining),
    "RateLimit-Reset": String(result.resetSeconds),
  };
  if (!result.allowed) {
    throw new ApiError(429, "RATE_LIMITED", `Rate limit of ${result.limit} requests per minute exceeded`, {
      headers: { ...headers, "Retry-After": String(result.resetSeconds) },
      suggestion: `Retry after ${result.resetSeconds} seconds.`,
    });
  }
  await next();
  for (const [name, value] of Object.entries(headers)) c.header(name, value);
});
