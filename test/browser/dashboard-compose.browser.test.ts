import type { FrameLocator, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Api, DOMAIN, type Dashboard, startDashboard } from "./dashboard-harness";

/**
 * The campaign composer in real headless Chromium against `wrangler dev` (./dashboard-harness.ts):
 * start from a template, edit the body in the visual editor (GrapesJS, its canvas an iframe), preview
 * it as a chosen contact, send a test rendered with that contact's data, send the campaign and read
 * the headline rates. The mail is checked through the API (GET /emails/{id}: the HTML as sent).
 */
let dashboard: Dashboard;
let api: Api;

const TEMPLATE_BODY = [
  '<h1 id="title">Hello {{firstName ?? there}}</h1>',
  '<p id="plan">Your plan: {{plan ?? "none"}}</p>',
  '<p><a id="account" href="https://example.com/account?plan={{plan}}">Your account</a></p>',
].join("\n");

beforeAll(async () => {
  dashboard = await startDashboard("compose");
  ({ api } = dashboard);
  const template = await api("POST", "/templates", {
    name: "Autumn letter",
    subject: "Autumn news for {{firstName ?? you}}",
    body: TEMPLATE_BODY,
    type: "MARKETING",
    from: `hello@${DOMAIN}`,
  });
  expect(template.status, JSON.stringify(template.body)).toBe(201);
}, 180_000);

afterAll(async () => {
  await dashboard?.stop();
});

const previewFrame = (page: Page) => page.frameLocator('iframe[title="Rendered email preview"]');

/** The GrapesJS canvas (an iframe of this origin), once the editor has loaded the body. */
async function canvas(page: Page): Promise<FrameLocator> {
  await page.locator(".editor-canvas iframe.gjs-frame").waitFor();
  const frame = page.frameLocator(".editor-canvas iframe.gjs-frame");
  await frame.locator("#title").waitFor();
  return frame;
}

async function emailHtml(id: string): Promise<string> {
  const email = await api("GET", `/emails/${id}`);
  expect(email.status, JSON.stringify(email.body)).toBe(200);
  return (email.body.data ?? email.body).html as string;
}

/** A sent campaign email's HTML without what tracking adds: the open pixel, click-tracking links (back to the link they lead to), the signed unsubscribe link. */
function untracked(html: string): string {
  return html
    .replace(/<img[^>]*\/t\/o\/[^>]*>/g, "")
    .replace(/href="[^"]*\/t\/c\/[^"?]*\?u=([^"&]*)[^"]*"/g, (_, u: string) => `href="${decodeURIComponent(u)}"`)
    .replace(/https?:\/\/[^"\s]*\/unsubscribe\/[^"\s<]*/g, "(unsubscribe)");
}

const overflow = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);

