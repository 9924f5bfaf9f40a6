import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Api, type Dashboard, startDashboard } from "./dashboard-harness";

/**
 * The suppressions page in real headless Chromium against `wrangler dev` (./dashboard-harness.ts):
 * addresses added with a note, the list filtered by reason and by address, one removed after
 * confirming; at a phone's width without sideways scrolling, and under axe-core.
 */
let dashboard: Dashboard;
let api: Api;
let url: string;

beforeAll(async () => {
  dashboard = await startDashboard("dashboard-suppressions");
  api = dashboard.api;
  url = dashboard.server.url;
}, 180_000);

afterAll(async () => {
  await dashboard?.stop();
});

const overflow = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
type Entry = { email: string; reason: string; stream: string; note: string | null };
const entries = async (query = ""): Promise<Entry[]> => (await api("GET", `/suppressions${query}`)).body.data.items;
const rows = (page: Page) => page.locator("main tbody tr");

describe("the dashboard's suppressions page", () => {
  it("adds addresses with a note, filters by reason and address, and removes one after confirming", async () => {
    const { context, page, problems } = await dashboard.open();
    await dashboard.signIn(page);
    await dashboard.nav(page, "Suppressions");
    await page.getByText("No suppressed addresses.").waitFor();

    await page.getByLabel("Addresses").fill("Blocked@Example.org\nlawyer@example.org, blocked@example.org");
    await page.getByLabel("Note (optional)").fill("asked by phone");
    await page.getByRole("button", { name: "Suppress", exact: true }).click();
    await expect.poll(() => page.getByRole("status").first().textContent()).toContain("2 addresses suppressed");
    await expect.poll(() => rows(page).count()).toBe(2);
    expect(await entries()).toEqual([
      expect.objectContaining({ email: "lawyer@example.org", reason: "MANUAL", stream: "ALL", note: "asked by phone" }),
      expect.objectContaining({ email: "blocked@example.org", reason: "MANUAL", stream: "ALL", note: "asked by phone" }),
    ]);
    await expect.poll(() => page.locator("main").textContent()).toContain("2 addresses");
    expect(await rows(page).first().textContent()).toContain("All mail");

    // An unsubscribe is an entry of broadcast mail only.
    const contacts = (await api("GET", "/contacts?search=ada@example.net")).body.contacts;
    expect((await api("PATCH", `/contacts/${contacts[0].id}`, { subscribed: false })).status).toBe(200);
    await page.getByLabel("Reason").selectOption("UNSUBSCRIBE");
    await expect.poll(() => rows(page).count()).toBe(1);
    expect(await rows(page).first().textContent()).toMatch(/ada@example\.net.*Unsubscribed.*Broadcast only/);
    await page.getByLabel("Reason").selectOption("");
    await expect.poll(() => rows(page).count()).toBe(3);

    await page.getByLabel("Address, or its beginning").fill("LAW");
    await page.getByRole("button", { name: "Search" }).click();
    await expect.poll(() => rows(page).count()).toBe(1);
    expect(await rows(page).first().textContent()).toContain("lawyer@example.org");
    await page.getByLabel("Address, or its beginning").fill("");
    await page.getByRole("button", { name: "Search" }).click();
    await expect.poll(() => rows(page).count()).toBe(3);

    await page.getByRole("button", { name: "Remove blocked@example.org" }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Remove", exact: true }).click();
    await expect.poll(() => rows(page).count()).toBe(2);
    await expect.poll(() => page.locator("main").textContent()).toContain("blocked@example.org removed.");
    expect((await entries()).map((e) => e.email).sort()).toEqual(["ada@example.net", "lawyer@example.org"]);
    // Nothing typed is refused before any request; too many addresses too.
    await page.getByLabel("Addresses").fill(" , ");
    await page.getByRole("button", { name: "Suppress", exact: true }).click();
    await expect.poll(() => page.getByRole("alert").first().textContent()).toContain("at least one address");
    expect(problems).toEqual([]);
    await context.close();
  }, 90_000);

  it("fits a 390x844 phone and has no serious or critical axe-core violation", async () => {
    const phone = await dashboard.open({ width: 390, height: 844 });
    await dashboard.signIn(phone.page);
    await dashboard.nav(phone.page, "Suppressions");
    await phone.page.getByRole("cell", { name: "lawyer@example.org", exact: true }).waitFor();
    expect(await overflow(phone.page), "/suppressions").toBeLessThanOrEqual(0);
    await dashboard.shot(phone.page, "suppressions-390");
    expect(phone.problems).toEqual([]);
    await phone.context.close();

    const { context, page } = await dashboard.open({ bypassCSP: true });
    await dashboard.signIn(page);
    await page.goto(`${url}/app/suppressions`);
    await page.getByRole("cell", { name: "lawyer@example.org", exact: true }).waitFor();
    await dashboard.shot(page, "suppressions-1280");
    const found = await dashboard.axeCheck(page, "/suppressions");
    // The confirmation dialog too.
    await page.getByRole("button", { name: "Remove lawyer@example.org" }).click();
    found.push(...(await dashboard.axeCheck(page, "/suppressions (confirm)")));
    expect(found).toEqual([]);
    await context.close();
  }, 90_000);
});
