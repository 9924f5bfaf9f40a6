import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Api, type Dashboard, startDashboard } from "./dashboard-harness";

/**
 * The webhooks pages in real headless Chromium against `wrangler dev` (./dashboard-harness.ts): an endpoint
 * created, edited, its secret rotated, a test sent and, since http://127.0.0.1:9 refuses every call, its
 * failed delivery retried from the log; then deleted. At a phone's width and under axe-core too.
 */
let dashboard: Dashboard;
let api: Api;
let url: string;

beforeAll(async () => {
  dashboard = await startDashboard("dashboard-webhooks");
  api = dashboard.api;
  url = dashboard.server.url;
}, 180_000);

afterAll(async () => {
  await dashboard?.stop();
});

const overflow = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
type Delivery = { id: string; type: string; status: string; attempts: number; lastError: string | null };
const deliveriesOf = async (id: string): Promise<Delivery[]> => (await api("GET", `/webhooks/${id}/deliveries`)).body.data.items;

describe("the dashboard's webhooks pages", () => {
  let webhookId: string;

  it("creates an endpoint for chosen events and shows its secret once, edits it, and rotates the secret", async () => {
    const { context, page, problems } = await dashboard.open();
    await dashboard.signIn(page);
    await dashboard.nav(page, "Webhooks");
    await page.getByRole("link", { name: "New webhook" }).click();
    await page.getByLabel("Endpoint URL").fill("http://127.0.0.1:9/crm");
    await page.getByLabel("Description").fill("CRM sync");
    await page.getByRole("radio", { name: /Only the types checked/ }).check();
    await page.getByRole("checkbox", { name: /email\.bounced/ }).check();
    await page.getByRole("checkbox", { name: /contact\.created/ }).check();
    await page.getByRole("button", { name: "Create endpoint" }).click();
    await page.waitForURL(/\/app\/webhooks\/(?!new$)[^/]+$/);
    webhookId = page.url().split("/").pop()!;
    const secret = await page.getByTestId("webhook-secret").textContent();
    expect(secret).toMatch(/^whsec_/);
    const created = (await api("GET", `/webhooks/${webhookId}`)).body;
    expect(created).toMatchObject({ url: "http://127.0.0.1:9/crm", description: "CRM sync", enabled: true });
    expect([...created.events].sort()).toEqual(["contact.created", "email.bounced"]);
    // Shown only right after create: the page opened again has no secret.
    await page.reload();
    await page.locator("h1", { hasText: "http://127.0.0.1:9/crm" }).waitFor();
    expect(await page.getByTestId("webhook-secret").count()).toBe(0);
    expect(await page.locator("main").textContent()).not.toContain(secret);

    // Edit: another URL, every event type.
    await page.getByText("Edit endpoint").click();
    const form = page.locator(".crm-edit");
    await form.getByLabel("Endpoint URL").fill("http://127.0.0.1:9/crm-edited");
    await form.getByRole("radio", { name: /Every event type/ }).check();
    await form.getByRole("button", { name: "Save endpoint" }).click();
    await expect.poll(() => form.getByRole("status").textContent()).toContain("Endpoint saved");
    expect((await api("GET", `/webhooks/${webhookId}`)).body).toMatchObject({ url: "http://127.0.0.1:9/crm-edited", events: [] });
    await expect.poll(() => page.locator("h1").textContent()).toBe("http://127.0.0.1:9/crm-edited");
    // Disabled and enabled again.
    await form.getByRole("checkbox", { name: "Enabled" }).uncheck();
    await form.getByRole("button", { name: "Save endpoint" }).click();
    await expect.poll(async () => (await api("GET", `/webhooks/${webhookId}`)).body.enabled).toBe(false);
    await expect.poll(() => page.getByRole("button", { name: "Send test event" }).isDisabled()).toBe(true);
    await form.getByRole("checkbox", { name: "Enabled" }).check();
    await form.getByRole("button", { name: "Save endpoint" }).click();
    await expect.poll(async () => (await api("GET", `/webhooks/${webhookId}`)).body.enabled).toBe(true);

    await page.getByRole("button", { name: "Rotate secret" }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Rotate", exact: true }).click();
    await expect.poll(() => page.getByTestId("webhook-secret").textContent()).toMatch(/^whsec_/);
    expect(await page.getByTestId("webhook-secret").textContent()).not.toBe(secret);
    await expect.poll(() => page.locator(".page > .notice").textContent()).toContain("Secret rotated");
    expect(await page.getByRole("button", { name: "Copy signing secret" }).count()).toBe(1);
    expect(problems).toEqual([]);
    await context.close();
  }, 90_000);

  it("sends a test event, shows the failed delivery in the log and retries it", async () => {
    const { context, page, problems } = await dashboard.open();
    await dashboard.signIn(page);
    await page.goto(`${url}/app/webhooks/${webhookId}`);
    await page.getByRole("button", { name: "Send test event" }).click();
    await expect.poll(() => page.getByRole("status").textContent()).toContain("Test event queued");
    // 127.0.0.1:9 refuses the call: the delivery's first attempt fails and it waits for its next one.
    await expect
      .poll(async () => (await deliveriesOf(webhookId)).find((d) => d.type === "webhook.test")?.lastError ?? null, { timeout: 30_000 })
      .not.toBeNull();
    const retry = page.getByRole("button", { name: /^Retry the webhook\.test delivery/ });
    await expect
      .poll(
        async () => {
          await page.getByRole("button", { name: "Refresh" }).click();
          return retry.count();
        },
        { timeout: 30_000 },
      )
      .toBe(1);
    expect(await page.locator("table").last().textContent()).toContain("webhook.test");
    const before = (await deliveriesOf(webhookId)).find((d) => d.type === "webhook.test")!;
    await dashboard.shot(page, "webhook-deliveries");
    await retry.click();
    await expect.poll(() => page.getByRole("status").textContent()).toContain("Retry of the webhook.test delivery queued");
    await expect
      .poll(async () => (await deliveriesOf(webhookId)).find((d) => d.id === before.id)!.attempts, { timeout: 30_000 })
      .toBeGreaterThan(before.attempts);
    expect(problems).toEqual([]);
    await context.close();
  }, 90_000);

  it("fits a 390x844 phone and has no serious or critical axe-core violation on the webhooks pages", async () => {
    const phone = await dashboard.open({ width: 390, height: 844 });
    await dashboard.signIn(phone.page);
    await dashboard.nav(phone.page, "Webhooks");
    await phone.page.getByRole("link", { name: "http://127.0.0.1:9/crm-edited" }).waitFor();
    expect(await overflow(phone.page), "/webhooks").toBeLessThanOrEqual(0);
    await dashboard.shot(phone.page, "webhooks-390");
    for (const path of ["/webhooks/new", `/webhooks/${webhookId}`]) {
      await phone.page.goto(`${url}/app${path}`);
      await phone.page.locator("h1").first().waitFor();
      await phone.page.waitForFunction(() => !document.body.textContent?.includes("Loading…"));
      if (path === "/webhooks/new") await phone.page.getByRole("radio", { name: /Only the types checked/ }).check();
      else await phone.page.getByText("Edit endpoint").click();
      expect(await overflow(phone.page), path).toBeLessThanOrEqual(0);
    }
    expect(phone.problems).toEqual([]);
    await phone.context.close();

    const { context, page } = await dashboard.open({ bypassCSP: true });
    await dashboard.signIn(page);
    const found: string[] = [];
    for (const path of ["/webhooks", "/webhooks/new", `/webhooks/${webhookId}`]) {
      await page.goto(`${url}/app${path}`);
      await page.locator("h1").first().waitFor();
      await page.waitForFunction(() => !document.body.textContent?.includes("Loading…"));
      if (path === "/webhooks/new") await page.getByRole("radio", { name: /Only the types checked/ }).check();
      else if (path !== "/webhooks") {
        await page.getByText("Edit endpoint").click();
        await page.getByRole("button", { name: "Rotate secret" }).click();
        await page.getByRole("dialog").getByRole("button", { name: "Rotate", exact: true }).click();
        await page.getByTestId("webhook-secret").waitFor();
        await dashboard.shot(page, "webhooks-1280");
      }
      found.push(...(await dashboard.axeCheck(page, path)));
    }
    expect(found).toEqual([]);
    await context.close();
  }, 90_000);

  it("deletes the endpoint after confirming", async () => {
    const { context, page, problems } = await dashboard.open();
    await dashboard.signIn(page);
    await page.goto(`${url}/app/webhooks/${webhookId}`);
    await page.getByRole("button", { name: "Delete webhook" }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Delete", exact: true }).click();
    await page.waitForURL(/\/app\/webhooks$/);
    expect((await api("GET", `/webhooks/${webhookId}`)).status).toBe(404);
    expect(problems).toEqual([]);
    await context.close();
  });
});
