/**
 * Development only (ENVIRONMENT=development with BENCH_COUNT_D1=1): counts the
 * D1 statements the Worker's queue consumers and cron run, for `npm run
 * bench`'s "D1 statements per email", and the rows D1 says they read and wrote
 * (`meta.rows_read`, `meta.rows_written`: every table row, index entry and
 * trigger write, what D1 bills). With BENCH_COUNT_D1=all the HTTP handler is
 * counted too (the bench's rows section; its timing sections leave it out:
 * the HTTP paths' statements are pinned by tests). A statement is one SQL
 * statement sent to D1, alone or inside a batch. Counts live in the isolate
 * (wrangler dev runs one) and are read with GET /dev/d1-stats.
 */
export interface D1Stats {
  /** SQL statements sent, alone or inside a batch. */
  statements: number;
  /** db.batch() calls. */
  batches: number;
  /** Round trips to D1: one per batch and one per statement run alone. */
  roundTrips: number;
  captureStatements: number;
  /** D1's meta.rows_written summed: table rows, index entries and the rows triggers wrote. */
  rowsWritten: number;
  /** D1's meta.rows_read summed. */
  rowsRead: number;
  /** Rows the capture provider's own statements wrote (SES writes nothing to D1: the bench leaves them out). */
  captureRowsWritten: number;
  /** The database's size in bytes after the last statement counted (meta.size_after: pages, free ones included). */
  sizeAfter: number;
  /** Rows written by SQL text, when the holder asks for it (a test's breakdown); the HTTP endpoint leaves it out. */
  bySql?: Map<string, { statements: number; rowsWritten: number }>;
}

/** Counters at zero (a test's own, or a reset). */
export const emptyD1Stats = (): D1Stats => ({
  statements: 0,
  batches: 0,
  roundTrips: 0,
  captureStatements: 0,
  rowsWritten: 0,
  rowsRead: 0,
  captureRowsWritten: 0,
  sizeAfter: 0,
});

/** Which handler ran a statement: the HTTP API, the queue consumers (the consumer's own count) or the cron. */
export type D1Source = "fetch" | "queue" | "scheduled";

/** Every statement of the isolate, and the same counts per entry point (see src/index.ts). */
export const d1Stats: D1Stats & { bySource: Record<D1Source, D1Stats> } = {
  ...emptyD1Stats(),
  bySource: { fetch: emptyD1Stats(), queue: emptyD1Stats(), scheduled: emptyD1Stats() },
};

/**
 * Tests use countingD1 with stats of their own to pin how many round trips a
 * request costs (test/app.round-trips.test.ts) and how many rows an email
 * writes over its life (test/store/rows-written.test.ts).
 */

const real = new WeakMap<object, { statement: D1PreparedStatement; sql: string }>();

type Meta = { rows_written?: number; rows_read?: number; size_after?: number } | undefined;

function count(into: readonly D1Stats[], sql: string, capture = sql.includes("captured_messages")) {
  for (const stats of into) {
    stats.statements++;
    // The capture provider's own writes (it stands in for SES, which writes nothing to D1).
    if (capture) stats.captureStatements++;
  }
}

function addMeta(into: readonly D1Stats[], sql: string, meta: Meta, capture = sql.includes("captured_messages")) {
  const written = meta?.rows_written ?? 0;
  const read = meta?.rows_read ?? 0;
  for (const stats of into) {
    stats.rowsWritten += written;
    stats.rowsRead += read;
    if (capture) stats.captureRowsWritten += written;
    if (meta?.size_after) stats.sizeAfter = meta.size_after;
    if (stats.bySql) {
      const entry = stats.bySql.get(sql) ?? { statements: 0, rowsWritten: 0 };
      entry.statements++;
      entry.rowsWritten += written;
      stats.bySql.set(sql, entry);
    }
  }
}

/**
 * first() and raw() answer without D1's meta. They are run here through the
 * statement's own code with its session's send wrapped, so the meta of the
 * one query they make is seen; when the runtime's statement has no such
 * session (another runtime), they run as they are and their rows go uncounted.
 */
function runMetered(target: D1PreparedStatement, prop: "first" | "raw", args: unknown[], onMeta: (meta: Meta) => void): unknown {
  const method = target[prop] as (...a: unknown[]) => unknown;
  const session = (target as unknown as { dbSession?: { _sendOrThrow?: (...a: unknown[]) => Promise<unknown> } }).dbSession;
  const send = session?._sendOrThrow;
  if (!session || typeof send !== "function") return method.apply(target, args);
  const meteredSession = Object.create(session, {
    _sendOrThrow: {
      value: async (...a: unknown[]) => {
        const result = await send.apply(session, a);
        onMeta((Array.isArray(result) ? result[0] : result)?.meta);
        return result;
      },
    },
  });
  return method.apply(Object.create(target, { dbSession: { value: meteredSession } }), args);
}

function wrapStatement(statement: D1PreparedStatement, sql: string, into: readonly D1Stats[]): D1PreparedStatement {
  const wrapped = new Proxy(statement, {
    get(target, prop) {
      if (prop === "bind") return (...values: unknown[]) => wrapStatement(target.bind(...values), sql, into);
      if (prop === "run" || prop === "all") {
        return async (...args: unknown[]) => {
          count(into, sql);
          for (const stats of into) stats.roundTrips++;
          const result = (await (target[prop] as (...a: unknown[]) => Promise<D1Result>).apply(target, args)) as D1Result;
          addMeta(into, sql, result?.meta as Meta);
          return result;
        };
      }
      if (prop === "first" || prop === "raw") {
        return (...args: unknown[]) => {
          count(into, sql);
          for (const stats of into) stats.roundTrips++;
          return runMetered(target, prop, args, (meta) => addMeta(into, sql, meta));
        };
      }
      const value = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  real.set(wrapped, { statement, sql });
  return wrapped;
}

/** `db` with every statement counted into each of `into` (the isolate's d1Stats when none is given). */
export function countingD1(db: D1Database, ...into: D1Stats[]): D1Database {
  const targets = into.length > 0 ? into : [d1Stats];
  return new Proxy(db, {
    get(target, prop) {
      if (prop === "prepare") return (sql: string) => wrapStatement(target.prepare(sql), sql, targets);
      if (prop === "batch") {
        return async (statements: D1PreparedStatement[]) => {
          for (const stats of targets) {
            stats.batches++;
            stats.roundTrips++;
          }
          const found = statements.map((s) => real.get(s));
          // A batch of the capture provider's is all its own (its message rows; the raw mail is in R2).
          const capture = found.some((f) => f?.sql.includes("captured_messages"));
          const unwrapped = statements.map((s, i) => {
            count(targets, found[i]?.sql ?? "", capture);
            return found[i]?.statement ?? s;
          });
          const results = await target.batch(unwrapped);
          for (const [i, result] of results.entries()) addMeta(targets, found[i]?.sql ?? "", result?.meta as Meta, capture);
          return results;
        };
      }
      if (prop === "exec") {
        return (sql: string) => {
          count(targets, sql);
          for (const stats of targets) stats.roundTrips++;
          return target.exec(sql);
        };
      }
      const value = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}
