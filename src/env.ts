import type { ProjectLimiter } from "./durable/project-limiter";

/** Bindings and variables of the Worker (wrangler.toml, .dev.vars, secrets). */
export interface Env {
  DB: D1Database;
  PROJECT_LIMITER: DurableObjectNamespace<ProjectLimiter>;
  /** "development" enables local-only conveniences; anything else is a deployment. */
  ENVIRONMENT?: string;
  /** API requests per minute per project (default 1000). */
  RATE_LIMIT_PER_MINUTE?: string;
  /** Base URL of this service as mail recipients reach it; tracking and unsubscribe links start with it. */
  PUBLIC_URL?: string;
  /** Secret: HMAC key that signs tracking and unsubscribe links. */
  LINK_SIGNING_SECRET?: string;
  /** Email provider: "ses" or "capture" (local development; keeps mail for GET /dev/outbox). */
  EMAIL_PROVIDER?: string;
  /** Emails per second per project, enforced by the project's Durable Object (default 14). */
  SEND_RATE_PER_SECOND?: string;
  SES_REGION?: string;
  /** Secret. */
  SES_ACCESS_KEY_ID?: string;
  /** Secret. */
  SES_SECRET_ACCESS_KEY?: string;
  SES_CONFIGURATION_SET?: string;
  /** Overrides https://email.{SES_REGION}.amazonaws.com (tests, local fakes). */
  SES_ENDPOINT?: string;
  /** Producer for send-email work: messages {emailId, projectId}. */
  EMAIL_QUEUE: Queue<SendEmailMessage>;
}

/** A unit of send work: one email record. Redelivery is harmless (the record is claimed first). */
export interface SendEmailMessage {
  emailId: string;
  projectId: string;
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
