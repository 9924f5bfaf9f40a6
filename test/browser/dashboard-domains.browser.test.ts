import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Api, DOMAIN, type Dashboard, startDashboard } from "./dashboard-harness";

/**
 * A sending domain's tracking on its page, in real headless Chromium against `wrangler dev`
 * (./dashboard-harness.ts): click tracking turned off and a custom tracking hostname set through
 * the form, the CNAME it needs shown, saved through the API; at a phone's width and under axe-core.
 */
let dashboard: Dashboard;
let api: Api;
let url: string;
let domainId: string;

beforeAll(async () => {
  dashboard = await startDashboard("dashboard-domains");
  api = dashboard.api;
  url = dashboard.server.url;
  domainId = (await api("GET", "/domains")).body.data.items[0].id;
}, 180_000);

afterAll(async () => {
  await dashboard?.stop();
});

const overflow = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);

describe("a domain's tracking in the dashboard", () => {
  it("turns click tracking off and sets a tracking hostname, showing the CNAME it needs", async () => {
    const { context, page, problems } = await dashboard.open();
    await dashboard.signIn(page);
    await page.goto(`${url}/app/domains/${domainId}`);
    await page.getByRole("heading", { name: "Tracking" }).waitFor();
    expect(await page.getByLabel(/Track opens/).isChecked()).toBe(true);
    expect(await page.getByLabel(/Track clicks/).isChecked()).toBe(true);

    await page.getByLabel(/Track clicks/).uncheck();
    await page.getByLabel("Tracking hostname").fill(`track.${DOMAIN}`);
    await page.getByRole("button", { name: "Save tracking" }).click();
    await page.getByRole("status").filter({ hasText: "Tracking saved." }).waitFor();
    const saved = (await api("GET", `/domains/${domainId}`)).body;
    expect(saved).toMatchObject({ openTracking: true, clickTracking: false, trackingHostname: `track.${DOMAIN}`, trackingStatus: "PENDING" });
    // The record to add: the hostname, a CNAME to this service's host.
    const record = page.locator("article.record").filter({ hasText: "Tracking" });
    expect(await record.textContent()).toContain(`track.${DOMAIN}`);
    expect(await record.textContent()).toContain(saved.trackingCname);

    // Reloaded, the form shows what was saved; clearing the hostname removes it.
    await page.reload();
    expect(await page.getByLabel(/Track clicks/).isChecked()).toBe(false);
    await page.getByLabel("Tracking hostname").fill("");
    await page.getByRole("button", { name: "Save tracking" }).click();
    await page.getByRole("status").filter({ hasText: "Tracking saved." }).waitFor();
    expect((await api("GET", `/domains/${domainId}`)).body).toMatchObject({ trackingHostname: null, trackingStatus: null });
    expect(problems).toEqual([]);
    await context.close();
  }, 90_000);

  it("fits a 390x844 phone and has no serious or critical axe-core violation", async () => {
    const phone = await dashboard.open({ width: 390, height: 844 });
    await dashboard.signIn(phone.page);
    await phone.page.goto(`${url}/app/domains/${domainId}`);
    await phone.page.getByRole("heading", { name: "Tracking" }).waitFor();
    expect(await overflow(phone.page)).toBeLessThanOrEqual(0);
    expect(phone.problems).toEqual([]);
    await phone.context.close();

    // axe-core is injected as a script: the page's CSP is bypassed for the scan only.
    const { context, page } = await dashboard.open({ bypassCSP: true });
    await dashboard.signIn(page);
    await page.goto(`${url}/app/domains/${domainId}`);
    await page.getByRole("heading", { name: "Tracking" }).waitFor();
    expect(await dashboard.axeCheck(page, "a domain's page")).toEqual([]);
    await context.close();
  }, 90_000);
});
