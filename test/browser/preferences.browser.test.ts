import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Api, type Dashboard, DOMAIN, startDashboard } from "./dashboard-harness";

/**
 * The hosted preference page ({{preferencesUrl}}) in real headless Chromium against `wrangler dev`
 * (./dashboard-harness.ts): with JavaScript turned off it shows the project's topics and saves the
 * form; under axe-core it has no serious or critical violation.
 */
let dashboard: Dashboard;
let api: Api;
let preferencesUrl: string;
let contactId: string;

beforeAll(async () => {
  dashboard = await startDashboard("preferences");
  api = dashboard.api;
  for (const body of [
    { key: "news", name: "News & product updates", description: "About once a month", defaultSubscription: "OPT_IN", visibility: "PUBLIC" },
    { key: "events", name: "Events near you", defaultSubscription: "OPT_OUT", visibility: "PUBLIC" },
    { key: "internal", name: "Internal", defaultSubscription: "OPT_OUT", visibility: "PRIVATE" },
  ]) {
    const res = await api("POST", "/topics", body);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
  }
  const sent = await api("POST", "/v1/send", {
    to: "ada@example.net",
    from: `news@${DOMAIN}`,
    subject: "Your preferences",
    body: '<p><a href="{{preferencesUrl}}">Choose what you receive</a></p>',
  });
  expect(sent.status, JSON.stringify(sent.body)).toBe(200);
  contactId = sent.body.data.emails[0].contact.id;
  const email = await api("GET", `/emails/${sent.body.data.emails[0].email}`);
  const path = /\/preferences\/[A-Za-z0-9_.~-]+/.exec(decodeURIComponent(email.body.html))?.[0];
  expect(path, email.body.html).toBeDefined();
  preferencesUrl = dashboard.server.url + path;
}, 180_000);

afterAll(async () => {
  await dashboard?.stop();
});

const topicsOf = async () =>
  Object.fromEntries(
    ((await api("GET", `/contacts/${contactId}/topics`)).body.data.items as { key: string; subscription: string }[]).map((t) => [t.key, t.subscription]),
  );

describe("the preference page", () => {
  it("works with JavaScript off: shows the public topics, saves the checked boxes, and unsubscribes from all", async () => {
    const context = await dashboard.browser.newContext({ javaScriptEnabled: false, viewport: { width: 390, height: 844 } });
    const page = await context.newPage();
    await page.goto(preferencesUrl);
    await page.getByRole("heading", { name: "Email preferences" }).waitFor();
    expect(await page.locator("html").getAttribute("lang")).toBe("en");
    expect(await page.locator("main").textContent()).toContain("ada@example.net");
    const news = page.getByLabel("News & product updates");
    const events = page.getByLabel("Events near you");
    expect(await news.isChecked()).toBe(true);
    expect(await events.isChecked()).toBe(false);
    expect(await page.getByText("Internal").count()).toBe(0);
    await dashboard.shot(page, "preferences-page");

    await news.uncheck();
    await events.check();
    await page.getByRole("button", { name: "Save preferences" }).click();
    await page.getByText("Your preferences are saved.").waitFor();
    expect(await page.getByLabel("Events near you").isChecked()).toBe(true);
    expect(await topicsOf()).toEqual({ news: "OPT_OUT", events: "OPT_IN", internal: "OPT_OUT" });

    await page.getByRole("button", { name: "Unsubscribe from all marketing" }).click();
    await page.getByText("You are unsubscribed from all marketing email").waitFor();
    expect((await api("GET", `/contacts/${contactId}`)).body.subscribed).toBe(false);
    await context.close();
  });

  it("has no serious or critical axe-core violation", async () => {
    const { context, page } = await dashboard.open({ bypassCSP: true });
    await page.goto(preferencesUrl);
    await page.getByRole("heading", { name: "Email preferences" }).waitFor();
    expect(await dashboard.axeCheck(page, "preference page")).toEqual([]);
    await context.close();
  });
});
