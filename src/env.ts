import type { ProjectLimiter } from "./durable/project-limiter";

/** Bindings and variables of the Worker (wrangler.toml, .dev.vars, secrets). */
export interface Env {
  DB: D1Database;
  PROJECT_LIMITER: DurableObjectNamespace<ProjectLimiter>;
  /** "development" enables local-only conveniences; anything else is a deployment. */
  ENVIRONMENT?: string;
  /** API requests per minute per project (default 1000). */
  RATE_LIMIT_PER_MINUTE?: string;
}

/** What the auth middleware puts on the request context. */
export interface AuthContext {
  projectId: string;
  keyKind: "secret" | "public";
}

export interface AppBindings {
  Bindings: Env;
  Variables: {
    requestId: string;
    auth: AuthContext;
  };
}

export const isDevelopment = (env: Env) => env.ENVIRONMENT === "development";
