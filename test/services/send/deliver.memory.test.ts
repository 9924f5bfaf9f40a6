import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { Env } from "../../../src/env";
import { BODY_CHARS_PER_READ } from "../../../src/services/send/bodies";
import { FIXED_SQL } from "../../../src/store/emails";
import { sendingSetup } from "../../support/sending";

/**
 * A D1 binding that records, while `recording`, the largest single result any
 * statement returned (in characters of JSON): what one D1 round trip puts in
 * the consumer's memory at once.
 */
function measuringD1(real: D1Database) {
  const state = { recording: false, largest: 0, bodyReads: 0 };
  const note = (result: unknown) => {
    if (state.recording) state.largest = Math.max(state.largest, JSON.stringify(result).length);
    return result;
  };
  const wrap = (statement: D1PreparedStatement): D1PreparedStatement => {
    for (const method of ["raw", "all", "first", "run"] as const) {
      const original = (statement[method] as (...args: unknown[]) => Promise<unknown>).bind(statement);
      Object.defineProperty(statement, method, { value: async (...args: unknown[]) => note(await original(...args)) });
    }
    const bind = statement.bind.bind(statement);
    Object.defineProperty(statement, "bind", { value: (...values: unknown[]) => wrap(bind(...values)) });
    return statement;
  };
  const d1 = new Proxy(real, {
    get(target, property) {
      if (property === "prepare")
        return (sql: string) => {
          if (state.recording && sql === FIXED_SQL.EMAIL_BODIES_SQL) state.bodyReads++;
          return wrap(target.prepare(sql));
        };
      if (property === "batch")
        return async (statements: D1PreparedStatement[]) => {
          const results = await target.batch(statements);
          for (const r of results) note(r);
          return results;
        };
      const value = Reflect.get(target, property);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { d1, state };
}

describe("send consumer memory", () => {
  it("never loads every claimed email's HTML at once: no D1 result of the batch holds more than a few emails' bodies", async () => {
    const { d1, state } = measuringD1(env.DB);
    const s = await sendingSetup({ DB: d1, SEND_RATE_PER_SECOND: "100" } as Partial<Env>);
    const body = `<p>${"x".repeat(200_000)}</p>`;
    const to = Array.from({ length: 20 }, (_, i) => `r${i}@example.com`);
    const res = await s.send({ to, subject: "Big", body, from: s.from });
    expect(res.status, JSON.stringify(res.body).slice(0, 300)).toBe(200);
    state.recording = true;
    await s.deliver();
    state.recording = false;
    // All 20 went out...
    expect(s.ses.calls).toHaveLength(20);
    expect(JSON.stringify(s.ses.calls[0])).toContain("x".repeat(1000));
    // ...no single D1 result held more than one group of the 200 KB bodies (the claim used to return all 20: 4 MB)...
    expect(state.largest).toBeLessThan(BODY_CHARS_PER_READ + 10_000);
    // ...and the bodies took one read per group (as many bodies as fit in BODY_CHARS_PER_READ), not one per email.
    expect(state.bodyReads).toBe(Math.ceil(20 / Math.floor(BODY_CHARS_PER_READ / 200_010)));
  });
});
