import { execFileSync } from "node:child_process";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";

/**
 * The dashboard's API client is typed by dashboard/src/api/schema.d.ts, generated from
 * the app's own /openapi.json. A route or schema change without `npm run dashboard:api`
 * fails here; one that breaks a call the dashboard makes fails `npm run typecheck`.
 * (The script runs in its own process: it loads the Worker's code, whose types are not Node's.)
 */
describe("dashboard API types", () => {
  it("are generated from the current /openapi.json (run `npm run dashboard:api` after changing the API)", () => {
    const out = execFileSync("npx", ["tsx", "scripts/dashboard-api-types.ts", "--check"], { cwd: resolve(__dirname, "../.."), encoding: "utf8" });
    expect(out).toContain("is up to date");
  });
});
