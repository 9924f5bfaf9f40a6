import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import type { Download, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Api, type Dashboard, DOMAIN, startDashboard } from "./dashboard-harness";

/**
 * The inbox in real headless Chromium against `wrangler dev` (./dashboard-harness.ts) with an inbound
 * domain: an email sent with reply tracking, its recipient's reply (Apple Mail, with a PDF) delivered to
 * the email's Reply-To and an out-of-office delivered to the project's named address, both through
 * `POST /cdn-cgi/handler/email` as `npm run dev` receives mail. Then, through the page: the list, the
 * auto-reply marked and hidden on request, the reply's page with the email it answers above it, its
 * attachment downloaded, the contact's timeline and the email's replies, 390 px and axe-core.
 */
const INBOUND_DOMAIN = "in.localhost";
const fixture = (name: string) => readFileSync(resolve(__dirname, "../fixtures/inbound", name), "utf8");
const fill = (eml: string, values: Record<string, string>) => eml.replace(/\{\{(\w+)\}\}/g, (_, k: string) => values[k] ?? "");

let dashboard: Dashboard;
let api: Api;
let emailId: string;
let contactId: string;
let replyId: string;
let autoReplyId: string;

/** Delivers a raw message to the Worker's email() handler as wrangler dev exposes it; fails on a rejection. */
async function deliver(from: string, to: string, raw: string) {
  const url = `${dashboard.server.url}/cdn-cgi/handler/email?from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}`;
  const res = await fetch(url, { method: "POST", body: raw });
  const text = await res.text();
  expect(res.status, text).toBe(200);
  expect(text).not.toMatch(/reject/i);
}

/** The Reply-To of the mail captured for `to` (the capture provider's outbox, /dev/outbox). */
async function capturedReplyTo(to: string): Promise<string> {
  for (let i = 0; i < 60; i++) {
    const outbox = await (await fetch(`${dashboard.server.url}/dev/outbox`)).text();
    const row = new RegExp(`<td>${to.replace(/[.]/g, "\\.")}</td>\\s*<td><a href="/dev/outbox/([^"]+)">`).exec(outbox);
    if (row) {
      const eml = await (await fetch(`${dashboard.server.url}/dev/outbox/${row[1]}.eml`)).text();
      const header = /^Reply-To:\s*(.+)$/im.exec(eml)?.[1] ?? "";
      const address = /<([^>]+)>/.exec(header)?.[1] ?? header.trim();
      expect(address, eml.slice(0, 2000)).toMatch(new RegExp(`^r\\+[0-9a-z]+@${INBOUND_DOMAIN}$`));
      return address;
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`no captured mail to ${to}`);
}

beforeAll(async () => {
  dashboard = await startDashboard("inbox", { INBOUND_DOMAIN });
  api = dashboard.api;
  const sent = await api("POST", "/v1/send", {
    to: "ada@example.net",
    from: `hello@${DOMAIN}`,
    subject: "Your order has shipped",
    body: "<p>Your order #1042 has shipped.</p>",
    trackReplies: true,
  });
  expect(sent.status, JSON.stringify(sent.body)).toBe(200);
  emailId = sent.body.data.emails[0].email;
  contactId = sent.body.data.emails[0].contact.id;
  const replyTo = await capturedReplyTo("ada@example.net");
  const project = await api("GET", "/project");
  const named = project.body.inbound?.namedAddress ?? project.body.data?.inbound?.namedAddress;
  expect(named, JSON.stringify(project.body)).toMatch(new RegExp(`^support\\+[0-9a-f]{32}@${INBOUND_DOMAIN}$`));

  await deliver("ada@example.net", replyTo, fill(fixture("apple-mail-reply.eml"), { FROM: "ada@example.net", TO: replyTo, PARENT_ID: "unknown@example.net" }));
  await deliver(
    "grace@example.net",
    named,
    fill(fixture("out-of-office.eml"), { FROM: "grace@example.net", TO: named, PARENT_ID: "unknown@example.net" }).replace("Ada Lovelace", "Grace Hopper"),
  );
  // The queue consumer parses and links them.
  let items: { id: string; status: string; autoReply: boolean }[] = [];
  for (let i = 0; i < 90; i++) {
    items = (await api("GET", "/inbound")).body.data.items;
    if (items.length === 2 && items.every((m) => m.status === "PARSED")) break;
    await new Promise((r) => setTimeout(r, 500));
  }
  expect(items.map((m) => m.status)).toEqual(["PARSED", "PARSED"]);
  replyId = items.find((m) => !m.autoReply)!.id;
  autoReplyId = items.find((m) => m.autoReply)!.id;
}, 240_000);

afterAll(async () => {
  await dashboard?.stop();
});

const rowOf = (page: Page, subject: string) => page.locator("tbody tr", { has: page.getByRole("link", { name: subject, exact: true }) });
const textOf = async (download: Download) => readFileSync((await download.path())!, "utf8");
const overflow = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);

