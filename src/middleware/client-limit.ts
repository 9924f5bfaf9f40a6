import type { Env } from "../env";
import { ApiError } from "../lib/errors";

/** Paths that need no API key, each limited per client IP on its own (wrangler.toml [[ratelimits]] CLIENT_LIMITER). */
export type ClientScope = "key-lookup" | "tracking" | "unsubscribe" | "confirm" | "preferences" | "sns-certificate";

/** The CLIENT_LIMITER binding's period (wrangler.toml), for Retry-After. */
const CLIENT_LIMIT_PERIOD_SECONDS = 60;

/**
 * Whether the client (CF-Connecting-IP) may do more key-less work in `scope`,
 * counted by the Workers Rate Limiting binding. Without the binding or the
 * header (a request that did not come through Cloudflare's edge, e.g. tests
 * and local scripts) nothing is limited; a binding error lets the request through.
 */
export async function clientWithinLimit(env: Env, scope: ClientScope, headers: Headers): Promise<boolean> {
  const ip = headers.get("CF-Connecting-IP");
  if (!env.CLIENT_LIMITER || !ip) return true;
  try {
    return (await env.CLIENT_LIMITER.limit({ key: `${scope}:${ip}` })).success;
  } catch (err) {
    console.error("CLIENT_LIMITER failed; request let through", err);
    return true;
  }
}

/** The 429 for a client over its key-less limit, in the contract's envelope. */
export function clientLimitError(): ApiError {
  return new ApiError("RATE_LIMITED", "Too many requests from this client", {
    headers: { "Retry-After": String(CLIENT_LIMIT_PERIOD_SECONDS) },
    suggestion: `Retry after ${CLIENT_LIMIT_PERIOD_SECONDS} seconds.`,
  });
}

/** Throws clientLimitError() when the client is over its limit in `scope`. */
export async function assertClientWithinLimit(env: Env, scope: ClientScope, headers: Headers): Promise<void> {
  if (!(await clientWithinLimit(env, scope, headers))) throw clientLimitError();
}
