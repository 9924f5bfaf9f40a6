import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Api, DOMAIN, type Dashboard, startDashboard } from "./dashboard-harness";

/**
 * The workflow editor in real headless Chromium against `wrangler dev` (./dashboard-harness.ts):
 * a workflow built from forms only (trigger select, steps added by type, each with its settings and
 * exits), saved, reopened and edited, checked through the API; the graph's text readable.
 */
let dashboard: Dashboard;
let api: Api;
let templateId: string;

beforeAll(async () => {
  dashboard = await startDashboard("workflows");
  ({ api } = dashboard);
  const template = await api("POST", "/templates", {
    name: "Welcome mail",
    subject: "Welcome {{firstName ?? friend}}",
    body: "<p>Welcome!</p>",
    type: "TRANSACTIONAL",
    from: `hello@${DOMAIN}`,
  });
  expect(template.status, JSON.stringify(template.body)).toBe(201);
  templateId = template.body.id;
  const topic = await api("POST", "/topics", { key: "news", name: "News", defaultSubscription: "OPT_IN" });
  expect(topic.status, JSON.stringify(topic.body)).toBe(201);
}, 180_000);

afterAll(async () => {
  await dashboard?.stop();
});

const step = (page: Page, id: string) => page.locator(`fieldset[data-step="${id}"]`);
const overflow = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);

/** The smallest text of the graph as drawn, in CSS pixels (font size times the SVG's scale). */
const smallestGraphText = (page: Page) =>
  page.locator("svg.graph").evaluate((svg) => {
    const scale = svg.getBoundingClientRect().width / (svg as SVGSVGElement).viewBox.baseVal.width;
    return Math.min(...Array.from(svg.querySelectorAll("text")).map((t) => Number.parseFloat(getComputedStyle(t).fontSize) * scale));
  });

let workflowId: string;

