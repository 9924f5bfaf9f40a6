import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Api, type Dashboard, startDashboard } from "./dashboard-harness";

/**
 * The topics page in real headless Chromium against `wrangler dev` (./dashboard-harness.ts): a topic
 * created, edited (its key and default fixed once it exists) and deleted after confirming; under axe-core.
 */
let dashboard: Dashboard;
let api: Api;

beforeAll(async () => {
  dashboard = await startDashboard("dashboard-topics");
  api = dashboard.api;
}, 180_000);

afterAll(async () => {
  await dashboard?.stop();
});

const topics = async () =>
  (await api("GET", "/topics")).body.data.items as { id: string; key: string; name: string; visibility: string; doubleOptIn: boolean }[];

describe("the dashboard's topics page", () => {
  it("creates, edits and deletes a topic", async () => {
    const { context, page, problems } = await dashboard.open({ bypassCSP: true });
    await dashboard.signIn(page);
    await dashboard.nav(page, "Topics");
    await page.getByRole("link", { name: "New topic" }).click();
    await page.getByLabel("Key").fill("product-updates");
    await page.getByLabel("Name").fill("Product updates");
    await page.getByLabel("Description").fill("What we ship");
    await page.getByLabel("Default subscription").selectOption("OPT_OUT");
    await page.getByRole("button", { name: "Create" }).click();
    await expect.poll(() => page.locator("h1").first().textContent()).toContain("Topic: Product updates");
    expect(await topics()).toEqual([expect.objectContaining({ key: "product-updates", name: "Product updates", visibility: "PUBLIC", doubleOptIn: false })]);
    expect(await page.getByLabel("Key").isDisabled()).toBe(true);
    expect(await page.getByLabel("Default subscription").isDisabled()).toBe(true);
    expect(await dashboard.axeCheck(page, "topic page")).toEqual([]);

    await page.getByLabel("Name").fill("Product news");
    await page.getByLabel("Visibility").selectOption("PRIVATE");
    await page.getByRole("button", { name: "Save" }).click();
    await expect.poll(async () => (await topics())[0]?.name).toBe("Product news");
    expect((await topics())[0].visibility).toBe("PRIVATE");

    await dashboard.nav(page, "Topics");
    await page.getByRole("link", { name: "Product news" }).waitFor();
    expect(await dashboard.axeCheck(page, "topics list")).toEqual([]);
    await page.getByRole("link", { name: "Product news" }).click();
    await page.getByRole("button", { name: "Delete topic" }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Delete", exact: true }).click();
    await expect.poll(async () => (await topics()).length).toBe(0);
    expect(problems).toEqual([]);
    await context.close();
  });
});
