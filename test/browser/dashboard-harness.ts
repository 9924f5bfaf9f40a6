import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import type { Server } from "node:http";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";
import { expect } from "vitest";
import { CHROMIUM_MISSING, findChromium } from "./chromium";
import { freePort, startWranglerDev, type DevServer, startFakeDoh, type FakeZone } from "../../scripts/lib/local-server.mjs";

/**
 * One dashboard under test: `wrangler dev` (the committed wrangler.toml, its [build] step, static
 * assets, local D1 and queues, the capture provider) with a project made by `scripts/project.ts`,
 * a sending domain verified through the API against a DNS-over-HTTPS fake on localhost, three
 * contacts, and headless Chromium. Each browser test file starts its own (its own port and state).
 */
const root = resolve(__dirname, "../..");
export const SHOTS = join(root, "docs", "screenshots");
export const DOMAIN = "dashboard.test";
const require = createRequire(import.meta.url);
const axeSource = require.resolve("axe-core/axe.min.js");

export type Api = (method: string, path: string, body?: unknown) => Promise<{ status: number; body: any }>;

export interface Dashboard {
  server: DevServer;
  browser: Browser;
  secretKey: string;
  /** A call to the API with the project's secret key: JSON in, status and JSON out. */
  api: Api;
  /** A page that records console errors (CSP violations among them) and failed requests. */
  open(options?: {
    width?: number;
    height?: number;
    bypassCSP?: boolean;
  }): Promise<{ context: import("playwright-core").BrowserContext; page: Page; problems: string[] }>;
  signIn(page: Page, key?: string): Promise<void>;
  /** Follows a link of the main navigation (opening the phone menu when the links are hidden) and waits for its heading. */
  nav(page: Page, name: string): Promise<void>;
  /** A screenshot into docs/screenshots/<name>.png. */
  shot(page: Page, name: string): Promise<Buffer>;
  /** Serious and critical axe-core violations on the page (the context must bypass CSP), as readable lines. */
  axeCheck(page: Page, label: string): Promise<string[]>;
  stop(): Promise<void>;
}

const npx = (args: string[]) =>
  execFileSync("npx", args, { cwd: root, encoding: "utf8", env: { ...process.env, CI: "1", WRANGLER_SEND_METRICS: "false", NO_COLOR: "1" } });

/** `vars`: more Worker variables for this file's `wrangler dev` (INBOUND_DOMAIN for the inbox). */
export async function startDashboard(name: string, vars: Record<string, string> = {}): Promise<Dashboard> {
  const executablePath = findChromium();
  if (!executablePath) throw new Error(CHROMIUM_MISSING);
  const zone: FakeZone = new Map();
  const dohPort = await freePort();
  const doh: Server = startFakeDoh(dohPort, zone);
  const state = mkdtempSync(join(tmpdir(), `edge-mail-${name}-`));
  npx(["wrangler", "d1", "migrations", "apply", "DB", "--local", "--persist-to", state]);
  const secretKey = JSON.parse(npx(["tsx", "scripts/project.ts", "create", name, "--json", "--persist-to", state]).trim().split("\n").pop()!).secretKey;
  const [server, browser] = await Promise.all([
    startWranglerDev(
      {
        ENVIRONMENT: "development",
        EMAIL_PROVIDER: "capture",
        PUBLIC_URL: "http://127.0.0.1",
        LINK_SIGNING_SECRET: "dashboard-test-link-signing-secret-0123456789",
        DKIM_ENCRYPTION_KEY: "dashboard-test-dkim-encryption-key-0123456789",
        DOH_URL: `http://127.0.0.1:${dohPort}/dns-query`,
        ...vars,
      },
      { persistTo: state },
    ),
    chromium.launch({ executablePath, headless: true, args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"] }),
  ]);

  const api: Api = async (method, path, body) => {
    const res = await fetch(server.url + path, {
      method,
      headers: { Authorization: `Bearer ${secretKey}`, "Content-Type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  };

  // A verified sending domain (campaigns need one) and three contacts, through the API.
  const domain = await api("POST", "/domains", { domain: DOMAIN });
  expect(domain.status, JSON.stringify(domain.body)).toBe(201);
  for (const r of domain.body.records as { type: string; name: string; value: string; priority?: number }[]) {
    const data = r.type === "MX" ? `${r.priority ?? 10} ${r.value}.` : (r.value.match(/.{1,255}/g) ?? [""]).map((c) => `"${c}"`).join(" ");
    zone.set(r.name, [...(zone.get(r.name) ?? []), { type: r.type, data }]);
  }
  const verified = await api("POST", `/domains/${domain.body.id}/verify`);
  expect(verified.body.status, JSON.stringify(verified.body)).toBe("VERIFIED");
  for (const [email, firstName, plan] of [
    ["ada@example.net", "Ada", "pro"],
    ["grace@example.net", "Grace", "pro"],
    ["linus@example.net", "Linus", "free"],
  ]) {
    const created = await api("POST", "/contacts", { email, data: { firstName, plan } });
    expect(created.status, JSON.stringify(created.body)).toBeLessThan(300);
  }
  mkdirSync(SHOTS, { recursive: true });

  const dashboard: Dashboard = {
    server,
    browser,
    secretKey,
    api,
    async open(options = {}) {
      const context = await browser.newContext({ viewport: { width: options.width ?? 1280, height: options.height ?? 800 }, bypassCSP: options.bypassCSP });
      const page = await context.newPage();
      const problems: string[] = [];
      page.on("console", (msg) => {
        // 4xx answers the page expects (a wrong key) are logged by Chromium as failed resources.
        if (msg.type() === "error" && !/status of 40[14]/.test(msg.text())) problems.push(msg.text());
      });
      page.on("pageerror", (err) => problems.push(String(err)));
      return { context, page, problems };
    },
    async signIn(page, key = secretKey) {
      await page.goto(`${server.url}/app/`);
      await page.getByLabel("Secret key").fill(key);
      await page.getByRole("button", { name: "Sign in" }).click();
      if (key === secretKey) await page.getByRole("button", { name: "Sign out" }).waitFor();
    },
    async nav(page, name) {
      const menu = page.getByRole("button", { name: "Menu" });
      const link = page.getByRole("navigation", { name: "Main" }).getByRole("link", { name, exact: true });
      // On a phone the links are behind the menu button (a user opens it only when they are hidden).
      if (!(await link.isVisible()) && (await menu.isVisible())) await menu.click();
      await link.click();
      await expect.poll(() => page.locator("h1").first().textContent()).toContain(name);
    },
    shot: (page, name) => page.screenshot({ path: join(SHOTS, `${name}.png`) }),
    async axeCheck(page, label) {
      await page.addScriptTag({ path: axeSource });
      const violations = await page.evaluate(async () => {
        const result = await (window as any).axe.run(document, { resultTypes: ["violations"] });
        return result.violations.map((v: { id: string; impact: string; nodes: { target: string[] }[] }) => ({
          id: v.id,
          impact: v.impact,
          targets: v.nodes.map((n) => n.target.join(" ")),
        }));
      });
      type Violation = { id: string; impact: string; targets: string[] };
      return (violations as Violation[])
        .filter((v) => v.impact === "serious" || v.impact === "critical")
        .map((v) => `${label}: ${v.id} (${v.impact}) at ${v.targets.join(", ")}`);
    },
    async stop() {
      await browser?.close();
      await server?.stop();
      doh?.close();
      rmSync(state, { recursive: true, force: true });
    },
  };
  return dashboard;
}
