import type { Env } from "../env";
import type { HandOverDoor } from "./after-commit";
import type { Caches } from "./caches";

/** The Hono app's bindings and request variables (the Worker's bindings themselves are in env.ts). */

/** What the auth middleware puts on the request context. */
export interface AuthContext {
  projectId: string;
  keyKind: "secret" | "public";
  /** The project's double opt-in, as the key lookup saw it (cached like the key: KEY_CACHE_TTL_MS). */
  doubleOptIn?: boolean;
  /** Why the project's sending is paused (reputation breaker), or null. */
  sendingPaused: string | null;
  /**
   * The project's data shard (src/db/shards.ts), read with the key. The auth middleware also
   * sets `c.env` to shardEnv(env, shard): after it, `c.env.DB` is the project's data and the
   * control tables are reached only through controlDb(c.env).
   */
  shard: number;
}

export interface AppBindings {
  Bindings: Env;
  Variables: {
    requestId: string;
    auth: AuthContext;
    /** The app's in-isolate caches, on the app's clock (set for every request by createApp). */
    caches: Caches;
    /** The request's one door out: every batch it commits reports here; flushed after the response (set for every request by createApp). */
    afterCommit: HandOverDoor;
    /** Resolves when the rate limiter allowed the request, rejects with the 429 (routes whose limiter check is deferred). */
    rateLimitAllowed?: () => Promise<void>;
  };
}
