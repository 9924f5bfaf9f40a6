/**
 * Development only (ENVIRONMENT=development with BENCH_COUNT_D1=1): counts the
 * D1 statements the Worker's queue consumers and cron run, for `npm run
 * bench`'s "D1 statements per email" (the HTTP handler is not wrapped: its
 * statements are pinned by tests, and the bench times it). A statement is one SQL statement sent to D1, alone or inside a
 * batch. Counts live in the isolate (wrangler dev runs one) and are read with
 * GET /dev/d1-stats.
 */
export interface D1Stats {
  /** SQL statements sent, alone or inside a batch. */
  statements: number;
  /** db.batch() calls. */
  batches: number;
  /** Round trips to D1: one per batch and one per statement run alone. */
  roundTrips: number;
  captureStatements: number;
}

const zero = (): D1Stats => ({ statements: 0, batches: 0, roundTrips: 0, captureStatements: 0 });

/** Which handler ran a statement: the HTTP API, the queue consumers (the consumer's own count) or the cron. */
export type D1Source = "fetch" | "queue" | "scheduled";

/** Every statement of the isolate, and the same counts per entry point (the Worker wraps DB twice, see src/index.ts). */
export const d1Stats: D1Stats & { bySource: Record<D1Source, D1Stats> } = {
  ...zero(),
  bySource: { fetch: zero(), queue: zero(), scheduled: zero() },
};

/**
 * Tests use countingD1 with stats of their own to pin how many round trips a
 * request costs (test/app.round-trips.test.ts).
 */

const real = new WeakMap<object, { statement: D1PreparedStatement; sql: string }>();

function count(stats: D1Stats, sql: string, capture = sql.includes("captured_messages")) {
  stats.statements++;
  // The capture provider's own writes (it stands in for SES, which writes nothing to D1).
  if (capture) stats.captureStatements++;
}

function wrapStatement(statement: D1PreparedStatement, sql: string, stats: D1Stats): D1PreparedStatement {
  const wrapped = new Proxy(statement, {
    get(target, prop) {
      if (prop === "bind") return (...values: unknown[]) => wrapStatement(target.bind(...values), sql, stats);
      if (prop === "run" || prop === "all" || prop === "first" || prop === "raw") {
        return (...args: unknown[]) => {
          count(stats, sql);
          stats.roundTrips++;
          return (target[prop] as (...a: unknown[]) => unknown).apply(target, args);
        };
      }
      const value = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  real.set(wrapped, { statement, sql });
  return wrapped;
}

export function countingD1(db: D1Database, stats: D1Stats = d1Stats): D1Database {
  return new Proxy(db, {
    get(target, prop) {
      if (prop === "prepare") return (sql: string) => wrapStatement(target.prepare(sql), sql, stats);
      if (prop === "batch") {
        return (statements: D1PreparedStatement[]) => {
          stats.batches++;
          stats.roundTrips++;
          const found = statements.map((s) => real.get(s));
          // A batch of the capture provider's is all its own (the message rows and the raw mail's blob chunks).
          const capture = found.some((f) => f?.sql.includes("captured_messages"));
          const unwrapped = statements.map((s, i) => {
            count(stats, found[i]?.sql ?? "", capture);
            return found[i]?.statement ?? s;
          });
          return target.batch(unwrapped);
        };
      }
      if (prop === "exec") {
        return (sql: string) => {
          count(stats, sql);
          stats.roundTrips++;
          return target.exec(sql);
        };
      }
      const value = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}
