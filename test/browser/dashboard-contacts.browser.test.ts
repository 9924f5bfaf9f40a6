import { readFileSync } from "node:fs";
import type { Download, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Api, DOMAIN, type Dashboard, startDashboard } from "./dashboard-harness";

/**
 * The contacts pages in real headless Chromium against `wrangler dev` (./dashboard-harness.ts): a contact
 * created, edited and deleted through the page, a Mailchimp export imported through the mapping step,
 * an export downloaded, and the pages at a phone's width and under axe-core.
 */
let dashboard: Dashboard;
let api: Api;
let url: string;

beforeAll(async () => {
  dashboard = await startDashboard("dashboard-contacts");
  api = dashboard.api;
  url = dashboard.server.url;
}, 180_000);

afterAll(async () => {
  await dashboard?.stop();
});

/** A Mailchimp audience export: a repeated email (its last row wins) and an invalid one among its rows. */
const MAILCHIMP_CSV = [
  "Email Address,First Name,Last Name,MEMBER_RATING,OPTIN_TIME,OPTIN_IP,CONFIRM_TIME,LEID,TAGS",
  'mia@example.org,Mia,Rossi,4,2024-01-05 10:00:00,,2024-01-05 10:01:00,101,"vip,2024"',
  "noah@example.org,Noah,Berg,2,2024-02-11 08:30:00,,2024-02-11 08:31:00,102,",
  "not-an-email,Bad,Row,1,2024-03-01 09:00:00,,,103,",
  "mia@example.org,Mia,Rossi-Lang,5,2024-01-05 10:00:00,,2024-01-05 10:01:00,101,vip",
].join("\r\n");

const overflow = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
const contactByEmail = async (email: string) =>
  (await api("GET", `/contacts?search=${encodeURIComponent(email)}`)).body.contacts.find((c: { email: string }) => c.email === email);
const textOf = async (download: Download) => readFileSync((await download.path())!, "utf8");

