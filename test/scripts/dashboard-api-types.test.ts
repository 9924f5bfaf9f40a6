import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { API_TYPES_FILE, generateApiTypes, openApiDocument } from "../../scripts/dashboard-api-types";

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

  it("cover every path and method the document lists", async () => {
    const doc = (await openApiDocument()) as { paths: Record<string, Record<string, unknown>> };
    const committed = readFileSync(API_TYPES_FILE, "utf8");
    for (const [path, item] of Object.entries(doc.paths)) {
      expect(committed, path).toContain(`"${path}": {`);
      for (const method of Object.keys(item).filter((m) => ["get", "post", "patch", "put", "delete"].includes(m))) {
        const block = committed.slice(committed.indexOf(`"${path}": {`));
        expect(block, `${method} ${path}`).toMatch(new RegExp(`\\n        ${method}: \\{`));
      }
    }
  });
});
