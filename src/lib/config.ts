import * as z from "zod";
import type { Env } from "../env";
import { ApiError } from "./errors";

/**
 * Every setting of the Worker that has a default: numbers, flags, names and
 * URLs from wrangler.toml [vars] / .dev.vars, parsed by one zod schema. A
 * setting that is missing, empty or not valid (e.g. "abc" or "-5" for a
 * number) takes its default, so a typo never takes the service down.
 * Secrets that only some features need are not here: see requireSecret.
 */

/** A positive number setting; `max` caps it, `integer` floors it. */
const positive = (fallback: number, options: { max?: number; integer?: boolean } = {}) =>
  z
    .preprocess((raw) => (raw === undefined || raw === "" ? fallback : Number(raw)), z.number().finite().positive())
    .transform((n) => Math.min(options.integer ? Math.floor(n) : n, options.max ?? Infinity))
    .catch(fallback);

/** A text setting, trimmed; empty means the default. */
const text = (fallback: string) => z.preprocess((raw) => (typeof raw === "string" && raw.trim() !== "" ? raw.trim() : fallback), z.string()).catch(fallback);

/** Text that may be absent (no default). */
const optionalText = z.preprocess((raw) => (typeof raw === "string" && raw.trim() !== "" ? raw.trim() : undefined), z.string().optional()).catch(undefined);