describe("the inbox", () => {
  it("lists received mail newest first with sender, snippet and what it answers; auto-replies are marked and can be hidden", async () => {
    const { context, page, problems } = await dashboard.open({ bypassCSP: true });
    await dashboard.signIn(page);
    await dashboard.nav(page, "Inbox");
    const reply = rowOf(page, "Re: Your order has shipped");
    const ooo = rowOf(page, "Automatic reply: Your order has shipped");
    await reply.waitFor();
    await expect.poll(() => reply.textContent()).toContain("answers Your order has shipped to ada@example.net");
    const replyText = (await reply.textContent()) ?? "";
    expect(replyText).toContain("Katherine Johnson");
    expect(replyText).toContain("ada@example.net");
    expect(replyText).toContain("Here is the signed delivery form.");
    expect(replyText).not.toContain("Your order #1042 has shipped");
    expect(replyText).not.toContain("Auto-reply");
    const oooText = (await ooo.textContent()) ?? "";
    expect(oooText).toContain("Grace Hopper");
    expect(oooText).toContain("Auto-reply");
    expect(oooText).toContain("not linked");
    expect(oooText).toContain("I am out of the office");
    // Newest first: the out-of-office came second.
    expect(await page.locator("tbody tr").count()).toBe(2);
    expect(await page.locator("tbody tr").first().textContent()).toContain("Automatic reply");
    await dashboard.shot(page, "inbox-1280");
    expect(await dashboard.axeCheck(page, "inbox")).toEqual([]);

    await page.getByLabel("Hide auto-replies").check();
    await expect.poll(() => page.locator("tbody tr").count()).toBe(1);
    expect(await ooo.count()).toBe(0);
    expect(await reply.count()).toBe(1);

    // Filtered to a contact: only its mail (the out-of-office is Grace's), named by its address.
    await page.goto(`${dashboard.server.url}/app/inbox?contactId=${contactId}`);
    await expect.poll(() => page.locator("main").textContent()).toContain("Mail from ada@example.net.");
    await reply.waitFor();
    expect(await page.locator("tbody tr").count()).toBe(1);
    expect(problems).toEqual([]);
    await context.close();
  }, 90_000);

  it("shows a reply below the email it answers, its full text on request, and downloads its attachment and the raw message", async () => {
    const { context, page, problems } = await dashboard.open({ bypassCSP: true });
    await dashboard.signIn(page);
    await dashboard.nav(page, "Inbox");
    await page.getByRole("link", { name: "Re: Your order has shipped", exact: true }).click();
    await page.waitForURL(new RegExp(`/app/inbox/${replyId}$`));
    await expect.poll(() => page.locator("h1").textContent()).toBe("Re: Your order has shipped");
    const facts = page.locator("dl.facts");
    await expect.poll(() => facts.textContent()).toContain("Katherine Johnson <ada@example.net>");
    expect(await facts.textContent()).toContain("by its reply address");

    // The thread: the email it answers (a link to its page), above the reply.
    const answered = page.getByRole("article", { name: "The email it answers" });
    await answered.waitFor();
    expect(await answered.textContent()).toContain("Sent");
    expect(await answered.textContent()).toContain("ada@example.net");
    expect(await answered.getByRole("link", { name: "Your order has shipped" }).getAttribute("href")).toBe(`/app/emails/${emailId}`);
    const reply = page.getByRole("article", { name: "The reply" });
    const [above, below] = await Promise.all([answered.boundingBox(), reply.boundingBox()]);
    expect(above!.y).toBeLessThan(below!.y);
    const stripped = (await reply.locator(".inbox-text").textContent()) ?? "";
    expect(stripped).toContain("Here is the signed delivery form.");
    expect(stripped).not.toContain("has shipped");
    expect(await reply.locator(".inbox-text").evaluate((el) => getComputedStyle(el).whiteSpace)).toBe("pre-wrap");
    // Text only: no frame (the API gives no HTML), nothing of the message rendered as markup.
    expect(await page.locator("iframe").count()).toBe(0);

    const full = page.locator("details.inbox-full", { hasText: "Full message text" });
    expect(await full.locator(".inbox-text").isVisible()).toBe(false);
    await full.locator("summary").click();
    await expect.poll(() => full.locator(".inbox-text").textContent()).toContain("Your order #1042 has shipped.");

    // Its HTML version, opened: this reply has none, and says so; still no frame.
    const htmlVersion = page.locator("details.inbox-full", { hasText: "HTML version" });
    await htmlVersion.locator("summary").click();
    await htmlVersion.getByText("This message has no HTML version.").waitFor();
    expect(await page.locator("iframe").count()).toBe(0);

    const [pdf] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: "Download signed-form.pdf" }).click()]);
    expect(pdf.suggestedFilename()).toBe("signed-form.pdf");
    expect(await textOf(pdf)).toMatch(/^%PDF-1\.4/);
    const [raw] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: "Download raw message (.eml)" }).click()]);
    expect(raw.suggestedFilename()).toBe(`${replyId}.eml`);
    expect(await textOf(raw)).toContain("Subject: Re: Your order has shipped");
    await page.evaluate(() => window.scrollTo(0, 0));
    await dashboard.shot(page, "inbox-message-1280");
    expect(await dashboard.axeCheck(page, "inbox message")).toEqual([]);

    // The answered email's page lists the reply; the contact's timeline shows it.
    await answered.getByRole("link", { name: "Your order has shipped" }).click();
    await page.waitForURL(new RegExp(`/app/emails/${emailId}$`));
    await page.getByRole("heading", { name: "Replies" }).waitFor();
    await page.getByRole("link", { name: "Re: Your order has shipped" }).waitFor();
    await page.goto(`${dashboard.server.url}/app/contacts/${contactId}`);
    const received = page.locator("ol.timeline").getByRole("link", { name: "Reply received" });
    await received.waitFor();
    expect(await received.getAttribute("href")).toBe(`/app/inbox/${replyId}`);
    expect(problems).toEqual([]);
    await context.close();
  }, 90_000);

  it("shows a message's HTML only in a sandboxed frame, fetched when opened", async () => {
    const named = (await api("GET", "/project")).body.data.inbound.namedAddress as string;
    await deliver(
      "lin@example.net",
      named,
      fill(fixture("gmail-reply.eml"), { FROM: "lin@example.net", TO: named, PARENT_ID: "unknown@example.net" }).replace(
        "Subject: Re: Your order has shipped",
        "Subject: Re: Office address",
      ),
    );
    let id: string | undefined;
    for (let i = 0; i < 90 && !id; i++) {
      const items = (await api("GET", "/inbound")).body.data.items as { id: string; from: string; status: string }[];
      id = items.find((m) => m.from === "lin@example.net" && m.status === "PARSED")?.id;
      if (!id) await new Promise((r) => setTimeout(r, 500));
    }
    expect(id).toBeDefined();
    const { context, page, problems } = await dashboard.open();
    await dashboard.signIn(page);
    await page.goto(`${dashboard.server.url}/app/inbox/${id}`);
    await page.locator("article.inbox-reply").waitFor();
    expect(await page.locator("iframe").count()).toBe(0);
    await page.locator("details.inbox-full", { hasText: "HTML version" }).locator("summary").click();
    const frame = page.locator("iframe.mail-frame");
    await frame.waitFor();
    expect(await frame.getAttribute("sandbox")).toBe("");
    expect(await frame.getAttribute("srcdoc")).toContain("Thanks, that works for me!");
    expect(problems).toEqual([]);
    await context.close();
  }, 90_000);

  it("fits a 390 px phone without sideways scrolling, the list and a message", async () => {
    const { context, page, problems } = await dashboard.open({ width: 390, height: 844, bypassCSP: true });
    await dashboard.signIn(page);
    await dashboard.nav(page, "Inbox");
    await rowOf(page, "Re: Your order has shipped").waitFor();
    expect(await overflow(page)).toBeLessThanOrEqual(0);
    await dashboard.shot(page, "inbox-390");
    expect(await dashboard.axeCheck(page, "inbox at 390 px")).toEqual([]);
    for (const id of [replyId, autoReplyId]) {
      await page.goto(`${dashboard.server.url}/app/inbox/${id}`);
      await page.locator("article.inbox-reply").waitFor();
      await page.waitForFunction(() => !document.body.textContent?.includes("Loading…"));
      expect(await overflow(page), id).toBeLessThanOrEqual(0);
    }
    expect(await page.locator("dl.facts").textContent()).toContain("not counted as a reply");
    expect(problems).toEqual([]);
    await context.close();
  }, 90_000);
});
