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
}

/**
 * A request's hand-over of the webhook events it recorded: each call returns at
 * once, the queue call runs after the response (waitUntil); the cron drains
 * whatever one does not send.
 */
export interface BackgroundHandOver {
  /** Events of one project, by id. */
  events(projectId: string, eventIds: string[]): Promise<void>;
  /** Rows a record statement returned (`id`, `project_id`), whatever their projects. */
  rows(rows: readonly Record<string, unknown>[]): Promise<void>;
}

export interface AppBindings {
  Bindings: Env;
  Variables: {
    requestId: string;
    auth: AuthContext;
    /** The app's in-isolate caches, on the app's clock (set for every request by createApp). */
    caches: Caches;
    /**
     * Set by a handler whose write batch looked at the workflow outbox: false
     * when it holds nothing of this project, so the hand-over after the
     * response is skipped. Unset: unknown, the hand-over runs.
     */
    workflowTriggersPending?: boolean;
    /** Ids of webhook events the request's write recorded: handed to the webhook queue after the response. */
    webhookEvents?: string[];
    /** Hands recorded webhook events to the queue after the response, coalesced per isolate (set for every request by createApp). */
    webhookHandOver: BackgroundHandOver;
    /** The request's one door out: every batch it commits reports here; flushed after the response (set for every request by createApp). */
    afterCommit: HandOverDoor;
    /** Resolves when the rate limiter allowed the request, rejects with the 429 (routes whose limiter check is deferred). */
    rateLimitAllowed?: () => Promise<void>;
  };
}