const ConfigSchema = z.object({
  /** "development" enables local-only conveniences; "test" is the test suite; anything else is a deployment. */
  ENVIRONMENT: text("production"),
  /** API requests per minute per project. */
  RATE_LIMIT_PER_MINUTE: positive(1000),
  /** WEBHOOK step calls per minute per project (its ProjectLimiter); past it the step is retried later. */
  WORKFLOW_WEBHOOKS_PER_MINUTE: positive(600),
  /** Emails per second per project, enforced by the project's Durable Object. */
  SEND_RATE_PER_SECOND: positive(14),
  /** "ses", "cloudflare" or "capture" (local development and tests only); checked where the provider is built. */
  EMAIL_PROVIDER: text("ses"),
  /**
   * The provider of BROADCAST mail (campaigns, topic and marketing sends; src/services/consent/gates.ts):
   * "ses" or "capture"; default EMAIL_PROVIDER. "cloudflare" carries transactional mail only, so broadcast
   * mail is then refused (409). With EMAIL_PROVIDER=cloudflare and this "ses", each stream has its provider.
   */
  EMAIL_PROVIDER_BROADCAST: optionalText.transform((v) => v?.toLowerCase()),
  SES_REGION: text("us-east-1").transform((region) => region.toLowerCase()),
  /** SES API base URL override (a local fake); default https://email.<SES_REGION>.amazonaws.com. */
  SES_ENDPOINT: optionalText.transform((url) => url?.replace(/\/+$/, "")),
  /** Time a provider call may take; at most 2 minutes, far below the 15-minute claim lease. */
  SES_TIMEOUT_MS: positive(30_000, { max: 120_000 }),
  SES_CONFIGURATION_SET: optionalText,
  /** Comma-separated SNS topic ARNs accepted by POST /webhooks/ses; empty accepts none. */
  SES_SNS_TOPIC_ARNS: z
    .preprocess((raw) => (typeof raw === "string" ? raw : ""), z.string())
    .transform((value) =>
      value
        .split(",")
        .map((t) => t.trim())
        .filter(Boolean),
    )
    .catch([]),
  /** Base URL of this service as recipients reach it, without a trailing slash; see publicUrl. */
  PUBLIC_URL: optionalText.transform((url) => url?.replace(/\/+$/, "") || undefined),
  DOH_URL: text("https://cloudflare-dns.com/dns-query"),
  DOH_TIMEOUT_MS: positive(3000),
  /** Defaults follow the provider (see domainRecordConfig). */
  SPF_INCLUDE: optionalText.transform((v) => v?.toLowerCase()),
  MAIL_FROM_SUBDOMAIN: optionalText.transform((v) => v?.toLowerCase()),
  EMAIL_HTML_RETENTION_DAYS: positive(30),
  EVENT_RETENTION_DAYS: positive(365),
  /** Days an email's record (status, subject, counters) is kept once final; its HTML goes after EMAIL_HTML_RETENTION_DAYS. */
  EMAIL_RETENTION_DAYS: positive(365),
  /**
   * The hot window (days): email records, events and webhook deliveries older than it move from D1 to
   * day archives in R2 (src/services/archive/); lists and the dashboard cover it, an archived email is read by id.
   */
  EMAIL_HOT_DAYS: positive(90, { integer: true }),
  /** Rows of each kind (emails, events, webhook deliveries) the archive job moves per shard per cron tick. */
  ARCHIVE_ROWS_PER_TICK: positive(5000, { integer: true }),
  /** Days a finished workflow execution (completed, exited, failed, cancelled) is kept. */
  WORKFLOW_EXECUTION_RETENTION_DAYS: positive(90),
  // Per-project quotas (src/services/quotas.ts, docs/configuration.md "Limits and quotas").
  /** Contacts stored per project. */
  QUOTA_CONTACTS: positive(1_000_000, { integer: true }),
  /** Events recorded per project per UTC day (POST /v1/track and the service's own email.* events). */
  QUOTA_EVENTS_PER_DAY: positive(1_000_000, { integer: true }),
  /** Contacts a public key (pk_) creates per project per UTC day (they also count in QUOTA_CONTACTS). */
  QUOTA_PUBLIC_CONTACTS_PER_DAY: positive(10_000, { integer: true }),
  /** Events a public key (pk_) records per project per UTC day (they also count in QUOTA_EVENTS_PER_DAY). */
  QUOTA_PUBLIC_EVENTS_PER_DAY: positive(10_000, { integer: true }),
  /** Emails accepted per project per UTC day (every recipient of /v1/send counts one). */
  QUOTA_EMAILS_PER_DAY: positive(100_000, { integer: true }),
  /** Sending domains per project. */
  QUOTA_DOMAINS: positive(50, { integer: true }),
  /**
   * Bytes stored per project, kept by D1 triggers (migration 0019): email HTML and headers,
   * attachments, event and contact data, templates, campaigns and workflow versions.
   */
  QUOTA_STORED_BYTES: positive(5 * 1024 * 1024 * 1024, { integer: true }),
  /**
   * Bytes a project keeps in R2 (projects.r2_stored_bytes: sent bodies and every other object counted in
   * r2_usage), apart from QUOTA_STORED_BYTES; past it new mail is refused. 50 GiB is about $0.75 a month at R2's price.
   */
  QUOTA_R2_STORED_BYTES: positive(50 * 1024 * 1024 * 1024, { integer: true }),
  /** Templates per project. */
  QUOTA_TEMPLATES: positive(1_000, { integer: true }),
  /** Campaigns per project (any status). */
  QUOTA_CAMPAIGNS: positive(10_000, { integer: true }),
  /** Segments per project. */
  QUOTA_SEGMENTS: positive(500, { integer: true }),
  QUOTA_TOPICS: positive(100, { integer: true }),
  /** Suppression list entries per project; past it POST /suppressions adds none (bounces and complaints are always recorded). */
  QUOTA_SUPPRESSIONS: positive(1_000_000, { integer: true }),
  /** Received messages per project per UTC day; past it email() rejects the message. */
  QUOTA_INBOUND_PER_DAY: positive(10_000, { integer: true }),
  /** The domain inbound mail arrives on (docs/deploy.md "Receiving mail"); unset, receiving and reply tracking are off. */
  INBOUND_DOMAIN: optionalText.transform((v) => v?.toLowerCase()),
  /** The largest message email() accepts; Email Routing itself stops at 25 MiB. */
  INBOUND_MAX_BYTES: positive(10 * 1024 * 1024, { integer: true, max: 25 * 1024 * 1024 }),
  /** Stored versions of one workflow (unused old ones are pruned by the cron). */
  QUOTA_WORKFLOW_VERSIONS: positive(100, { integer: true }),
  /** Contact imports PENDING or PROCESSING per project; past it POST /contacts/imports answers 409. */
  MAX_ACTIVE_IMPORTS_PER_PROJECT: positive(2, { integer: true }),
  /** Workflow executions RUNNING or WAITING per project; past it a trigger starts nothing (skipped and logged). */
  MAX_ACTIVE_EXECUTIONS_PER_PROJECT: positive(10_000, { integer: true }),
  /** Days webhook deliveries (and their events) are kept. */
  WEBHOOK_RETENTION_DAYS: positive(30),
  /** Webhook endpoints per project. */
  WEBHOOK_ENDPOINTS_PER_PROJECT: positive(20, { integer: true }),
  /** Webhook delivery attempts per project per minute (its ProjectLimiter, counted before each call); more wait for the paced drain. */
  WEBHOOK_DELIVERIES_PER_MINUTE: positive(1200, { integer: true }),
  /** PENDING webhook deliveries per project; past it a new event's deliveries are FAILED at once with the reason. */
  WEBHOOK_PENDING_PER_PROJECT: positive(100_000, { integer: true }),
  /** A webhook endpoint must send its answer's headers within this (ms); the whole answer within 10 s. */
  WEBHOOK_CONNECT_TIMEOUT_MS: positive(3000, { integer: true, max: 10_000 }),
  // The reputation breaker (src/services/reputation.ts, docs/hardening-notes.md): a project whose
  // rates over the window pass a threshold, with at least the minimum volume sent, stops sending.
  /** Days (UTC, today included) the bounce and complaint rates are measured over. */
  REPUTATION_WINDOW_DAYS: positive(7, { integer: true, max: 30 }),
  /** Emails sent in the window before the rates are judged at all. */
  REPUTATION_MIN_SENT: positive(500, { integer: true }),
  /** Permanent bounces per email sent above which the project is paused (0.05 = 5 %). */
  REPUTATION_MAX_BOUNCE_RATE: positive(0.05, { max: 1 }),
  /** Complaints per email sent above which the project is paused (0.001 = 0.1 %). */
  REPUTATION_MAX_COMPLAINT_RATE: positive(0.001, { max: 1 }),
  /** "1" (development only): count D1 statements and rows for the bench; "all": the HTTP handler's too. */
  BENCH_COUNT_D1: z.preprocess((raw) => raw === "1" || raw === "all", z.boolean()).catch(false),
});

