import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Api, type Dashboard, startDashboard } from "./dashboard-harness";

/**
 * The project's settings page, in real headless Chromium against `wrangler dev` (./dashboard-harness.ts):
 * tracking turned off, an unsubscribe footer of the project's own, reply tracking on, saved through the
 * API; a footer without {{unsubscribeUrl}} refused with the API's reason and nothing saved; at a phone's
 * width and under axe-core.
 */
let dashboard: Dashboard;
let api: Api;
let url: string;

beforeAll(async () => {
  dashboard = await startDashboard("dashboard-settings", { INBOUND_DOMAIN: "in.dashboard.test" });
  api = dashboard.api;
  url = dashboard.server.url;
}, 180_000);

afterAll(async () => {
  await dashboard?.stop();
});

const overflow = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
const FOOTER = '<p>Acme Inc. · <a href="{{unsubscribeUrl}}">Stop these emails</a></p>';

describe("the settings page", () => {
  it("turns tracking off, sets the project's unsubscribe footer and tracks replies; a footer without the link is refused", async () => {
    const { context, page, problems } = await dashboard.open();
    await dashboard.signIn(page);
    await dashboard.nav(page, "Settings");
    await page.getByRole("heading", { name: "Tracking" }).waitFor();
    expect(await page.getByLabel("Open and click tracking").inputValue()).toBe("ENABLED");
    expect(await page.locator("main").textContent()).toContain("in.dashboard.test");

    // A footer without {{unsubscribeUrl}}: the API's 422, shown; nothing saved.
    await page.getByLabel("Unsubscribe footer").fill("<p>Acme Inc.</p>");
    await page.getByRole("button", { name: "Save settings" }).click();
    await expect.poll(() => page.getByRole("alert").textContent()).toContain("unsubscribeUrl");
    expect((await api("GET", "/project")).body.data.unsubscribeFooter).toBeNull();

    await page.getByLabel("Open and click tracking").selectOption("DISABLED");
    await page.getByLabel("Unsubscribe footer").fill(FOOTER);
    await page.getByLabel(/Track replies/).check();
    await page.getByRole("button", { name: "Save settings" }).click();
    await page.getByRole("status").filter({ hasText: "Settings saved." }).waitFor();
    expect((await api("GET", "/project")).body.data).toMatchObject({
      trackingMode: "DISABLED",
      trackingEnabled: false,
      unsubscribeFooter: FOOTER,
      inbound: { trackReplies: true, domain: "in.dashboard.test" },
    });

    // Reloaded, the form shows what was saved.
    await page.reload();
    await page.getByRole("heading", { name: "Tracking" }).waitFor();
    expect(await page.getByLabel("Open and click tracking").inputValue()).toBe("DISABLED");
    expect(await page.getByLabel("Unsubscribe footer").inputValue()).toBe(FOOTER);
    expect(await page.getByLabel(/Track replies/).isChecked()).toBe(true);
    await dashboard.shot(page, "settings-1280");
    // The refused footer's 422 is logged by Chromium as a failed resource load: expected here, nothing else is.
    expect(problems.filter((p) => !/status of 422/.test(p))).toEqual([]);
    await context.close();
  }, 90_000);

  it("fits a 390x844 phone and has no serious or critical axe-core violation", async () => {
    const phone = await dashboard.open({ width: 390, height: 844 });
    await dashboard.signIn(phone.page);
    await phone.page.goto(`${url}/app/settings`);
    await phone.page.getByRole("heading", { name: "Tracking" }).waitFor();
    expect(await overflow(phone.page)).toBeLessThanOrEqual(0);
    await dashboard.shot(phone.page, "settings-390");
    expect(phone.problems).toEqual([]);
    await phone.context.close();

    const { context, page } = await dashboard.open({ bypassCSP: true });
    await dashboard.signIn(page);
    await page.goto(`${url}/app/settings`);
    await page.getByRole("heading", { name: "Tracking" }).waitFor();
    expect(await dashboard.axeCheck(page, "the settings page")).toEqual([]);
    await context.close();
  }, 90_000);
});
