import type { Config } from "../../lib/config";

/**
 * The R2 bucket (binding STORAGE) is laid out by key prefix, one per kind of object, and each
 * prefix expires by age: in production by the bucket's lifecycle rules, which
 * `npm run setup:cloudflare` creates from this list; locally (ENVIRONMENT development or
 * test) the cron deletes what those rules would. A prefix's writer lives beside this file.
 * Every object that belongs to a project is counted in r2_usage (./usage.ts) under its prefix.
 */
export interface ObjectPrefix {
  /** The key prefix, with its trailing slash. */
  prefix: string;
  /** Days an object is kept after it was written. */
  keepDays: (config: Config) => number;
}

/**
 * Day archives (./archive.ts) are written once records are EMAIL_HOT_DAYS old, so an object is kept
 * what is left of the kind's retention: a record lives EMAIL_RETENTION_DAYS (events: EVENT_, webhook
 * deliveries: WEBHOOK_) in all. A kind kept no longer than the hot window is never archived.
 */
const archiveDays = (retentionDays: number, config: Config) => Math.max(1, Math.ceil(retentionDays) - config.EMAIL_HOT_DAYS);

/** Days an uploaded import file is kept (docs/import-export.md). */
export const IMPORT_FILE_DAYS = 7;

/** Days a received message (its inbound_messages row and raw object) is kept (docs/api.md "Inbound email"). */
export const INBOUND_RETENTION_DAYS = 30;

export const OBJECT_PREFIXES = {
  /** Sent email bodies (./bodies.ts), kept as long as the HTML is (EMAIL_HTML_RETENTION_DAYS). */
  bodies: { prefix: "bodies/", keepDays: (config) => config.EMAIL_HTML_RETENTION_DAYS },
  archiveEmails: { prefix: "archive/emails/", keepDays: (config) => archiveDays(config.EMAIL_RETENTION_DAYS, config) },
  archiveEvents: { prefix: "archive/events/", keepDays: (config) => archiveDays(config.EVENT_RETENTION_DAYS, config) },
  archiveWebhookDeliveries: { prefix: "archive/webhook-deliveries/", keepDays: (config) => archiveDays(config.WEBHOOK_RETENTION_DAYS, config) },
  /** Attachments of a send (./attachments.ts), kept as long as the HTML is. */
  attachments: { prefix: "attachments/", keepDays: (config) => config.EMAIL_HTML_RETENTION_DAYS },
  /** Raw mail of the local `capture` provider (./captured.ts), kept as long as the HTML is. */
  captured: { prefix: "captured/", keepDays: (config) => config.EMAIL_HTML_RETENTION_DAYS },
  /** Uploaded import files (./imports.ts): an import ends within a day of its upload (the cron fails it otherwise). */
  imports: { prefix: "imports/", keepDays: () => IMPORT_FILE_DAYS },
  /** Raw received mail (./inbound.ts), kept as long as its inbound_messages row (INBOUND_RETENTION_DAYS). */
  inbound: { prefix: "inbound/", keepDays: () => INBOUND_RETENTION_DAYS },
} satisfies Record<string, ObjectPrefix>;

/** prefixes.ts holds no SQL (test/store/statements.test.ts asks every store module). */
export const FIXED_SQL = {};
