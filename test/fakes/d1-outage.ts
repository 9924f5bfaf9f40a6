import { env } from "cloudflare:workers";

/** How the database fails; everything not named here is the real D1. */
export interface D1Outage {
  /** The n-th `batch()` call (1-based) throws. */
  batch?: number;
  /** With `batch`: that batch runs first, then throws (the invocation died after it committed). */
  afterCommit?: boolean;
  /** `prepare()` of exactly this SQL throws on its `nth` use (1-based). */
  statement?: { sql: string; nth: number };
  /** Each SQL text is rewritten before it is prepared (e.g. to a missing table: that statement fails when run). */
  rewrite?: (sql: string) => string;
  /** Every method throws: D1 is down. */
  down?: boolean;
  message?: string;
}

/** The one failing D1 of the tests: `db` (the test's D1 by default) failing as `outage` says. */
export function d1Outage(outage: D1Outage, db: D1Database = env.DB): D1Database {
  const message = outage.message ?? "D1 unavailable (test)";
  let batches = 0;
  let uses = 0;
  return new Proxy(db, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target);
      if (outage.down) {
        return typeof value === "function"
          ? () => {
              throw new Error(message);
            }
          : value;
      }
      if (prop === "batch" && outage.batch !== undefined) {
        return async (statements: D1PreparedStatement[]) => {
          const nth = ++batches === outage.batch;
          if (nth && !outage.afterCommit) throw new Error(message);
          const results = await target.batch(statements);
          if (nth) throw new Error(message);
          return results;
        };
      }
      if (prop === "prepare" && (outage.statement || outage.rewrite)) {
        return (sql: string) => {
          if (sql === outage.statement?.sql && ++uses === outage.statement.nth) throw new Error(message);
          return target.prepare(outage.rewrite ? outage.rewrite(sql) : sql);
        };
      }
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}
