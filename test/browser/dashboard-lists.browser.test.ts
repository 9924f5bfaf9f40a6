import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Api, type Dashboard, startDashboard } from "./dashboard-harness";

/**
 * Static segments (lists) on the segments page, in real headless Chromium against `wrangler dev`
 * (./dashboard-harness.ts): a list created, members added by pasting addresses (one without a
 * contact reported), one removed; at a phone's width without sideways scrolling, and under axe-core.
 */
let dashboard: Dashboard;
let api: Api;
let url: string;

beforeAll(async () => {
  dashboard = await startDashboard("dashboard-lists");
  api = dashboard.api;
  url = dashboard.server.url;
  for (const email of ["ada@example.org", "grace@example.org", "alan@example.org"]) {
    expect((await api("POST", "/contacts", { email, subscribed: true })).status).toBeLessThan(300);
  }
}, 180_000);

afterAll(async () => {
  await dashboard?.stop();
});

const overflow = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
const members = async (id: string): Promise<string[]> =>
  ((await api("GET", `/segments/${id}/contacts`)).body.data.items as { email: string }[]).map((c) => c.email).sort();

describe("the dashboard's lists (static segments)", () => {
  it("creates a list, adds members by pasting addresses, and removes one", async () => {
    const { context, page, problems } = await dashboard.open();
    await dashboard.signIn(page);
    await dashboard.nav(page, "Segments");
    await page.getByRole("link", { name: "New segment" }).click();
    await page.getByLabel("Name").fill("Beta testers");
    await page.getByLabel("A list: members added by email").check();
    await page.getByRole("button", { name: "Create list" }).click();
    await page.getByText("0 members.").waitFor();
    const id = new URL(page.url()).pathname.split("/").pop()!;
    expect((await api("GET", `/segments/${id}`)).body).toMatchObject({ type: "STATIC", condition: null, memberCount: 0 });

    await page.getByLabel(/Add members/).fill("Ada@example.org, grace@example.org\nnobody@example.org");
    await page.getByRole("button", { name: "Add members" }).click();
    await expect.poll(() => page.locator("main").textContent()).toContain("2 added. No contact for: nobody@example.org.");
    await page.getByText("2 members.").waitFor();
    expect(await members(id)).toEqual(["ada@example.org", "grace@example.org"]);
    await page.getByRole("link", { name: "grace@example.org" }).waitFor();

    await page.getByRole("button", { name: "Remove ada@example.org" }).click();
    await page.getByText("1 member.").waitFor();
    await page.getByRole("status").filter({ hasText: "ada@example.org removed." }).waitFor();
    expect(await members(id)).toEqual(["grace@example.org"]);
    expect(problems).toEqual([]);
    await context.close();
  }, 90_000);

  it("fits a 390x844 phone and has no serious or critical axe-core violation", async () => {
    const list = (await api("GET", "/segments")).body.data.items[0];
    const phone = await dashboard.open({ width: 390, height: 844 });
    await dashboard.signIn(phone.page);
    await phone.page.goto(`${url}/app/segments/${list.id}`);
    await phone.page.getByRole("button", { name: "Add members" }).waitFor();
    expect(await overflow(phone.page), "a list's page").toBeLessThanOrEqual(0);
    expect(phone.problems).toEqual([]);
    await phone.context.close();

    const { context, page } = await dashboard.open({ bypassCSP: true });
    await dashboard.signIn(page);
    await page.goto(`${url}/app/segments/${list.id}`);
    await page.getByRole("button", { name: "Add members" }).waitFor();
    const found = await dashboard.axeCheck(page, "a list's page");
    await page.goto(`${url}/app/segments/new`);
    await page.getByLabel("A list: members added by email").waitFor();
    found.push(...(await dashboard.axeCheck(page, "a new segment")));
    expect(found).toEqual([]);
    await context.close();
  }, 90_000);
});
