import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { v7 as uuidv7 } from "uuid";
import { afterEach, describe, expect, it, vi } from "vitest";
import { getDb } from "../../src/db/client";
import { emails, projects, sendHeaders, workflowExecutions, workflowVersions } from "../../src/db/schema";
import type { Env } from "../../src/env";
import { pruneOldEmails, pruneOldExecutions, pruneOldWorkflowVersions } from "../../src/services/retention";
import { campaignSetup } from "../support/campaigns";
import { call, expectError, type JsonResponse, newProject, type TestProject } from "../support/http";
import { insertOldEmail } from "../support/emails";
import { sendingSetup } from "../support/sending";
import { decodeWords } from "../fakes/ses";
import type { CampaignResponse, EmailList } from "../support/api";

vi.setConfig({ testTimeout: 60_000 });
afterEach(() => vi.restoreAllMocks());

const db = () => getDb(env.DB);
const DAY = 24 * 3600_000;
const utf8 = (text: string) => new TextEncoder().encode(text).length;
const storedBytes = async (projectId: string) => (await db().select({ b: projects.storedBytes }).from(projects).where(eq(projects.id, projectId)))[0].b;
const r2StoredBytes = async (projectId: string) => (await db().select({ b: projects.r2StoredBytes }).from(projects).where(eq(projects.id, projectId)))[0].b;

interface Created {
  id: string;
}
interface Envelope<T> {
  data: T;
}
interface Total {
  data: { total: number };
}

/** The project's API through the Worker with some settings changed. */
function client(p: TestProject, settings: Partial<Env> = {}) {
  const testEnv = { ...env, ...settings } as Env;
  const as =
    (key: string) =>
    <T>(method: string, path: string, body?: unknown): Promise<JsonResponse<T>> =>
      call<T>(method, path, { key, body, headers: { "Content-Type": "application/json" }, env: testEnv });
  return { secret: as(p.secretKey), public: as(p.publicKey) };
}

const hold = (eventName: string) => [{ id: "hold", type: "WAIT_FOR_EVENT", config: { eventName, timeout: { amount: 1, unit: "days" } } }];

