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

export const OBJECT_PREFIXES = {} satisfies Record<string, ObjectPrefix>;

/** prefixes.ts holds no SQL (test/store/statements.test.ts asks every store module). */
export const FIXED_SQL = {};
