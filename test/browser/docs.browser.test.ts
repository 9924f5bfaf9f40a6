import { chromium, type Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CHROMIUM_MISSING, findChromium } from "./chromium";
import { type DevServer, startWranglerDev } from "../../scripts/lib/local-server.mjs";

/**
 * GET /docs in real headless Chromium against `wrangler dev` (the committed
 * wrangler.toml, its static assets and [build] step): the reference lists
 * every operation of /openapi.json while every request to another origin is
 * refused, and the page's own CSP reports no violation.
 */
let server: DevServer;
let browser: Browser;

beforeAll(async () => {
  const executablePath = findChromium();
  if (!executablePath) throw new Error(CHROMIUM_MISSING);
  [server, browser] = await Promise.all([
    startWranglerDev(),
    chromium.launch({ executablePath, headless: true, args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"] }),
  ]);
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

describe("GET /docs in headless Chromium", () => {
  it("lists every operation of /openapi.json with no request leaving this origin and no CSP violation", async () => {
    const spec = (await (await fetch(`${server.url}/openapi.json`)).json()) as { paths: Record<string, Record<string, unknown>> };
    const methods = new Set(["get", "post", "put", "patch", "delete"]);
    const expected = Object.entries(spec.paths)
      .flatMap(([path, item]) =>
        Object.keys(item)
          .filter((m) => methods.has(m))
          .map((m) => `${m.toUpperCase()} ${path}`),
      )
      .sort();
    expect(expected.length).toBeGreaterThan(10);

    const context = await browser.newContext();
    const outside: string[] = [];
    const origin = new URL(server.url).origin;
    // Offline, as far as the page can tell: anything not from the Worker fails.
    await context.route("**/*", (route) => {
      const url = route.request().url();
      if (url.startsWith(origin) || url.startsWith("data:")) return route.continue();
      outside.push(url);
      return route.abort("internetdisconnected");
    });
    const page = await context.newPage();
    const problems: string[] = [];
    page.on("console", (msg) => {
      if (msg.type() === "error") problems.push(msg.text());
    });
    page.on("pageerror", (err) => problems.push(String(err)));
    page.on("requestfailed", (req) => problems.push(`request failed: ${req.url()}`));

    const response = await page.goto(`${server.url}/docs`, { waitUntil: "load" });
    expect(response?.status()).toBe(200);
    expect(response?.headers()["content-security-policy"]).toContain("script-src 'self'");
    await page.locator(".opblock").first().waitFor({ state: "visible", timeout: 30_000 });

    const listed = (
      await page.locator(".opblock").evaluateAll((blocks) =>
        blocks.map((block) => {
          const method = block.querySelector(".opblock-summary-method")?.textContent?.trim() ?? "";
          const path = block.querySelector(".opblock-summary-path")?.getAttribute("data-path") ?? "";
          return `${method} ${path}`;
        }),
      )
    ).sort();
    expect(listed).toEqual(expected);
    expect(await page.locator(".info .title").textContent()).toContain("Edge Mail API");
    expect(outside).toEqual([]);
    expect(problems).toEqual([]);
    await context.close();
  }, 60_000);
});
