import { createMiddleware } from "hono/factory";
import { projectLimiter } from "../durable/names";
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
 * `deferred` (POST /v1/send): the handler runs while the object answers and
 * must await `c.var.rateLimitAllowed()` before it writes anything.
 */
export const rateLimit = (now: Clock = Date.now, options: { deferred?: boolean } = {}) =>
  createMiddleware<AppBindings>(async (c, next) => {
    const { projectId, keyKind } = c.get("auth");
    const limit = readConfig(c.env).RATE_LIMIT_PER_MINUTE;
    const limiter = projectLimiter(c.env, keyKind === "public" ? "public" : "api", projectId);
    const answer = Promise.resolve(limiter.hitApi(limit, now())).then((result) => {
      const headers = {
        "RateLimit-Limit": String(result.limit),
        "RateLimit-Remaining": String(result.remaining),
        "RateLimit-Reset": String(result.resetSeconds),
      };
      const refusal = result.allowed
        ? null
        : new ApiError("RATE_LIMITED", `Rate limit of ${result.limit} requests per minute exceeded`, {
            headers: { ...headers, "Retry-After": String(result.resetSeconds) },
            suggestion: `Retry after ${result.resetSeconds} seconds.`,
          });
      return { headers, refusal };
    });
    if (options.deferred) {
      // The handler reads while the limiter answers and awaits rateLimitAllowed()
      // before its first write, so a refused request still writes nothing.
      answer.catch(() => {}); // awaited below; never an unhandled rejection meanwhile
      c.set("rateLimitAllowed", async () => {
        const { refusal } = await answer;
        if (refusal) throw refusal;
      });
    } else {
      const { refusal } = await answer;
      if (refusal) throw refusal;
    }
    await next();
    const { headers, refusal } = await answer;
    // Deferred: a refused request is a 429 whatever the handler answered (a 422 found while reading, say).
    if (refusal) throw refusal;
    for (const [name, value] of Object.entries(headers)) c.header(name, value);
  });