describe("stored bytes: one figure per project, kept by D1 triggers", () => {
  it("each kind adds its bytes when written and takes them off when deleted: templates, contact and event data, workflow versions", async () => {
    const p = await newProject();
    const api = client(p).secret;
    const at0 = await storedBytes(p.id);

    const subject = "Grüße {{name}}";
    const body = `<p>${"é".repeat(1000)}</p>`;
    const template = await api<Created>("POST", "/templates", { name: "t", subject, body, type: "TRANSACTIONAL" });
    expect(template.status).toBe(201);
    expect(await storedBytes(p.id)).toBe(at0 + utf8(subject) + utf8(body));
    const shorter = "<p>short</p>";
    expect((await api("PATCH", `/templates/${template.body.id}`, { body: shorter })).status).toBe(200);
    expect(await storedBytes(p.id)).toBe(at0 + utf8(subject) + utf8(shorter));
    expect((await api("DELETE", `/templates/${template.body.id}`)).status).toBe(204);
    expect(await storedBytes(p.id)).toBe(at0);

    // Contact data and the event's data, through /v1/track; deleting the contact takes both off.
    const tracked = await api<{ contact: string }>("POST", "/v1/track", { email: "a@example.com", event: "visit", data: { note: "n".repeat(2000) } });
    expect(tracked.status).toBe(200);
    const withBoth = await storedBytes(p.id);
    expect(withBoth - at0).toBeGreaterThanOrEqual(2 * 2000);
    const [contact] = (await api<{ contacts: { id: string }[] }>("GET", "/contacts")).body.contacts;
    expect((await api("DELETE", `/contacts/${contact.id}`)).status).toBe(204);
    expect(await storedBytes(p.id)).toBe(at0);

    // Each workflow version's steps count.
    const workflow = await api<Created>("POST", "/workflows", { name: "w", eventName: "signup", steps: hold("x".repeat(90)) });
    expect(workflow.status).toBe(201);
    const v1 = await storedBytes(p.id);
    expect(v1 - at0).toBeGreaterThan(90);
    expect((await api("PATCH", `/workflows/${workflow.body.id}`, { steps: hold("y".repeat(95)) })).status).toBe(200);
    expect((await storedBytes(p.id)) - v1).toBeGreaterThan(95);
  });

  it("email HTML counts for every recipient; a campaign's body and its mail count too", async () => {
    const s = await campaignSetup();
    const at0 = await storedBytes(s.project.id);
    const body = "<p>Hello</p>";
    const plain = await s.send({ to: "a@example.com", from: s.from, subject: "Hi", body });
    expect(plain.status).toBe(200);
    const one = (await storedBytes(s.project.id)) - at0;
    expect(one).toBeGreaterThanOrEqual(utf8(body));
    expect((await s.send({ to: ["b@example.com", "c@example.com"], from: s.from, subject: "Hi", body })).status).toBe(200);
    expect((await storedBytes(s.project.id)) - at0 - one).toBeGreaterThanOrEqual(2 * utf8(body));

    await s.addContacts([{ email: "c1@example.com" }, { email: "c2@example.com" }, { email: "c3@example.com" }]);
    const beforeCampaign = await storedBytes(s.project.id);
    const campaignBody = `<p>${"c".repeat(3000)}</p>`;
    const campaign = await s.createCampaign({ body: campaignBody });
    expect((await storedBytes(s.project.id)) - beforeCampaign).toBeGreaterThanOrEqual(utf8(campaignBody));
    const beforeMail = await storedBytes(s.project.id);
    const beforeMailR2 = await r2StoredBytes(s.project.id);
    expect((await s.request("POST", `/campaigns/${campaign.id}/send`)).status).toBe(200);
    await s.pump();
    expect((await s.request<CampaignResponse>("GET", `/campaigns/${campaign.id}`)).body.data.status).toBe("SENT");
    // Once sent, the mail's HTML is kept in R2 (issue 34), counted apart from D1.
    expect((await r2StoredBytes(s.project.id)) - beforeMailR2).toBeGreaterThanOrEqual(3 * 3000);
    expect((await storedBytes(s.project.id)) - beforeMail).toBeLessThan(3000);
  });

  it("custom headers are stored once per send: 50 recipients with 8 KB of headers add the headers' bytes once; every delivered message carries them; they go with the send's last email", async () => {
    const s = await sendingSetup({ SEND_RATE_PER_SECOND: "100000" });
    const to = Array.from({ length: 50 }, (_, i) => `r${i}@example.com`);
    // 10 headers of 8 + 800 bytes: 8,080 bytes of names and values (the cap is 8,192).
    const headers = Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`X-Note-${i}`, `${i}${"v".repeat(799)}`]));
    const send = async (withHeaders: boolean) => {
      const subject = withHeaders ? "With headers" : "Plain";
      const res = await s.send({ to, from: s.from, subject, body: "<p>Hello</p>", ...(withHeaders ? { headers } : {}) });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return res.body.data.emails.map((e) => e.email);
    };
    await send(false); // creates the 50 contacts, so the next two sends store only their emails
    const at0 = await storedBytes(s.project.id);
    await send(false);
    const plain = (await storedBytes(s.project.id)) - at0;
    const at1 = await storedBytes(s.project.id);
    const ids = await send(true);
    const headerBytes = utf8(JSON.stringify(headers));
    expect((await storedBytes(s.project.id)) - at1 - plain).toBe(headerBytes);

    // Every message of the send carries every header; the others none.
    const queued = s.queue.take().map((m) => m.body);
    for (let i = 0; i < queued.length; i += 50) await s.deliver(queued.slice(i, i + 50));
    expect(s.ses.calls).toHaveLength(150);
    const withHeaders = s.ses.calls.filter((c) => decodeWords(c.mime.headers.subject) === "With headers");
    expect(withHeaders.map((c) => c.to[0]).sort()).toEqual([...to].sort());
    for (const call of s.ses.calls) {
      for (const [name, value] of Object.entries(headers)) {
        expect(call.mime.headers[name.toLowerCase()]).toBe(withHeaders.includes(call) ? value : undefined);
      }
    }
    expect((await s.request<{ status: string }>("GET", `/emails/${ids[0]}`)).body.status).toBe("SENT");

    // The retention cron's email pruning (a year on, oldest first, in small batches here): the headers
    // stay while an email of the send is left, and go with the last one.
    const headerRows = async () => (await db().select().from(sendHeaders).where(eq(sendHeaders.projectId, s.project.id))).length;
    const emailsLeft = async (of?: string[]) =>
      (await db().select({ id: emails.id }).from(emails).where(eq(emails.projectId, s.project.id))).filter((e) => !of || of.includes(e.id)).length;
    expect(await headerRows()).toBe(1);
    // Sent, an email keeps its headers ("{}") in D1; its HTML is in R2 (issue 34).
    const perEmail = plain / 50 - utf8("<p>Hello</p>");
    const before = await storedBytes(s.project.id);
    const yearOn = new Date(Date.now() + 400 * DAY);
    while ((await emailsLeft(ids)) === 50) expect(await pruneOldEmails(db(), env, yearOn, 10)).toBeGreaterThan(0);
    expect(await emailsLeft(ids)).toBeGreaterThan(0);
    expect(await headerRows()).toBe(1);
    expect(before - (await storedBytes(s.project.id))).toBe((150 - (await emailsLeft())) * perEmail);
    while ((await emailsLeft()) > 0) expect(await pruneOldEmails(db(), env, yearOn, 10)).toBeGreaterThan(0);
    expect(await headerRows()).toBe(0);
    expect(before - (await storedBytes(s.project.id))).toBe(150 * perEmail + headerBytes);
  });

  it("past QUOTA_STORED_BYTES every kind of write is a 403 QUOTA_EXCEEDED and writes nothing; deleting frees the space", async () => {
    const p = await newProject();
    const limits = { QUOTA_STORED_BYTES: "6000" };
    const { secret: api, public: pub } = client(p, limits);
    const first = await api<Created>("POST", "/templates", { name: "a", subject: "A", body: "a".repeat(5000), type: "TRANSACTIONAL" });
    expect(first.status).toBe(201);
    const big = "b".repeat(1500);
    const refused = expectError(await api("POST", "/templates", { name: "b", subject: "B", body: big, type: "TRANSACTIONAL" }), 403, "QUOTA_EXCEEDED");
    expect(refused.message).toContain("6000 bytes");
    expect((await api<Total>("GET", "/templates")).body.data.total).toBe(1);
    expectError(await api("PATCH", `/templates/${first.body.id}`, { body: "a".repeat(7000) }), 403, "QUOTA_EXCEEDED");
    expect((await api<{ body: string }>("GET", `/templates/${first.body.id}`)).body.body).toBe("a".repeat(5000));
    // Event and contact data: neither the contact nor the event is written.
    expectError(await api("POST", "/v1/track", { email: "t@example.com", event: "visit", data: { note: big } }), 403, "QUOTA_EXCEEDED");
    expectError(await pub("POST", "/v1/track", { email: "t@example.com", event: "visit", data: { note: "p".repeat(1000) } }), 403, "QUOTA_EXCEEDED");
    expectError(await api("POST", "/contacts", { email: "c@example.com", data: { note: big } }), 403, "QUOTA_EXCEEDED");
    expect((await api<{ total: number }>("GET", "/contacts")).body.total).toBe(0);
    expect((await api<Total>("GET", "/events")).body.data.total).toBe(0);
    // A workflow's definition.
    expectError(await api("POST", "/workflows", { name: "w", eventName: "e", steps: bigStep }), 403, "QUOTA_EXCEEDED");
    expect((await api<Total>("GET", "/workflows")).body.data.total).toBe(0);
    // Deleting the template frees its bytes.
    expect((await api("DELETE", `/templates/${first.body.id}`)).status).toBe(204);
    expect((await api("POST", "/templates", { name: "b", subject: "B", body: big, type: "TRANSACTIONAL" })).status).toBe(201);
    expect((await api("POST", "/v1/track", { email: "t@example.com", event: "visit", data: { note: big } })).status).toBe(200);
  });

  it("a /v1/send whose HTML, custom headers or contact data would pass QUOTA_STORED_BYTES is a 403 and writes nothing: no email, no contact", async () => {
    const s = await sendingSetup({ QUOTA_STORED_BYTES: "6000" });
    const email = (to: string[] | string, extra: Record<string, unknown> = {}) => ({ to, from: `hi@${s.domain}`, subject: "Hi", body: "<p>Hi</p>", ...extra });
    expect((await s.send(email("a@example.com"))).status).toBe(200);
    const left = 6000 - (await storedBytes(s.project.id));
    const refusals = [
      email(["b@example.com", "c@example.com"], { body: `<p>${"x".repeat(Math.ceil(left / 2))}</p>` }),
      // Header values are at most 998 characters: enough 900-character ones to pass what is left.
      email("b@example.com", { headers: Object.fromEntries(Array.from({ length: Math.ceil(left / 900) }, (_, i) => [`X-Note-${i}`, "h".repeat(900)])) }),
      // Attachments are in R2 since issue 34: QUOTA_R2_STORED_BYTES (test/routes/send.attachments-r2.test.ts).
      email("b@example.com", { data: { note: "d".repeat(left) } }),
    ];
    for (const body of refusals) expectError(await s.send(body), 403, "QUOTA_EXCEEDED");
    const stored = await db().select({ to: emails.toAddress }).from(emails).where(eq(emails.projectId, s.project.id));
    expect(stored.map((e) => e.to)).toEqual(["a@example.com"]);
    expect((await s.request<{ total: number }>("GET", "/contacts")).body.total).toBe(1);
    expect(await storedBytes(s.project.id)).toBe(6000 - left);
    // Within the quota the same send goes through.
    expect((await s.send(email("b@example.com", { data: { note: "d".repeat(100) } }))).status).toBe(200);
  });

  it("a campaign page past QUOTA_STORED_BYTES writes nothing and the campaign waits, SENDING, instead of failing half-way", async () => {
    const s = await campaignSetup({ QUOTA_STORED_BYTES: "8000" });
    await s.addContacts([{ email: "c1@example.com" }, { email: "c2@example.com" }, { email: "c3@example.com" }]);
    const campaign = await s.createCampaign({ body: `<p>${"c".repeat(3000)}</p>` });
    expect((await s.request("POST", `/campaigns/${campaign.id}/send`)).status).toBe(200);
    await s.pump();
    expect((await s.request<CampaignResponse>("GET", `/campaigns/${campaign.id}`)).body.data.status).toBe("SENDING");
    expect((await s.request<EmailList>("GET", "/emails?limit=1")).body.data.total).toBe(0);
  });

  it("count caps: templates, campaigns, segments and one workflow's versions past their quota are 403 QUOTA_EXCEEDED", async () => {
    const s = await sendingSetup({ QUOTA_TEMPLATES: "2", QUOTA_CAMPAIGNS: "2", QUOTA_SEGMENTS: "2", QUOTA_WORKFLOW_VERSIONS: "2" });
    const api = s.request;
    const template = (n: number) => api<Created>("POST", "/templates", { name: `t${n}`, subject: "S", body: "B", type: "TRANSACTIONAL" });
    const [t1] = [await template(1), await template(2)];
    expect(t1.status).toBe(201);
    expect(expectError(await template(3), 403, "QUOTA_EXCEEDED").message).toContain("2 templates");
    expect((await api("DELETE", `/templates/${t1.body.id}`)).status).toBe(204);
    expect((await template(3)).status).toBe(201);

    const campaign = (n: number) =>
      api<Envelope<Created>>("POST", "/campaigns", { name: `c${n}`, subject: "S", body: "<p>B</p>", from: s.from, audienceType: "ALL" });
    expect([(await campaign(1)).status, (await campaign(2)).status]).toEqual([201, 201]);
    expect(expectError(await campaign(3), 403, "QUOTA_EXCEEDED").message).toContain("2 campaigns");
    expect((await api<{ total: number }>("GET", "/campaigns")).body.total).toBe(2);

    const condition = { logic: "AND", groups: [{ filters: [{ field: "data.plan", operator: "equals", value: "pro" }] }] };
    const segment = (n: number) => api("POST", "/segments", { name: `s${n}`, condition });
    expect([(await segment(1)).status, (await segment(2)).status]).toEqual([201, 201]);
    expect(expectError(await segment(3), 403, "QUOTA_EXCEEDED").message).toContain("2 segments");

    const workflow = await api<Created>("POST", "/workflows", { name: "w", eventName: "e", steps: hold("v1") });
    expect((await api("PATCH", `/workflows/${workflow.body.id}`, { steps: hold("v2") })).status).toBe(200);
    expectError(await api("PATCH", `/workflows/${workflow.body.id}`, { steps: hold("v3") }), 403, "QUOTA_EXCEEDED");
    expect((await api<{ version: number }>("GET", `/workflows/${workflow.body.id}`)).body.version).toBe(2);
    // A change that makes no version (the name) still passes.
    expect((await api("PATCH", `/workflows/${workflow.body.id}`, { name: "renamed" })).status).toBe(200);
  });
});