export type Config = z.infer<typeof ConfigSchema> & { development: boolean };
/** The settings as they come in: any subset of the Worker's string variables. */
export type ConfigInput = Partial<Record<keyof z.input<typeof ConfigSchema>, string>>;

const cache = new WeakMap<object, Config>();

/**
 * The Worker's settings, parsed once per env object (one per isolate; tests
 * that pass a modified env get their own parse).
 */
export function readConfig(env: ConfigInput): Config {
  let config = cache.get(env);
  if (!config) {
    const parsed = ConfigSchema.parse(env);
    // The test pool alone defines TEST_MIGRATIONS (vitest.config.ts): ENVIRONMENT=test means nothing elsewhere.
    const testPool = parsed.ENVIRONMENT === "test" && "TEST_MIGRATIONS" in env;
    if (parsed.EMAIL_PROVIDER === "capture" && parsed.ENVIRONMENT !== "development" && !testPool) {
      const message =
        "Server misconfigured: EMAIL_PROVIDER=capture keeps mail in D1 and never sends it; it is only allowed with ENVIRONMENT=development (local). Use ses or cloudflare.";
      console.error(message);
      throw new ApiError("INTERNAL_ERROR", message);
    }
    config = { ...parsed, development: parsed.ENVIRONMENT === "development" };
    cache.set(env, config);
  }
  return config;
}

/**
 * Reads a secret the deployment must set. A missing secret is an operator
 * error: it fails loudly with the secret's name and how to set it, and never
 * falls back to a default (local defaults live in .dev.vars.example).
 */
export function requireSecret(env: Env, name: keyof Env & string, options: { minLength?: number; suggestion?: string } = {}): string {
  const value = env[name];
  if (typeof value === "string" && value.length > 0 && value.length >= (options.minLength ?? 0)) return value;
  const message =
    typeof value === "string" && value.length > 0
      ? `Server misconfigured: the ${name} secret is too short (at least ${options.minLength} characters).`
      : `Server misconfigured: ${name} is not set. Set it with \`wrangler secret put ${name}\` (or in wrangler.toml [vars] for non-secret settings).`;
  console.error(message);
  throw new ApiError("INTERNAL_ERROR", message, options.suggestion ? { suggestion: options.suggestion } : {});
}

/** An HKDF input shorter than this is refused (src/services/domains/dkim.ts). */
export const MIN_ENCRYPTION_KEY_LENGTH = 32;

/**
 * DKIM_ENCRYPTION_KEY: encrypts each domain's DKIM private key and each
 * workflow's webhook secret at rest. Needed only by those features; never defaulted.
 */
export function requireEncryptionKey(env: Pick<Env, "DKIM_ENCRYPTION_KEY">): string {
  return requireSecret(env as Env, "DKIM_ENCRYPTION_KEY", {
    minLength: MIN_ENCRYPTION_KEY_LENGTH,
    suggestion: "An operator must run `openssl rand -base64 32 | npx wrangler secret put DKIM_ENCRYPTION_KEY`.",
  });
}

/** Base URL for links the service puts in mail (tracking, unsubscribe), without a trailing slash. */
export function publicUrl(env: Env, requestUrl?: string): string {
  const config = readConfig(env);
  if (config.PUBLIC_URL) return config.PUBLIC_URL;
  if (config.development && requestUrl) return new URL(requestUrl).origin;
  return requireSecret(env, "PUBLIC_URL");
}

/**
 * Secrets that verify signed links (tracking, unsubscribe): LINK_SIGNING_SECRET,
 * then LINK_SIGNING_SECRET_PREVIOUS when set. New links are always signed with
 * the current secret; during a rotation the previous one keeps the links in
 * mail already sent working until it is removed.
 */
export function linkVerificationSecrets(env: Env): string[] {
  const current = requireSecret(env, "LINK_SIGNING_SECRET");
  const previous = env.LINK_SIGNING_SECRET_PREVIOUS;
  return previous ? [current, previous] : [current];
}