describe("the campaign composer", () => {
  it("starts from a template, edits it visually, previews and tests as Grace, sends it and shows the headline rates", async () => {
    const { context, page, problems } = await dashboard.open();
    await dashboard.signIn(page);
    await dashboard.nav(page, "Campaigns");
    await page.getByRole("link", { name: "New campaign" }).click();
    await page.getByRole("button", { name: /^Autumn letter/ }).click();
    expect(await page.getByLabel("Subject").inputValue()).toBe("Autumn news for {{firstName ?? you}}");
    expect(await page.getByLabel("From address").inputValue()).toBe(`hello@${DOMAIN}`);
    await page.getByLabel("Name", { exact: true }).fill("Autumn news");

    // Edit the heading's text in the canvas: double-click opens GrapesJS's text editor there.
    const frame = await canvas(page);
    await frame.locator("#title").dblclick();
    await page.keyboard.press("End");
    await page.keyboard.type(", welcome back");
    await frame.locator("#plan").click(); // leaving the text ends the edit
    await expect.poll(() => previewFrame(page).locator("h1").textContent(), { timeout: 10_000 }).toBe("Hello Ada, welcome back");
    await dashboard.shot(page, "campaign-editor-1280");

    await page.getByRole("button", { name: "Create draft" }).click();
    await page.waitForURL(/\/app\/campaigns\/(?!new$)[^/]+$/);
    const id = page.url().split("/").pop()!;
    const saved = (await api("GET", `/campaigns/${id}`)).body.data;
    // The editor's output keeps the placeholders as written, in text and in the link.
    expect(saved.body).toContain("Hello {{firstName ?? there}}, welcome back");
    expect(saved.body).toContain('Your plan: {{plan ?? "none"}}');
    expect(saved.body).toContain('href="https://example.com/account?plan={{plan}}"');

    // Preview as Grace: her data fills the preview.
    await canvas(page);
    await page.getByLabel("Preview as contact").fill("grace");
    await page.getByRole("button", { name: "grace@example.net" }).click();
    await expect.poll(() => previewFrame(page).locator("h1").textContent()).toBe("Hello Grace, welcome back");
    expect(await previewFrame(page).locator("#plan").textContent()).toBe("Your plan: pro");

    // The test goes to the reviewer, rendered with Grace's data.
    await page.getByLabel("Test recipient").fill("reviewer@example.org");
    await page.getByRole("button", { name: "Send test" }).click();
    await expect
      .poll(() => page.getByRole("status").textContent(), { timeout: 10_000 })
      .toContain("Test email sent to reviewer@example.org with the data of grace@example.net");
    const list = (await api("GET", "/emails?limit=20")).body.data.items as { id: string; to: string; subject: string }[];
    const testEmail = list.find((e) => e.to === "reviewer@example.org")!;
    expect(testEmail.subject).toBe("[TEST] Autumn news for Grace");
    const testHtml = await emailHtml(testEmail.id);
    expect(testHtml).toContain("Hello Grace, welcome back");
    expect(testHtml).toContain("Your plan: pro");
    expect(testHtml).toContain('href="https://example.com/account?plan=pro"');

    // Send to everyone; the report's headline rates are shares of the recipients.
    await page.getByRole("button", { name: "Send campaign" }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Send now" }).click();
    await expect.poll(() => page.locator('[data-stat="sentCount"]').textContent(), { timeout: 45_000 }).toMatch(/^3\b/);
    await expect.poll(() => page.locator(".page-head .status").textContent(), { timeout: 30_000 }).toBe("SENT");
    const rates = await page.locator(".headline dt").allTextContents();
    expect(rates).toEqual(["Delivered", "Opened", "Clicked", "Bounced", "Unsubscribed"]);
    for (const rate of await page.locator(".headline [data-rate]").allTextContents()) expect(rate).toMatch(/^\d+(\.\d)?%$/);
    const fontSize = await page.locator('.headline [data-rate="openedCount"]').evaluate((el) => Number.parseFloat(getComputedStyle(el).fontSize));
    expect(fontSize).toBeGreaterThanOrEqual(32);

    // Grace's campaign email is the test's HTML but for tracking and the subject prefix.
    const sent = (await api("GET", `/emails?campaignId=${id}`)).body.data.items as { id: string; to: string; subject: string }[];
    const graces = sent.find((e) => e.to === "grace@example.net")!;
    expect(graces.subject).toBe("Autumn news for Grace");
    const graceHtml = await emailHtml(graces.id);
    expect(untracked(graceHtml)).toBe(untracked(testHtml));

    // Grace opens it and clicks its link (the tracking URLs of her email, on this server): one of three recipients each.
    const onServer = (url: string) => dashboard.server.url + new URL(url.replace(/&amp;/g, "&")).pathname + new URL(url.replace(/&amp;/g, "&")).search;
    const pixel = /<img[^>]*src="([^"]*\/t\/o\/[^"]*)"/.exec(graceHtml)![1];
    const click = /href="([^"]*\/t\/c\/[^"]*)"/.exec(graceHtml)![1];
    expect((await fetch(onServer(pixel))).status).toBe(200);
    expect((await fetch(onServer(click), { redirect: "manual" })).status).toBe(302);
    await expect
      .poll(
        async () => {
          await page.reload();
          await page.locator(".headline").waitFor();
          return page.locator(".headline [data-rate]").allTextContents();
        },
        { timeout: 30_000, interval: 1_000 },
      )
      .toEqual(["0%", "33.3%", "33.3%", "0%", "0%"]);
    await page.locator(".chart .u-legend").waitFor();
    await dashboard.shot(page, "campaign-stats");
    expect(problems).toEqual([]);
    await context.close();
  }, 150_000);

  it("fits a 390x844 phone, the editor and the templates page included", async () => {
    const { context, page, problems } = await dashboard.open({ width: 390, height: 844 });
    await dashboard.signIn(page);
    await dashboard.nav(page, "Campaigns");
    await page.getByRole("link", { name: "New campaign" }).click();
    await page.getByRole("button", { name: /^Autumn letter/ }).click();
    await canvas(page);
    expect(await overflow(page)).toBeLessThanOrEqual(0);
    await page.locator(".editor-body").evaluate((el) => el.scrollIntoView());
    await dashboard.shot(page, "campaign-editor-390");
    await dashboard.nav(page, "Templates");
    await page.getByRole("link", { name: "Autumn letter" }).click();
    await canvas(page);
    expect(await overflow(page)).toBeLessThanOrEqual(0);
    await page.locator(".editor-body").evaluate((el) => el.scrollIntoView());
    await dashboard.shot(page, "templates-390");
    expect(problems).toEqual([]);
    await context.close();

    const wide = await dashboard.open();
    await dashboard.signIn(wide.page);
    await dashboard.nav(wide.page, "Templates");
    await wide.page.getByRole("link", { name: "Autumn letter" }).click();
    await canvas(wide.page);
    await dashboard.shot(wide.page, "templates-1280");
    expect(wide.problems).toEqual([]);
    await wide.context.close();
  }, 90_000);

  it("has no serious or critical axe-core violation on the composer, the editor, the report and the templates page", async () => {
    const { context, page } = await dashboard.open({ bypassCSP: true });
    await dashboard.signIn(page);
    const found: string[] = [];
    const check = async (label: string) => found.push(...(await dashboard.axeCheck(page, label)));
    await page.goto(`${dashboard.server.url}/app/campaigns/new`);
    await page.getByRole("button", { name: "Start blank" }).waitFor();
    await check("/campaigns/new");
    await page.getByRole("button", { name: "Start blank" }).click();
    await page.locator(".editor-canvas iframe.gjs-frame").waitFor();
    await page.locator(".gjs-block").first().waitFor();
    await check("/campaigns/new (editor)");
    const campaigns = (await api("GET", "/campaigns")).body.campaigns as { id: string; status: string }[];
    await page.goto(`${dashboard.server.url}/app/campaigns/${campaigns.find((c) => c.status === "SENT")!.id}`);
    await page.locator(".headline").waitFor();
    await check("/campaigns/:sent");
    const template = (await api("GET", "/templates")).body.data.items[0];
    await page.goto(`${dashboard.server.url}/app/templates/${template.id}`);
    await page.locator(".editor-canvas iframe.gjs-frame").waitFor();
    await page.locator(".gjs-block").first().waitFor();
    await check("/templates/:id");
    expect(found).toEqual([]);
    await context.close();
  }, 90_000);
});