describe("the workflow editor", () => {
  it("builds a three-step workflow from forms, saves it, reopens it and edits a step", async () => {
    const { context, page, problems } = await dashboard.open();
    // Which request failed, when one does (Chromium's console line names no URL).
    page.on("response", async (res) => {
      if (res.status() >= 500) problems.push(`${res.request().method()} ${res.url()} ${res.status()}: ${await res.text().catch(() => "")}`);
    });
    await dashboard.signIn(page);
    await dashboard.nav(page, "Workflows");
    await page.getByRole("link", { name: "New workflow" }).click();
    await page.getByLabel("Name", { exact: true }).fill("Onboarding");
    await page.getByLabel("Starts when").selectOption("EVENT");
    await page.getByLabel("Event name").fill("signed_up");

    await page.getByLabel("New step").selectOption("DELAY");
    await page.getByRole("button", { name: "Add step" }).click();
    await step(page, "delay").getByLabel("Wait").fill("2");
    await step(page, "delay").getByLabel("Unit").selectOption("hours");

    await page.getByLabel("New step").selectOption("CONDITION");
    await page.getByRole("button", { name: "Add step" }).click();
    await step(page, "condition").getByLabel("Data key").fill("plan");
    await step(page, "condition").getByLabel("Value").fill("team");

    await page.getByLabel("New step").selectOption("SEND_EMAIL");
    await page.getByRole("button", { name: "Add step" }).click();
    await step(page, "send-email").getByLabel("Template").selectOption({ label: "Welcome mail" });
    await step(page, "send-email").getByLabel("Topic").selectOption({ label: "News" });

    // Each new step followed the one before: DELAY -> CONDITION (yes) -> SEND_EMAIL, drawn with the template's name.
    expect(await step(page, "delay").getByLabel("Then").inputValue()).toBe("condition");
    expect(await step(page, "condition").getByLabel("If yes, then").inputValue()).toBe("send-email");
    expect(await page.locator("svg.graph").textContent()).toContain("“Welcome mail”");
    expect(await smallestGraphText(page)).toBeGreaterThanOrEqual(12);
    expect(await page.locator("main textarea").count()).toBe(0); // no JSON to type anywhere

    await page.getByRole("button", { name: "Create workflow" }).click();
    await page.waitForURL(/\/app\/workflows\/(?!new$)[^/]+$/);
    workflowId = page.url().split("/").pop()!;
    const saved = (await api("GET", `/workflows/${workflowId}`)).body;
    expect(saved.trigger).toEqual({ type: "EVENT", eventName: "signed_up" });
    expect(saved.steps).toMatchObject([
      { id: "delay", type: "DELAY", config: { amount: 2, unit: "hours" }, next: "condition" },
      {
        id: "condition",
        type: "CONDITION",
        config: { condition: { logic: "AND", groups: [{ filters: [{ field: "data.plan", operator: "equals", value: "team" }] }] } },
        branches: { yes: "send-email" },
      },
      { id: "send-email", type: "SEND_EMAIL", config: { templateId, topic: "news" } },
    ]);
    expect(saved.steps[1].branches.no ?? null).toBeNull();
    expect(saved.steps[2].next ?? null).toBeNull();

    // Reopened, the forms show what was saved; change the delay's unit and save.
    await page.reload();
    await step(page, "delay").waitFor();
    expect(await step(page, "delay").getByLabel("Wait").inputValue()).toBe("2");
    expect(await step(page, "send-email").getByLabel("Template").locator("option:checked").textContent()).toBe("Welcome mail");
    expect(await page.getByLabel("Starts when").inputValue()).toBe("EVENT");
    await step(page, "delay").getByLabel("Unit").selectOption("days");
    await page.getByRole("button", { name: "Save workflow" }).click();
    await expect.poll(() => page.getByRole("status").textContent(), { timeout: 10_000 }).toContain("Workflow saved");
    const edited = (await api("GET", `/workflows/${workflowId}`)).body;
    expect(edited.steps[0]).toMatchObject({ id: "delay", config: { amount: 2, unit: "days" }, next: "condition" });
    expect(edited.steps.slice(1)).toEqual(saved.steps.slice(1));
    await expect.poll(() => page.locator("svg.graph").textContent()).toContain("wait 2 days");
    await page.getByRole("heading", { name: "Steps" }).evaluate((el) => el.scrollIntoView());
    await dashboard.shot(page, "workflow-editor-1280");

    // Enabled, the event starts an execution; the page names its contact by email, not by id.
    await page.getByRole("button", { name: "Enable" }).click();
    await expect.poll(() => page.getByRole("button", { name: "Disable" }).count(), { timeout: 10_000 }).toBe(1);
    const tracked = await api("POST", "/v1/track", { email: "ada@example.net", event: "signed_up" });
    expect(tracked.status, JSON.stringify(tracked.body)).toBe(200);
    await expect
      .poll(
        async () => {
          await page.reload();
          await page.getByRole("heading", { name: "Executions" }).waitFor();
          await page.waitForFunction(() => !document.body.textContent?.includes("Loading…"));
          return page.locator(".execution summary").allTextContents();
        },
        { timeout: 30_000, interval: 1_000 },
      )
      .toEqual([expect.stringContaining("contact ada@example.net")]);
    expect(problems).toEqual([]);
    await context.close();
  }, 90_000);

  it("fits a 390x844 phone: the graph stays readable and scrolls inside its box", async () => {
    const { context, page, problems } = await dashboard.open({ width: 390, height: 844 });
    await dashboard.signIn(page);
    await page.goto(`${dashboard.server.url}/app/workflows/${workflowId}`);
    await step(page, "delay").waitFor();
    expect(await overflow(page)).toBeLessThanOrEqual(0);
    expect(await smallestGraphText(page)).toBeGreaterThanOrEqual(12);
    await page.locator("svg.graph").scrollIntoViewIfNeeded();
    await dashboard.shot(page, "workflow-editor-390");
    await page.goto(`${dashboard.server.url}/app/workflows/new`);
    await page.getByLabel("New step").waitFor();
    expect(await overflow(page)).toBeLessThanOrEqual(0);
    expect(problems).toEqual([]);
    await context.close();
  }, 60_000);

  it("has no serious or critical axe-core violation on the workflow pages", async () => {
    const { context, page } = await dashboard.open({ bypassCSP: true });
    await dashboard.signIn(page);
    const found: string[] = [];
    for (const path of ["/workflows", "/workflows/new", `/workflows/${workflowId}`]) {
      await page.goto(`${dashboard.server.url}/app${path}`);
      await page.locator("h1").first().waitFor();
      await page.waitForFunction(() => !document.body.textContent?.includes("Loading…"));
      found.push(...(await dashboard.axeCheck(page, path)));
    }
    expect(found).toEqual([]);
    await context.close();
  }, 60_000);
});
