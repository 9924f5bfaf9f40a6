import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Api, DOMAIN, type Dashboard, startDashboard } from "./dashboard-harness";

/**
 * The dashboard (/app) in real headless Chromium against `wrangler dev` (./dashboard-harness.ts:
 * a project, a verified sending domain and three contacts made through the API). Everything else
 * happens through the page, as a user does it.
 */
let dashboard: Dashboard;
let api: Api;
let secretKey: string;
let server: Dashboard["server"];

beforeAll(async () => {
  dashboard = await startDashboard("dashboard");
  ({ api, secretKey, server } = dashboard);
}, 180_000);

afterAll(async () => {
  await dashboard?.stop();
});

const open = (options?: Parameters<Dashboard["open"]>[0]) => dashboard.open(options);
const signIn = (page: Page, key?: string) => dashboard.signIn(page, key);
const nav = (page: Page, name: string) => dashboard.nav(page, name);
const shot = (page: Page, name: string) => dashboard.shot(page, name);

describe("the dashboard in headless Chromium", () => {
  it("serves /app and its deep links with a strict CSP", async () => {
    for (const path of ["/app/", "/app/campaigns/does-not-exist"]) {
      const res = await fetch(server.url + path);
      expect(res.status, path).toBe(200);
      expect(await res.text()).toContain('<div id="root">');
      const csp = res.headers.get("content-security-policy") ?? "";
      expect(csp, path).toContain("script-src 'self'");
      expect(csp, path).toContain("default-src 'none'");
      expect(csp, path).not.toContain("unsafe-eval");
    }
    expect((await fetch(`${server.url}/app/assets/missing.js`)).status).toBe(404);
    // /docs is still there.
    expect((await fetch(`${server.url}/docs`)).status).toBe(200);
  });

  it("refuses a wrong key with a message saying it is invalid, signs in with the secret key, and signs out", async () => {
    const { context, page, problems } = await open();
    await signIn(page, "sk_not_a_real_key_0000000000000000");
    await expect.poll(() => page.getByRole("alert").textContent()).toMatch(/invalid/i);
    expect(await page.getByRole("navigation").count()).toBe(0);
    await shot(page, "sign-in");

    await page.getByLabel("Secret key").fill(secretKey);
    await page.getByRole("button", { name: "Sign in" }).click();
    const navLinks = page.getByRole("navigation", { name: "Main" }).getByRole("link");
    await expect
      .poll(() => navLinks.allTextContents())
      .toEqual([
        "Campaigns",
        "Templates",
        "Segments",
        "Contacts",
        "Topics",
        "Workflows",
        "Emails",
        "Inbox",
        "Events",
        "Domains",
        "Webhooks",
        "Suppressions",
        "Settings",
      ]);
    expect(await page.evaluate(() => Object.values(sessionStorage))).toEqual([secretKey]);
    expect(await page.evaluate(() => Object.values(localStorage))).toEqual([]);

    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByLabel("Secret key").waitFor();
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    expect(problems).toEqual([]);
    await context.close();
  });

  it("composes a campaign with a live preview, sends a test, sends it to three contacts and shows its stats and chart", async () => {
    const { context, page, problems } = await open();
    await signIn(page);
    await nav(page, "Campaigns");
    await page.getByRole("link", { name: "New campaign" }).click();
    await page.getByRole("button", { name: "Start blank" }).click();
    await page.getByLabel("Name", { exact: true }).fill("November news");
    await page.getByLabel("Subject").fill("News for {{firstName ?? you}}");
    await page.getByLabel("From address").fill(`hello@${DOMAIN}`);
    await page.getByRole("button", { name: "HTML", exact: true }).click();
    await page.getByLabel("Body (HTML)").fill("<h1>Hi {{firstName ?? there}}</h1><p>Plan: {{plan}}</p>");
    const preview = page.frameLocator('iframe[title="Rendered email preview"]');
    await expect.poll(() => preview.locator("h1").textContent()).toBe("Hi Ada");
    await expect.poll(() => page.locator(".preview-subject .subject-text").textContent()).toBe("News for Ada");
    await page.getByRole("button", { name: "Create draft" }).click();
    await page.waitForURL(/\/app\/campaigns\/(?!new$)[^/]+$/);
    const id = page.url().split("/").pop()!;

    await page.getByLabel("Test recipient").fill("reviewer@example.org");
    await page.getByRole("button", { name: "Send test" }).click();
    await expect.poll(() => page.getByRole("status").textContent()).toContain("Test email sent to reviewer@example.org");

    await page.getByRole("button", { name: "Send campaign" }).click();
    const dialog = page.getByRole("dialog");
    await expect.poll(() => dialog.textContent()).toContain('Send "November news"');
    await dialog.getByRole("button", { name: "Send now" }).click();

    // The report page: numbers from /stats and a uPlot chart from the campaign's emails.
    await expect.poll(() => page.locator('[data-stat="sentCount"]').textContent(), { timeout: 45_000 }).toMatch(/^3\b/);
    expect(await page.locator('[data-stat="totalRecipients"]').textContent()).toBe("3");
    await expect.poll(() => page.locator(".status").first().textContent(), { timeout: 30_000 }).toBe("SENT");
    await page.locator(".chart .u-legend").waitFor();
    const legend = await page.locator(".chart .u-legend th").allTextContents();
    expect(legend.map((l) => l.trim())).toEqual(expect.arrayContaining(["Sent", "Open rate", "Click rate"]));
    await shot(page, "campaign-stats");

    const stats = await api("GET", `/campaigns/${id}/stats`);
    expect(stats.body.data, JSON.stringify(stats)).toMatchObject({ totalRecipients: 3, sentCount: 3 });
    const emails = await api("GET", `/emails?campaignId=${id}`);
    expect(emails.body.data.items.map((e: { to: string }) => e.to).sort()).toEqual(["ada@example.net", "grace@example.net", "linus@example.net"]);
    expect(problems).toEqual([]);
    await context.close();
  }, 90_000);

  it("schedules a campaign and cancels the schedule after confirming", async () => {
    const created = await api("POST", "/campaigns", { name: "Later", subject: "Later", body: "<p>Later</p>", from: `hello@${DOMAIN}`, audienceType: "ALL" });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const { context, page, problems } = await open();
    await signIn(page);
    await page.goto(`${server.url}/app/campaigns/${created.body.data.id}`);
    await page.getByLabel("Send at (your time zone)").fill("2099-01-01T09:00");
    await page.getByRole("button", { name: "Schedule" }).click();
    // Save, schedule and read again: three requests, more than expect.poll's default second on a busy machine.
    await expect.poll(() => page.locator(".page-head .status").textContent(), { timeout: 10_000 }).toBe("SCHEDULED");
    // The report's parts (stats, segment names) load after it: clicking while they land can miss the moving button.
    await page.waitForFunction(() => !document.body.textContent?.includes("Loading…"));
    await page.getByRole("button", { name: "Cancel schedule" }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Cancel the send" }).click();
    await expect.poll(() => page.locator(".page-head .status").textContent(), { timeout: 10_000 }).toBe("DRAFT");
    expect((await api("GET", `/campaigns/${created.body.data.id}`)).body.data).toMatchObject({ status: "DRAFT", scheduledAt: null });
    expect(problems).toEqual([]);
    await context.close();
  });

  it("builds a segment with the condition builder and shows its member count", async () => {
    const { context, page, problems } = await open();
    await signIn(page);
    await nav(page, "Segments");
    await page.getByRole("link", { name: "New segment" }).click();
    await page.getByLabel("Name", { exact: true }).fill("Pro plan");
    await page.getByLabel("Data key").fill("plan");
    // The builder offers the server's operators for a data key (schemas/condition-grammar.ts), the inclusive comparisons among them.
    const operators = await page
      .getByLabel("Operator")
      .locator("option")
      .evaluateAll((options) => options.map((o) => (o as HTMLOptionElement).value));
    expect(operators).toEqual(expect.arrayContaining(["greaterThan", "greaterThanOrEqual", "lessThan", "lessThanOrEqual", "exists"]));
    await page.getByLabel("Operator").selectOption("equals");
    await page.getByLabel("Value").fill("pro");
    await page.getByRole("button", { name: "Create and count" }).click();
    await expect.poll(() => page.getByTestId("member-count").textContent()).toBe("2");
    await expect.poll(() => page.locator("ul.plain li").allTextContents()).toHaveLength(2);
    await shot(page, "segment");

    await page.getByLabel("Value").fill("free");
    await page.getByRole("button", { name: "Save and count" }).click();
    await expect.poll(() => page.getByRole("status").textContent()).toContain("Segment saved");
    expect(await page.getByTestId("member-count").textContent()).toBe("1");
    expect(problems).toEqual([]);
    await context.close();
  });

  it("edits a template and the preview follows the body and the sample data", async () => {
    const { context, page, problems } = await open();
    await signIn(page);
    await nav(page, "Templates");
    await page.getByRole("link", { name: "New template" }).click();
    await page.getByRole("button", { name: "HTML", exact: true }).click();
    await page.getByLabel("Name", { exact: true }).fill("Welcome");
    await page.getByLabel("Subject").fill("Welcome {{firstName}}");
    await page.getByLabel("Body (HTML)").fill("<p id=greeting>Hello {{firstName}}</p>");
    const frame = page.frameLocator('iframe[title="Rendered email preview"]');
    await expect.poll(() => frame.locator("#greeting").textContent()).toBe("Hello Ada");
    await page.getByRole("button", { name: "Create template" }).click();
    await page.waitForURL(/\/app\/templates\/(?!new$)[^/]+$/);

    await page.getByLabel("Body (HTML)").fill("<p id=greeting>Welcome aboard, {{firstName ?? friend}} <b>{{plan}}</b></p>");
    await expect.poll(() => frame.locator("#greeting").textContent()).toBe("Welcome aboard, Ada pro");
    await page.getByLabel("Sample data (JSON)").fill('{"firstName": "<Grace>", "plan": "team"}');
    // Values are HTML-escaped as the server does: the name shows as text, not markup.
    await expect.poll(() => frame.locator("#greeting").textContent()).toBe("Welcome aboard, <Grace> team");
    await shot(page, "template-editor");
    await page.getByRole("button", { name: "Save template" }).click();
    await expect.poll(() => page.getByRole("status").textContent()).toContain("Template saved");
    const id = page.url().split("/").pop()!;
    expect((await api("GET", `/templates/${id}`)).body.body).toContain("Welcome aboard");
    expect(problems).toEqual([]);
    await context.close();
  });

  it("works on a 390x844 phone: the menu opens, pages fit the width", async () => {
    const { context, page, problems } = await open({ width: 390, height: 844 });
    await signIn(page);
    for (const name of ["Campaigns", "Segments", "Templates", "Domains"]) {
      await nav(page, name);
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      expect(overflow, name).toBeLessThanOrEqual(0);
    }
    await page.getByRole("navigation").getByRole("link", { name: "Campaigns", exact: true }).isHidden();
    await nav(page, "Campaigns");
    await page.getByRole("link", { name: "November news" }).click();
    await page.locator('[data-stat="sentCount"]').waitFor();
    expect(await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)).toBeLessThanOrEqual(0);
    await shot(page, "phone");
    expect(problems).toEqual([]);
    await context.close();
  });

  it("has no serious or critical axe-core violation on any page", async () => {
    // axe is injected as a script, which the page's own CSP rightly refuses: this context bypasses it.
    const { context, page } = await open({ bypassCSP: true });
    const campaigns = (await api("GET", "/campaigns")).body.campaigns as { id: string; status: string }[];
    const sent = campaigns.find((c) => c.status === "SENT")!;
    const draft = campaigns.find((c) => c.status === "DRAFT")!;
    const segment = (await api("GET", "/segments")).body.data.items[0];
    const template = (await api("GET", "/templates")).body.data.items[0];
    const contact = (await api("GET", "/contacts")).body.contacts[0];
    const email = (await api("GET", "/emails")).body.data.items[0];
    const domain = (await api("GET", "/domains")).body.data.items[0];
    const sender = await api("POST", "/templates", {
      name: "Workflow welcome",
      subject: "Hi",
      body: "<p>Hi</p>",
      type: "TRANSACTIONAL",
      from: `hello@${DOMAIN}`,
    });
    expect(sender.status, JSON.stringify(sender.body)).toBe(201);
    const workflow = await api("POST", "/workflows", {
      name: "Welcome",
      trigger: { type: "CONTACT_CREATED" },
      steps: [
        { id: "wait", type: "DELAY", config: { amount: 1, unit: "hours" }, next: "welcome" },
        { id: "welcome", type: "SEND_EMAIL", config: { templateId: sender.body.id } },
      ],
    });
    expect(workflow.status, JSON.stringify(workflow.body)).toBe(201);
    const webhook = await api("POST", "/webhooks", { url: "http://127.0.0.1:9/axe" });
    expect(webhook.status, JSON.stringify(webhook.body)).toBe(201);
    const pages = [
      "/campaigns",
      "/campaigns/new",
      `/campaigns/${sent.id}`,
      `/campaigns/${draft.id}`,
      "/templates",
      `/templates/${template.id}`,
      "/segments",
      `/segments/${segment.id}`,
      "/contacts",
      `/contacts/${contact.id}`,
      "/workflows",
      `/workflows/${workflow.body.id}`,
      "/emails",
      `/emails/${email.id}`,
      "/events",
      "/domains",
      `/domains/${domain.id}`,
      "/webhooks",
      `/webhooks/${webhook.body.id}`,
      "/inbox",
      "/suppressions",
      "/topics",
      "/settings",
    ];
    await page.goto(`${server.url}/app/`);
    await dashboard.axeCheck(page, "sign-in");
    await signIn(page);
    await page.getByRole("navigation", { name: "Main" }).waitFor();
    const found: string[] = [];
    for (const path of pages) {
      await page.goto(`${server.url}/app${path}`);
      await page.locator("h1").first().waitFor();
      await page.waitForFunction(() => !document.body.textContent?.includes("Loading…"));
      // A page with the visual editor names its canvas frame once the editor has drawn it.
      await page.waitForFunction(() => {
        if (!document.querySelector(".editor-visual")) return true;
        const canvas = document.querySelector("iframe.gjs-frame");
        return canvas !== null && canvas.getAttribute("title") !== null;
      });
      found.push(...(await dashboard.axeCheck(page, path)));
    }
    expect(found).toEqual([]);
    await context.close();
  }, 120_000);

  it("lists the project's webhook endpoints with the events they receive, and an endpoint's delivery log", async () => {
    const created = await api("POST", "/webhooks", { url: "http://127.0.0.1:9/hook", events: ["email.bounced"] });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const { context, page, problems } = await open();
    await signIn(page);
    await nav(page, "Webhooks");
    await expect.poll(() => page.locator("main").textContent()).toContain("http://127.0.0.1:9/hook");
    expect(await page.locator("main").textContent()).toContain("email.bounced");
    expect(await page.locator("main").textContent()).not.toContain(created.body.secret);
    expect(await page.locator("main").textContent()).not.toContain("not part of this server's API");

    // The delivery log (GET /webhooks/{id}/deliveries): a test event sent from the page shows as a delivery.
    await page.getByRole("link", { name: "http://127.0.0.1:9/hook" }).click();
    await page.waitForURL(`**/app/webhooks/${created.body.id}`);
    await page.getByRole("button", { name: "Send test event" }).click();
    await expect.poll(() => page.getByRole("status").textContent()).toContain("Test event queued");
    await expect.poll(() => page.locator("table").last().textContent()).toContain("webhook.test");
    await shot(page, "webhook-deliveries");
    await page.getByLabel("Status").selectOption("SUCCEEDED");
    await expect.poll(() => page.locator("main").textContent()).toContain("No deliveries.");
    expect(problems).toEqual([]);
    await context.close();
  });
});
