/**
 * Development only (ENVIRONMENT=development with BENCH_COUNT_D1=1): counts the
 * D1 statements the Worker runs, for `npm run bench`'s "D1 statements per
 * email". A statement is one SQL statement sent to D1, alone or inside a
 * batch. Counts live in the isolate (wrangler dev runs one) and are read with
 * GET /dev/d1-stats.
 */
export const d1Stats = { statements: 0, batches: 0, captureStatements: 0 };

const real = new WeakMap<object, { statement: D1PreparedStatement; sql: string }>();

function count(sql: string) {
  d1Stats.statements++;
  // The capture provider's own writes (it stands in for SES, which writes nothing to D1).
  if (sql.includes("captured_messages")) d1Stats.captureStatements++;
}

function wrapStatement(statement: D1PreparedStatement, sql: string): D1PreparedStatement {
  const wrapped = new Proxy(statement, {
    get(target, prop) {
      if (prop === "bind") return (...values: unknown[]) => wrapStatement(target.bind(...values), sql);
      if (prop === "run" || prop === "all" || prop === "first" || prop === "raw") {
        return (...args: unknown[]) => {
          count(sql);
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

export function countingD1(db: D1Database): D1Database {
  return new Proxy(db, {
    get(target, prop) {
      if (prop === "prepare") return (sql: string) => wrapStatement(target.prepare(sql), sql);
      if (prop === "batch") {
        return (statements: D1PreparedStatement[]) => {
          d1Stats.batches++;
          const unwrapped = statements.map((s) => {
            const found = real.get(s);
            count(found?.sql ?? "");
            return found?.statement ?? s;
          });
          return target.batch(unwrapped);
        };
      }
      if (prop === "exec") {
        return (sql: string) => {
          count(sql);
          return target.exec(sql);
        };
      }
      const value = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}
