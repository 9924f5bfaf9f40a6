import type { ProjectLimiter } from "./entrypoints/project-limiter";
import type {
  BulkMessage,
  ExecutionParams,
  ImportChunkMessage,
  InboundQueueMessage,
  MoveParams,
  SendEmailMessage,
  WebhookQueueMessage,
  WorkflowQueueMessage,
} from "./messages";

/** Bindings and variables of the Worker (wrangler.toml, .dev.vars, secrets). */
export interface Env {
  /** The control database (projects, keys, domains, the project -> shard map) and data shard 0 (src/db/shards.ts). */
  DB: D1Database;
  /** More data shards (wrangler.toml; none by default): SHARD_1 … SHARD_n, reached through src/db/shards.ts only. */
  [shard: `SHARD_${number}`]: D1Database | undefined;
  /** Set by shardEnv (src/db/shards.ts), never a binding: the shard `DB` is, and the Worker's own env behind it. */
  DATA_SHARD?: number;
  CONTROL_ENV?: Env;
  /** Bytes past which a data shard takes no new project (default 6 GiB; D1 stops a database at 10 GB). */
  SHARD_FILL_LIMIT_BYTES?: string;
  /** R2: sent bodies, attachments, captured mail, import files, day archives (src/storage/). */
  STORAGE: R2Bucket;
  /** Static assets ([assets] in wrangler.toml): the /docs UI files, the dashboard (/app) and the disposable-domain list. */
  ASSETS: Fetcher;
  PROJECT_LIMITER: DurableObjectNamespace<ProjectLimiter>;
  /** `npm run project -- move <project> <shard>` (src/entrypoints/project-move.ts). */
  PROJECT_MOVES: Workflow<MoveParams>;
  /** "development" enables local-only conveniences; anything else is a deployment. */
  ENVIRONMENT?: string;
  /** API requests per minute per project (default 1000). */
  RATE_LIMIT_PER_MINUTE?: string;
  /** DNS-over-HTTPS resolver (JSON API) for domain checks and /v1/verify (default https://cloudflare-dns.com/dns-query). */
  DOH_URL?: string;
  /** Milliseconds before a DNS-over-HTTPS lookup counts as "resolver timed out" (default 3000). */
  DOH_TIMEOUT_MS?: string;
  /**
   * Secret (wrangler secret put): encrypts each domain's DKIM private key at rest
   * (AES-256-GCM, key derived with HKDF-SHA-256). At least 32 characters. Domain
   * creation fails with a clear error when it is missing; never defaulted.
   */
  DKIM_ENCRYPTION_KEY?: string;
  /** SPF mechanism target the domain records must include (default amazonses.com). */
  SPF_INCLUDE?: string;
  /** Label of the return-path / MAIL FROM subdomain (default "mail", i.e. mail.<domain>). */
  MAIL_FROM_SUBDOMAIN?: string;
  /**
   * Email provider: "ses" (Amazon SES v2; DKIM keys are registered with it), "cloudflare"
   * (Cloudflare Email Service through the EMAIL binding) or "capture" (local development;
   * keeps mail for GET /dev/outbox).
   */
  EMAIL_PROVIDER?: string;
  /** Provider of broadcast mail ("ses" or "capture"); default EMAIL_PROVIDER (src/outside/providers/index.ts). */
  EMAIL_PROVIDER_BROADCAST?: string;
  /** AWS region of SES (default us-east-1); also names the return-path MX host. */
  SES_REGION?: string;
  /** SES API base URL override (default https://email.<SES_REGION>.amazonaws.com), e.g. a local fake. */
  SES_ENDPOINT?: string;
  /** Base URL of this service as mail recipients reach it; tracking and unsubscribe links start with it. */
  PUBLIC_URL?: string;
  /** Secret: HMAC key that signs tracking and unsubscribe links; at least 32 bytes (shorter is refused). */
  LINK_SIGNING_SECRET?: string;
  /**
   * Secret, only during a rotation: the previous LINK_SIGNING_SECRET. Links signed
   * with it still verify (mail already sent keeps working); remove it when done.
   */
  LINK_SIGNING_SECRET_PREVIOUS?: string;
  /**
   * Comma-separated SNS topic ARNs accepted by POST /webhooks/ses. Required: while
   * it is empty every SNS message is refused (the local fake and tests set it).
   */
  SES_SNS_TOPIC_ARNS?: string;
  /** Emails per second per project, enforced by the project's Durable Object (default 14). */
  SEND_RATE_PER_SECOND?: string;
  /** Secret: AWS access key id for SES. */
  SES_ACCESS_KEY_ID?: string;
  /** Secret: AWS secret access key for SES. */
  SES_SECRET_ACCESS_KEY?: string;
  /**
   * Milliseconds a provider call may take; past it the outcome is unknown and the email is not sent again
   * (docs/reliability.md). Default 30000; at most 20000 is used, so every call ends inside the 60 s claim lease.
   */
  SES_TIMEOUT_MS?: string;
  /**
   * Local development only (ENVIRONMENT=development; ignored anywhere else): the origin that serves SNS
   * signing certificates in place of https://sns.<region>.amazonaws.com, for a local fake SNS (test/faults).
   * The certificate URL a message names is still checked as in production; only where it is fetched changes.
   */
  SNS_DEV_CERT_ORIGIN?: string;
  /** SES configuration set for sends (event publishing to SNS for bounces/complaints). */
  SES_CONFIGURATION_SET?: string;
  /** Days email HTML is kept (default 30); the record and its status stay. */
  EMAIL_HTML_RETENTION_DAYS?: string;
  /** Days events are kept (default 365). */
  EVENT_RETENTION_DAYS?: string;
  EMAIL_RETENTION_DAYS?: string;
  /** The hot window in days (default 90): older email records, events and webhook deliveries move to R2 day archives. */
  EMAIL_HOT_DAYS?: string;
  /** Rows of each kind the archive job moves per shard per cron tick (default 5000). */
  ARCHIVE_ROWS_PER_TICK?: string;
  WORKFLOW_EXECUTION_RETENTION_DAYS?: string;
  /** Per-project quotas (defaults in src/services/quotas.ts, docs/configuration.md "Limits and quotas"). */
  QUOTA_CONTACTS?: string;
  QUOTA_EVENTS_PER_DAY?: string;
  QUOTA_PUBLIC_CONTACTS_PER_DAY?: string;
  QUOTA_PUBLIC_EVENTS_PER_DAY?: string;
  QUOTA_EMAILS_PER_DAY?: string;
  QUOTA_DOMAINS?: string;
  QUOTA_STORED_BYTES?: string;
  QUOTA_R2_STORED_BYTES?: string;
  QUOTA_TEMPLATES?: string;
  QUOTA_CAMPAIGNS?: string;
  QUOTA_SEGMENTS?: string;
  QUOTA_TOPICS?: string;
  QUOTA_SUPPRESSIONS?: string;
  /** Received messages per project per UTC day (default 10,000). */
  QUOTA_INBOUND_PER_DAY?: string;
  /** The domain the Worker receives mail on (Email Routing to its email() handler); unset, nothing is received and no reply address is given. */
  INBOUND_DOMAIN?: string;
  /** The largest message email() accepts, in bytes (default 10 MiB, at most 25 MiB). */
  INBOUND_MAX_BYTES?: string;
  QUOTA_WORKFLOW_VERSIONS?: string;
  /** Workers Rate Limiting binding: key-less work per client IP (src/middleware/client-limit.ts). Optional: absent, nothing is limited. */
  CLIENT_LIMITER?: RateLimit;
  /** WEBHOOK step calls per minute per project (default 600). */
  WORKFLOW_WEBHOOKS_PER_MINUTE?: string;
  /** Cloudflare Email Service `send_email` binding, used when EMAIL_PROVIDER=cloudflare. */
  EMAIL?: SendEmail;
  /** "1" (with ENVIRONMENT=development): count D1 statements for the bench (GET /dev/d1-stats). */
  BENCH_COUNT_D1?: string;
  /** Producer for send-email work: messages {emailId, projectId}. */
  EMAIL_QUEUE: Queue<SendEmailMessage>;
  /** Workflow triggers and terminations (src/services/workflows/triggers.ts). */
  WORKFLOW_QUEUE: Queue<WorkflowQueueMessage>;
  /** Cloudflare Workflows binding of AutomationWorkflow: one instance per workflow execution. */
  AUTOMATIONS: Workflow<ExecutionParams>;
  /** Event webhooks: fan-out and delivery messages (src/services/webhooks/consumer.ts). */
  WEBHOOK_QUEUE: Queue<WebhookQueueMessage>;
  /** Days webhook deliveries are kept (default 30); per-project caps (defaults 20 endpoints, 1200 attempts a minute, 100,000 pending); the answer's headers within 3000 ms. */
  WEBHOOK_RETENTION_DAYS?: string;
  WEBHOOK_ENDPOINTS_PER_PROJECT?: string;
  WEBHOOK_DELIVERIES_PER_MINUTE?: string;
  WEBHOOK_PENDING_PER_PROJECT?: string;
  WEBHOOK_CONNECT_TIMEOUT_MS?: string;
  /** Producer for bulk (campaign) work: audience pages and campaign emails; transactional mail never queues behind it. */
  EMAIL_BULK_QUEUE: Queue<BulkMessage>;
  /** Contact import chunks (src/services/contact-imports/process.ts). */
  IMPORT_QUEUE: Queue<ImportChunkMessage>;
  /** Received mail to parse and link (src/services/inbound/consume.ts), produced by the email() handler. */
  INBOUND_QUEUE: Queue<InboundQueueMessage>;
  /** Workers Rate Limiting binding: received messages per envelope sender (src/services/inbound/receive.ts). Optional: absent, nothing is limited. */
  INBOUND_SENDER_LIMITER?: RateLimit;
}

export type { SendEmailMessage, WebhookQueueMessage } from "./messages";
