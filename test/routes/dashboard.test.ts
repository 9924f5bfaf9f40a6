import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { DASHBOARD_CSP } from "../../src/routes/dashboard";

/**
 * The dashboard's deep links reach the Worker, which answers the app's index.html
 * (from the ASSETS binding, built into public/app/ by vitest.config.ts) with the
 * same policy public/_headers gives the static files.
 */
describe("GET /app/* deep links", () => {
  it("answer the dashboard's index.html with its CSP; a missing asset is 404", async () => {
    expect((env as { ASSETS?: unknown }).ASSETS, "the ASSETS binding").toBeTruthy();
    const res = await exports.default.fetch(new Request("http://edge-mail.test/app/campaigns/123"));
    expect(res.status).toBe(200);
    expect(res.headers.get("Content-Security-Policy")).toBe(DASHBOARD_CSP);
    expect(res.headers.get("Content-Type")).toMatch(/^text\/html/);
    expect(await res.text()).toContain('<div id="root">');
    expect((await exports.default.fetch(new Request("http://edge-mail.test/app/assets/missing.js"))).status).toBe(404);
  });
});
