import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { API_TYPES_FILE, generateApiTypes } from "../../scripts/dashboard-api-types";

/**
 * The dashboard's API client is typed by dashboard/src/api/schema.d.ts, generated from
 * the app's own /openapi.json. A route or schema change without `npm run dashboard:api`
 * fails here; one that breaks a call the dashboard makes fails `npm run typecheck`.
 */
describe("dashboard API types", () => {
  it("are generated from the current /openapi.json (run `npm run dashboard:api` after changing the API)", async () => {
    const committed = readFileSync(API_TYPES_FILE, "utf8");
    expect(committed === (await generateApiTypes()), "dashboard/src/api/schema.d.ts is stale: run `npm run dashboard:api`").toBe(true);
  });
});
