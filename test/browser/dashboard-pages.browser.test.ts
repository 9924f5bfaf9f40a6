import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DOMAIN, type Dashboard, startDashboard } from "./dashboard-harness";

/**
 * Every section of the dashboard, with data in it, at a desktop width (1280) and a phone's (390x844):
 * each page fits the width without scrolling sideways and shows no console error; each is saved
 * as docs/screenshots/<page>-<width>.png (docs/dashboard.md). The pages with editors of their own
 * (contacts and the import, templates, the campaign editor, workflows, webhooks) have their own files.
 */
let dashboard: Dashboard;
const pages: { name: string; path: string }[] = [];

beforeAll(async () => {
  dashboard = await startDashboard("pages");
  const { api } = dashboard;
  const ok = (res: { status: number; body: unknown }) => {
    expect(res.status, JSON.stringify(res.body)).toBeLessThan(300);
    return res.body as any;
  };
  // A campaign sent to the three contacts, a segment, a workflow and some events: what a project in use has.
  const campaign = ok(
    await api("POST", "/campaigns", {
      name: "December news with a rather long name that wraps",
      subject: "News for {{firstName ?? you}}",
      body: "<h1>Hi {{firstName ?? there}}</h1><p>Our December news.</p>",
      from: `hello@${DOMAIN}`,
      audienceType: "ALL",
    }),
  ).data;
  ok(await api("POST", `/campaigns/${campaign.id}/send`, {}));
  // Sent before the pages are drawn (expect.poll only runs inside a test).
  for (let i = 0; i < 120 && (await api("GET", `/campaigns/${campaign.id}`)).body.data.status !== "SENT"; i++) await new Promise((r) => setTimeout(r, 500));
  ok(
    await api("POST", "/segments", {
      name: "Pro plan",
      condition: { logic: "AND", groups: [{ filters: [{ field: "data.plan", operator: "equals", value: "pro" }] }] },
    }),
  );
  for (const email of ["ada@example.net", "grace@example.net"])
    ok(await api("POST", "/v1/track", { email, event: "signed-up", data: { source: "pricing-page" } }));
  const contact = (await api("GET", "/contacts")).body.contacts[0];
  const email = (await api("GET", "/emails")).body.data.items[0];
  const domain = (await api("GET", "/domains")).body.data.items[0];
  pages.push(
    { name: "campaigns", path: "/campaigns" },
    { name: "campaign-report", path: `/campaigns/${campaign.id}` },
    { name: "segments", path: "/segments" },
    { name: "contact", path: `/contacts/${contact.id}` },
    { name: "workflows", path: "/workflows" },
    { name: "emails", path: "/emails" },
    { name: "email", path: `/emails/${email.id}` },
    // Without an inbound domain nothing is received: the empty inbox (dashboard-inbox.browser.test.ts has one with mail).
    { name: "inbox-empty", path: "/inbox" },
    { name: "events", path: "/events" },
    { name: "domains", path: "/domains" },
    { name: "domain", path: `/domains/${domain.id}` },
  );
}, 240_000);

afterAll(async () => {
  await dashboard?.stop();
});

describe("every page at 1280 and 390 px", () => {
  for (const [width, height] of [
    [1280, 800],
    [390, 844],
  ] as const) {
    it(`fits ${width} px without sideways scrolling and without console errors`, async () => {
      const { context, page, problems } = await dashboard.open({ width, height });
      await dashboard.signIn(page);
      const overflowing: string[] = [];
      for (const { name, path } of pages) {
        await page.goto(`${dashboard.server.url}/app${path}`);
        await page.locator("h1").first().waitFor();
        await page.waitForFunction(() => !document.body.textContent?.includes("Loading…"));
        if (name === "email") {
          // Looking at a sent email does not load its open-tracking pixel (it would count as an open).
          await page.frameLocator('iframe[title="Sent message"]').locator("h1").waitFor();
          expect(await page.frameLocator('iframe[title="Sent message"]').locator('img[src*="/t/o/"]').count()).toBe(0);
        }
        const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
        if (overflow > 0) overflowing.push(`${name}: ${overflow} px too wide`);
        await dashboard.shot(page, `${name}-${width}`);
      }
      expect(overflowing).toEqual([]);
      expect(problems).toEqual([]);
      await context.close();
    }, 120_000);
  }
});
