import type { Env } from "../env";
import { ApiError } from "../lib/errors";

/**
 * Per-project quotas. One tenant must not be able to fill the shared D1 or
 * use up the shared provider account, so every project has generous limits,
 * each a Worker setting (wrangler.toml [vars]) with the default below. Past a
 * stock quota (contacts, domains, stored bytes) a write is refused with 403
 * QUOTA_EXCEEDED; past a daily quota (emails, events, counted per UTC day)
 * with 429 QUOTA_EXCEEDED and Retry-After until the next UTC midnight.
 * README "Limits and quotas" lists them.
 */
export const QUOTA_DEFAULTS = {
  /** Contacts stored per project. */
  QUOTA_CONTACTS: 1_000_000,
  /** Events recorded per project per UTC day (POST /v1/track and the service's own email.* events). */
  QUOTA_EVENTS_PER_DAY: 1_000_000,
  /** Emails accepted per project per UTC day (every recipient of /v1/send counts one). */
  QUOTA_EMAILS_PER_DAY: 100_000,
  /** Sending domains per project. */
  QUOTA_DOMAINS: 50,
  /** Bytes stored per project: email HTML, attachments and contact data, as counted by the retention job. */
  QUOTA_STORED_BYTES: 5 * 1024 * 1024 * 1024,
} as const;

export type QuotaName = keyof typeof QUOTA_DEFAULTS;

/** The configured limit (a positive number in the setting), or the default. */
export function quotaLimit(env: Env, name: QuotaName): number {
  const configured = Number((env as unknown as Record<string, unknown>)[name]);
  return Number.isFinite(configured) && configured > 0 ? Math.floor(configured) : QUOTA_DEFAULTS[name];
}

const WHAT: Record<QuotaName, string> = {
  QUOTA_CONTACTS: "contacts",
  QUOTA_EVENTS_PER_DAY: "events per day",
  QUOTA_EMAILS_PER_DAY: "emails per day",
  QUOTA_DOMAINS: "sending domains",
  QUOTA_STORED_BYTES: "bytes of stored mail and data",
};

/** Seconds until the next UTC midnight, when the daily quotas start again. */
export function secondsUntilUtcMidnight(now = new Date()): number {
  const next = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1);
  return Math.max(1, Math.ceil((next - now.getTime()) / 1000));
}

/** The error for a quota that a write would pass. */
export function quotaExceeded(name: QuotaName, limit: number, now = new Date()): ApiError {
  const daily = name === "QUOTA_EMAILS_PER_DAY" || name === "QUOTA_EVENTS_PER_DAY";
  const message = `This project has reached its quota of ${limit} ${WHAT[name]}`;
  if (daily) {
    const retryAfter = secondsUntilUtcMidnight(now);
    return new ApiError(429, "QUOTA_EXCEEDED", message, {
      headers: { "Retry-After": String(retryAfter) },
      suggestion: `The daily quota starts again at 00:00 UTC (in ${retryAfter} seconds). An operator can raise ${name}.`,
    });
  }
  return new ApiError(403, "QUOTA_EXCEEDED", message, {
    suggestion: `Delete what is no longer needed, or ask an operator to raise ${name}.`,
  });
}
