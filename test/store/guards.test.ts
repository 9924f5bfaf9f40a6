import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { GUARD_NAMES, guardError, raisedGuard } from "../../src/store/guards";

describe("store guards", () => {
  it("lists exactly the messages the migrated schema's triggers RAISE", async () => {
    const { results } = await env.DB.prepare("SELECT name, sql FROM sqlite_master WHERE type = 'trigger'").all<{ name: string; sql: string }>();
    const raised = new Set<string>();
    for (const trigger of results) for (const m of trigger.sql.matchAll(/RAISE\s*\(\s*ABORT\s*,\s*'([^']+)'\s*\)/gi)) raised.add(m[1]);
    expect([...raised].sort()).toEqual([...GUARD_NAMES].sort());
  });

  it("turns each guard's abort into the API's error, and leaves other errors alone", () => {
    for (const name of GUARD_NAMES) {
      const err = new Error("D1_ERROR", { cause: new Error(`${name}: SQLITE_CONSTRAINT`) });
      expect(raisedGuard(err)).toBe(name);
      if (name === "SEND_HAS_SUPPRESSED_RECIPIENTS") {
        expect(guardError(err, {})).toBeNull();
        continue;
      }
      const api = guardError(err, {});
      expect(api?.status, name).toBeGreaterThanOrEqual(400);
      expect(api?.status, name).toBeLessThan(500);
    }
    expect(raisedGuard(new Error("UNIQUE constraint failed: emails.id"))).toBeNull();
    expect(guardError(new Error("network down"), {})).toBeNull();
  });
});