/** A definition of about 1,500 bytes. */
const bigStep = [{ id: "u", type: "UPDATE_CONTACT", config: { data: { note: "w".repeat(1500) } } }];

describe("pruning by the cron: bounded batches that take the bytes off", () => {
  const headers = { "X-Old": "1" };
  const oldEmail = (projectId: string, daysAgo: number, status: "SENT" | "QUEUED" = "SENT") => insertOldEmail(projectId, daysAgo, { status, headers });

  it("final email records older than EMAIL_RETENTION_DAYS are deleted, a bounded batch per tick, their bytes taken off", async () => {
    const p = await newProject();
    const old = [await oldEmail(p.id, 400), await oldEmail(p.id, 399), await oldEmail(p.id, 398)];
    const stuck = await oldEmail(p.id, 400, "QUEUED");
    const recent = await oldEmail(p.id, 10);
    const before = await storedBytes(p.id);
    const each = utf8("<p>old</p>") + utf8(JSON.stringify(headers));
    expect(await pruneOldEmails(db(), env, new Date(), 2)).toBe(2);
    expect(await storedBytes(p.id)).toBe(before - 2 * each);
    expect(await pruneOldEmails(db(), env, new Date(), 2)).toBe(1);
    expect(await pruneOldEmails(db(), env, new Date(), 2)).toBe(0);
    const left = (await db().select({ id: emails.id }).from(emails).where(eq(emails.projectId, p.id))).map((r) => r.id).sort();
    expect(left).toEqual([stuck, recent].sort());
    expect(old.some((id) => left.includes(id))).toBe(false);
    expect((await p.api.get(`/emails/${old[0]}`)).status).toBe(404);
  });

  it("unused old workflow versions and finished executions are pruned; the current version and one a running execution uses stay", async () => {
    const p = await newProject();
    const created = await p.api.post<Created>("/workflows", { name: "w", eventName: "e", steps: hold("v1") });
    const id = created.body.id;
    for (const v of ["v2", "v3", "v4"]) expect((await p.api.patch(`/workflows/${id}`, { steps: hold(v) })).status).toBe(200);
    const twoHoursAgo = new Date(Date.now() - 2 * 3600_000);
    await db().update(workflowVersions).set({ createdAt: twoHoursAgo }).where(eq(workflowVersions.workflowId, id));
    const execution = (status: "RUNNING" | "COMPLETED", version: number, daysAgo: number) => ({
      id: uuidv7({ msecs: Date.now() - daysAgo * DAY }),
      projectId: p.id,
      workflowId: id,
      workflowVersion: version,
      contactId: "c",
      triggerKey: `k${version}-${status}-${daysAgo}`,
      status,
      startedAt: new Date(Date.now() - daysAgo * DAY),
      finishedAt: status === "RUNNING" ? null : new Date(Date.now() - daysAgo * DAY),
    });
    const running = execution("RUNNING", 2, 200);
    const finishedOld = [execution("COMPLETED", 1, 200), execution("COMPLETED", 3, 150)];
    const finishedRecent = execution("COMPLETED", 4, 10);
    await db()
      .insert(workflowExecutions)
      .values([running, ...finishedOld, finishedRecent]);

    // Executions first (so version 1 and 3 are no longer referenced by anything that runs).
    expect(await pruneOldExecutions(env, new Date(), 1)).toBe(1);
    expect(await pruneOldExecutions(env, new Date(), 10)).toBe(1);
    const executionsLeft = (await db().select({ id: workflowExecutions.id }).from(workflowExecutions).where(eq(workflowExecutions.workflowId, id))).map(
      (r) => r.id,
    );
    expect(executionsLeft.sort()).toEqual([running.id, finishedRecent.id].sort());

    const before = await storedBytes(p.id);
    expect(await pruneOldWorkflowVersions(env, new Date(), 1)).toBe(1);
    expect(await pruneOldWorkflowVersions(env, new Date(), 10)).toBe(1);
    expect(await pruneOldWorkflowVersions(env, new Date(), 10)).toBe(0);
    const versions = (await db().select({ v: workflowVersions.version }).from(workflowVersions).where(eq(workflowVersions.workflowId, id))).map((r) => r.v);
    expect(versions.sort()).toEqual([2, 4]);
    expect(await storedBytes(p.id)).toBeLessThan(before);
    // A version superseded a moment ago is kept (an execution may be starting on it).
    expect((await p.api.patch(`/workflows/${id}`, { steps: hold("v5") })).status).toBe(200);
    expect(await pruneOldWorkflowVersions(env, new Date(), 10)).toBe(0);
  });
});