describe("the dashboard's contacts and import pages", () => {
  it("creates a contact with data rows, edits its subscription and data, and deletes it after confirming", async () => {
    const { context, page, problems } = await dashboard.open();
    await dashboard.signIn(page);
    await dashboard.nav(page, "Contacts");
    await page.getByRole("link", { name: "New contact" }).click();
    await page.getByLabel("Email", { exact: true }).fill("zoe@example.org");
    await page.getByRole("checkbox", { name: /Subscribed — they agreed/ }).check();
    const row = (n: number) => page.getByRole("group", { name: `Data field ${n}`, exact: true });
    await expect.poll(() => row(1).getByLabel("Key").inputValue()).toBe("firstName");
    await row(1).getByLabel("Value").fill("Zoe");
    await page.getByRole("button", { name: "Add data field" }).click();
    await row(2).getByLabel("Key").fill("score");
    await row(2).getByLabel("Value").fill("7");
    await row(2).getByLabel("Type").selectOption("number");
    await page.getByRole("button", { name: "Create contact" }).click();
    await page.waitForURL(/\/app\/contacts\/(?!new$)[^/]+$/);
    const id = page.url().split("/").pop()!;
    expect((await api("GET", `/contacts/${id}`)).body).toMatchObject({ email: "zoe@example.org", subscribed: true, data: { firstName: "Zoe", score: 7 } });
    await expect.poll(() => page.locator("h1").textContent()).toBe("zoe@example.org");

    // Edit: unsubscribe, change a number, remove a key (sent as null, so it goes).
    await page.getByRole("checkbox", { name: /Subscribed — they agreed/ }).uncheck();
    await expect.poll(() => row(2).getByLabel("Value").inputValue()).toBe("7");
    await row(2).getByLabel("Value").fill("8");
    await page.getByRole("button", { name: "Remove data field firstName" }).click();
    await page.getByRole("button", { name: "Save contact" }).click();
    await expect.poll(() => page.getByRole("status").textContent()).toContain("Contact saved");
    const edited = (await api("GET", `/contacts/${id}`)).body;
    expect(edited).toMatchObject({ subscribed: false, data: { score: 8 } });
    expect(edited.data).not.toHaveProperty("firstName");

    await page.getByRole("button", { name: "Delete contact" }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Delete", exact: true }).click();
    await page.waitForURL(/\/app\/contacts$/);
    expect((await api("GET", `/contacts/${id}`)).status).toBe(404);
    expect(problems).toEqual([]);
    await context.close();
  });

  it("imports a Mailchimp export through the mapping step, shows the progress and the result, and downloads the row errors", async () => {
    const { context, page, problems } = await dashboard.open();
    await dashboard.signIn(page);
    await dashboard.nav(page, "Contacts");
    await page.getByRole("link", { name: "Import CSV" }).click();
    await expect.poll(() => page.locator("h1").textContent()).toBe("Import contacts");
    await page.getByLabel("CSV file").setInputFiles({ name: "mailchimp.csv", mimeType: "text/csv", buffer: Buffer.from(MAILCHIMP_CSV) });

    // The mapping step: the header and the first rows, each column's target and type as the server would pick them.
    const column = (name: string) => page.getByRole("group", { name, exact: true });
    await column("Email Address").waitFor();
    expect(await page.getByRole("region", { name: "The file's first rows" }).locator("th").allTextContents()).toEqual(
      MAILCHIMP_CSV.split("\r\n")[0].split(","),
    );
    expect(await column("Email Address").getByLabel("Target").inputValue()).toBe("email");
    expect(await column("First Name").getByLabel("Data key").inputValue()).toBe("firstName");
    expect(await column("First Name").getByLabel("Type").inputValue()).toBe("text");
    expect(await column("MEMBER_RATING").getByLabel("Data key").inputValue()).toBe("memberRating");
    expect(await column("MEMBER_RATING").getByLabel("Type").inputValue()).toBe("number");
    expect(await column("OPTIN_TIME").getByLabel("Data key").inputValue()).toBe("optinTime");
    // Changes: Mailchimp's internal id left out, the opt-in time stored as a date.
    await column("LEID").getByLabel("Target").selectOption("ignore");
    await column("OPTIN_TIME").getByLabel("Type").selectOption("date");
    // No subscription chosen yet: nothing can be imported.
    const importButton = page.getByRole("button", { name: "Import", exact: true });
    expect(await importButton.isDisabled()).toBe(true);
    await page.getByRole("radio", { name: /Subscribe them/ }).check();
    await page.getByRole("heading", { name: "2. Map the columns" }).evaluate((h) => h.scrollIntoView());
    await dashboard.shot(page, "contact-import-1280");
    const uploads: string[] = [];
    page.on("request", (r) => r.method() === "POST" && r.url().includes("/contacts/imports") && uploads.push(r.url()));
    await importButton.click();

    await expect.poll(() => page.locator("h2#import-progress").textContent(), { timeout: 60_000 }).toBe("Import finished");
    expect(await page.locator("progress").count()).toBe(1);
    const columns = JSON.parse(new URL(uploads[0]).searchParams.get("columns")!);
    expect(columns).toEqual({ LEID: { to: "ignore" }, OPTIN_TIME: { to: "data.optinTime", type: "date" } });
    expect(new URL(uploads[0]).searchParams.get("subscribed")).toBe("true");
    const result = async (key: string) => page.locator(`[data-result="${key}"]`).textContent();
    expect(await result("created")).toBe("2");
    expect(await result("updated")).toBe("0");
    expect(await result("failed")).toBe("1");
    expect(await result("duplicates")).toBe("1");
    expect(await page.locator("main").textContent()).toContain("Rows without a subscribed value were subscribed");

    // The row errors as a CSV file, each with the row as it was in the file.
    const [download] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: "Download errors (CSV)" }).click()]);
    const errors = await textOf(download);
    expect(errors.split("\r\n")[0]).toBe(`row,error,${MAILCHIMP_CSV.split("\r\n")[0]}`);
    expect(errors).toMatch(/^3,.*not-an-email/m);

    // The import stays listed: its result opens again from the recent imports.
    await page.getByRole("button", { name: "Import another file" }).click();
    await page
      .getByRole("button", { name: /^View the import of/ })
      .first()
      .click();
    await expect.poll(() => result("duplicates")).toBe("1");
    expect(await result("created")).toBe("2");

    const mia = await contactByEmail("mia@example.org");
    expect(mia).toMatchObject({ subscribed: true, data: { firstName: "Mia", lastName: "Rossi-Lang", memberRating: 5 } });
    expect(mia.data).not.toHaveProperty("leid");
    expect(new Date(mia.data.optinTime).toISOString()).toBe("2024-01-05T10:00:00.000Z");
    expect((await contactByEmail("noah@example.org")).data).toMatchObject({ firstName: "Noah", memberRating: 2 });
    expect(problems).toEqual([]);
    await context.close();
  }, 120_000);

  it("exports the contacts with one column per data key and a BOM for Excel", async () => {
    const { context, page, problems } = await dashboard.open();
    await dashboard.signIn(page);
    await dashboard.nav(page, "Contacts");
    await page.getByText("Export contacts (CSV)").click();
    expect(await page.getByLabel("One column per data key").isChecked()).toBe(true);
    await page.getByLabel("For Excel (UTF-8 BOM)").check();
    await page.getByLabel("Only", { exact: true }).selectOption("true");
    await dashboard.shot(page, "contacts-1280");
    const [download] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: "Download CSV" }).click()]);
    expect(download.suggestedFilename()).toMatch(/\.csv$/);
    const text = await textOf(download);
    expect(text.startsWith("\uFEFF")).toBe(true);
    const [header, ...rows] = text.slice(1).trim().split(/\r?\n/);
    const names = header.split(",");
    expect(names.slice(0, 5)).toEqual(["id", "email", "subscribed", "createdAt", "updatedAt"]);
    expect(names).toEqual(expect.arrayContaining(["firstName", "plan"]));
    expect(names).not.toContain("data");
    const ada = rows.find((r) => r.includes("ada@example.net"))!;
    expect(ada.split(",")[names.indexOf("firstName")]).toBe("Ada");
    expect(problems).toEqual([]);
    await context.close();
  });

  it("shows campaigns by name, not by id, on the emails, an email's and a contact's pages, read with one request", async () => {
    const created = await api("POST", "/campaigns", {
      name: "Spring sale",
      subject: "Spring",
      body: "<p>Spring</p>",
      from: `hello@${DOMAIN}`,
      audienceType: "ALL",
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const campaignId = created.body.data.id;
    expect((await api("POST", `/campaigns/${campaignId}/send`, {})).status).toBeLessThan(300);
    await expect.poll(async () => (await api("GET", `/emails?campaignId=${campaignId}`)).body.data.items.length, { timeout: 45_000 }).toBeGreaterThan(0);
    const { context, page, problems } = await dashboard.open();
    await dashboard.signIn(page);
    const lists: string[] = [];
    page.on("request", (r) => new URL(r.url()).pathname === "/campaigns" && lists.push(r.url()));
    await dashboard.nav(page, "Emails");
    const campaignLink = page.locator(`main table a[href="/app/campaigns/${campaignId}"]`);
    await expect.poll(() => campaignLink.first().textContent()).toBe("Spring sale");
    expect(await campaignLink.count()).toBeGreaterThan(1);
    expect(lists).toHaveLength(1);
    expect(await page.locator("main").textContent()).not.toContain(campaignId);

    await page.getByRole("link", { name: "Spring", exact: true }).first().click();
    await expect.poll(() => page.locator(`dd a[href="/app/campaigns/${campaignId}"]`).textContent()).toBe("Spring sale");
    expect(await page.locator("main").textContent()).not.toContain(campaignId);
    const ada = await contactByEmail("ada@example.net");
    await page.goto(`${url}/app/contacts/${ada.id}`);
    await expect.poll(() => page.locator(`.timeline a[href="/app/campaigns/${campaignId}"]`).first().textContent()).toBe("Spring sale");
    expect(problems).toEqual([]);
    await context.close();
  }, 90_000);

  it("fits a 390x844 phone on the contacts, import, emails, events, segments and domains pages", async () => {
    const { context, page, problems } = await dashboard.open({ width: 390, height: 844 });
    await dashboard.signIn(page);
    for (const name of ["Contacts", "Emails", "Events", "Segments", "Domains"]) {
      await dashboard.nav(page, name);
      await page.waitForFunction(() => !document.body.textContent?.includes("Loading…"));
      expect(await overflow(page), name).toBeLessThanOrEqual(0);
    }
    await dashboard.nav(page, "Contacts");
    await page.getByText("Export contacts (CSV)").click();
    expect(await overflow(page), "contacts with the export form").toBeLessThanOrEqual(0);
    await dashboard.shot(page, "contacts-390");
    const contact = (await api("GET", "/contacts")).body.contacts[0];
    for (const path of ["/contacts/new", `/contacts/${contact.id}`, `/domains/${(await api("GET", "/domains")).body.data.items[0].id}`]) {
      await page.goto(`${url}/app${path}`);
      await page.locator("h1").first().waitFor();
      await page.waitForFunction(() => !document.body.textContent?.includes("Loading…"));
      expect(await overflow(page), path).toBeLessThanOrEqual(0);
    }
    await page.goto(`${url}/app/contacts/import`);
    await page.getByLabel("CSV file").setInputFiles({ name: "mailchimp.csv", mimeType: "text/csv", buffer: Buffer.from(MAILCHIMP_CSV) });
    await page.getByRole("group", { name: "Email Address", exact: true }).waitFor();
    expect(await overflow(page), "the import's mapping step").toBeLessThanOrEqual(0);
    await page.getByRole("group", { name: "First Name", exact: true }).evaluate((g) => g.scrollIntoView());
    await dashboard.shot(page, "contact-import-390");
    expect(problems).toEqual([]);
    await context.close();
  });

  it("has no serious or critical axe-core violation on the contacts and import pages", async () => {
    const { context, page } = await dashboard.open({ bypassCSP: true });
    await dashboard.signIn(page);
    const contact = (await api("GET", "/contacts")).body.contacts[0];
    const found: string[] = [];
    for (const path of ["/contacts", "/contacts/new", `/contacts/${contact.id}`, "/emails", "/events", "/contacts/import"]) {
      await page.goto(`${url}/app${path}`);
      await page.locator("h1").first().waitFor();
      await page.waitForFunction(() => !document.body.textContent?.includes("Loading…"));
      if (path === "/contacts") await page.getByText("Export contacts (CSV)").click();
      found.push(...(await dashboard.axeCheck(page, path)));
    }
    await page.getByLabel("CSV file").setInputFiles({ name: "mailchimp.csv", mimeType: "text/csv", buffer: Buffer.from(MAILCHIMP_CSV) });
    await page.getByRole("group", { name: "Email Address", exact: true }).waitFor();
    found.push(...(await dashboard.axeCheck(page, "/contacts/import (mapping)")));
    expect(found).toEqual([]);
    await context.close();
  }, 120_000);
});
