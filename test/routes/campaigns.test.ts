import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import worker from "../../src/index";
import { eq } from "drizzle-orm";
import { projects } from "../../src/db/schema";
import { call, expectError, type JsonResponse, newProject } from "../support/http";
import { campaignSetup } from "../support/campaigns";
import type { CampaignList, CampaignResponse, CampaignStats, EmailList, Segment, Success } from "../support/api";

afterEach(() => vi.restoreAllMocks());

const err = (res: JsonResponse<unknown>, status: number, code?: string) => expectError(res, status, code);

async function cron(s: Awaited<ReturnType<typeof campaignSetup>>, at: Date) {
  const ctx = createExecutionContext();
  await worker.scheduled!(createScheduledController({ scheduledTime: at.getTime(), cron: "* * * * *" }), s.env, ctx);
  await waitOnExecutionContext(ctx);
}

describe("campaigns API", () => {
  it("creates, reads, updates and lists campaigns with the contract's envelopes; audienceCondition is an alias", async () => {
    const s = await campaignSetup();
    const created = await s.request<CampaignResponse>("POST", "/campaigns", {
      name: "Filtered",
      description: "Pro users",
      subject: "Hi",
      body: "<p>Hi</p>",
      from: s.from,
      fromName: "News",
      replyTo: "reply@example.com",
      audienceType: "FILTERED",
      audienceCondition: { logic: "AND", groups: [{ filters: [{ field: "data.plan", operator: "equals", value: "pro" }] }] },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body).toMatchObject({
      success: true,
      data: {
        name: "Filtered",
        type: "FILTERED",
        audienceType: "FILTERED",
        status: "DRAFT",
        scheduledAt: null,
        sentAt: null,
        segmentId: null,
        fromName: "News",
        audienceFilter: { logic: "AND", groups: [{ filters: [{ field: "data.plan", operator: "equals", value: "pro" }] }] },
      },
    });
    const id = created.body.data.id;
    const updated = await s.request<CampaignResponse>("PATCH", `/campaigns/${id}`, { subject: "New subject", audienceType: "ALL" });
    expect(updated.body.data).toMatchObject({ subject: "New subject", audienceType: "ALL", audienceFilter: null, name: "Filtered" });
    expect((await s.request<CampaignResponse>("GET", `/campaigns/${id}`)).body.data.subject).toBe("New subject");

    for (let i = 0; i < 4; i++) await s.createCampaign({ name: `c${i}` });
    const page1 = await s.request<CampaignList>("GET", "/campaigns?limit=2");
    expect(page1.body).toMatchObject({ page: 1, pageSize: 2, total: 5, totalPages: 3, hasMore: true });
    expect(page1.body.campaigns.map((c) => c.name)).toEqual(["c3", "c2"]);
    const page2 = await s.request<CampaignList>("GET", "/campaigns?limit=2&page=2");
    expect(page2.body.campaigns.map((c) => c.name)).toEqual(["c1", "c0"]);
    const byCursor = await s.request<CampaignList>("GET", `/campaigns?limit=2&cursor=${page1.body.nextCursor}`);
    expect(byCursor.body).toMatchObject({ page: 2 });
    expect(byCursor.body.campaigns.map((c) => c.name)).toEqual(["c1", "c0"]);
    const drafts = await s.request("GET", "/campaigns?status=SENT");
    expect(drafts.body).toMatchObject({ campaigns: [], total: 0, totalPages: 0 });
    err(await s.request("GET", "/campaigns?limit=101"), 422);
    err(await s.request("GET", "/campaigns?status=DONE"), 422);
  });

  type Setup = Awaited<ReturnType<typeof campaignSetup>>;
  const baseOf = (s: Setup) => ({ name: "x", subject: "s", body: "<p>b</p>", from: s.from, audienceType: "ALL" });
  const foreignSegmentId = async () => {
    const other = await newProject("other");
    const foreign = await other.api.post<Segment>("/segments", {
      name: "x",
      condition: { logic: "AND", groups: [{ filters: [{ field: "email", operator: "exists" }] }] },
    });
    return foreign.body.id;
  };
  it.each([
    {
      refused: "an unverified sender (403)",
      body: async (s: Setup) => ({ ...baseOf(s), from: "me@not-verified.test" }),
      status: 403,
      code: "DOMAIN_NOT_VERIFIED",
    },
    { refused: "SEGMENT without segmentId", body: async (s: Setup) => ({ ...baseOf(s), audienceType: "SEGMENT" }), status: 422, fields: ["segmentId"] },
    {
      refused: "FILTERED without audienceFilter",
      body: async (s: Setup) => ({ ...baseOf(s), audienceType: "FILTERED" }),
      status: 422,
      fields: ["audienceFilter"],
    },
    {
      refused: "another project's segment",
      body: async (s: Setup) => ({ ...baseOf(s), audienceType: "SEGMENT", segmentId: await foreignSegmentId() }),
      status: 422,
      fields: ["segmentId"],
    },
    {
      refused: "a bad condition (422 with its path)",
      body: async (s: Setup) => ({
        ...baseOf(s),
        audienceType: "FILTERED",
        audienceFilter: { logic: "AND", groups: [{ filters: [{ field: "data.plan", operator: "within", value: 3 }] }] },
      }),
      status: 422,
      fieldsContain: "audienceFilter.groups.0.filters.0.operator",
    },
    { refused: "CR/LF in the subject", body: async (s: Setup) => ({ ...baseOf(s), subject: "a\r\nBcc: x@y.z" }), status: 422 },
    { refused: "a body that is not valid Liquid", body: async (s: Setup) => ({ ...baseOf(s), body: "{% if %}" }), status: 422 },
  ])("refuses $refused, storing nothing", async ({ body, status, code, fields, fieldsContain }) => {
    const s = await campaignSetup();
    const error = err(await s.request("POST", "/campaigns", await body(s)), status, code);
    if (fields) expect(error.errors?.map((e) => e.field)).toEqual(fields);
    if (fieldsContain) expect(error.errors?.map((e) => e.field)).toContain(fieldsContain);
    expect((await s.request<CampaignList>("GET", "/campaigns")).body.total).toBe(0);
  });

  it("keeps projects apart: another project's campaign is 404 on every endpoint", async () => {
    const s = await campaignSetup();
    const campaign = await s.createCampaign();
    const other = await newProject("other");
    for (const [method, path, body] of [
      ["get", `/campaigns/${campaign.id}`],
      ["patch", `/campaigns/${campaign.id}`, { name: "x" }],
      ["delete", `/campaigns/${campaign.id}`],
      ["post", `/campaigns/${campaign.id}/send`, {}],
      ["post", `/campaigns/${campaign.id}/cancel`, {}],
      ["post", `/campaigns/${campaign.id}/test`, { email: "a@example.com" }],
      ["get", `/campaigns/${campaign.id}/stats`],
    ] as const) {
      const res = method === "get" || method === "delete" ? await other.api[method](path) : await other.api[method](path, body);
      expectError(res, 404, "NOT_FOUND");
    }
    expect((await other.api.get<CampaignList>("/campaigns")).body.total).toBe(0);
    expectError(await s.project.publicApi.get("/campaigns"), 403);
  });

  it("an empty audience (only unsubscribed contacts) cannot be sent: 400 INVALID_STATE, nothing changes", async () => {
    const s = await campaignSetup();
    await s.addContacts([{ email: "gone@example.com", subscribed: false }]);
    const campaign = await s.createCampaign();
    err(await s.request("POST", `/campaigns/${campaign.id}/send`), 400, "INVALID_STATE");
    expect((await s.request<CampaignResponse>("GET", `/campaigns/${campaign.id}`)).body.data.status).toBe("DRAFT");
    expect(s.bulk.messages).toHaveLength(0);
  });

  it("a past or malformed scheduledFor, or an unknown field, is 422; nothing changes", async () => {
    const s = await campaignSetup();
    await s.addContacts([{ email: "here@example.com" }]);
    const campaign = await s.createCampaign();
    err(await s.request("POST", `/campaigns/${campaign.id}/send`, { scheduledFor: new Date(Date.now() - 60_000).toISOString() }), 422);
    err(await s.request("POST", `/campaigns/${campaign.id}/send`, { scheduledFor: "tomorrow" }), 422);
    err(await s.request("POST", `/campaigns/${campaign.id}/send`, { scheduledFor: "2030-01-01T00:00:00Z", extra: 1 }), 422);
    expect((await s.request<CampaignResponse>("GET", `/campaigns/${campaign.id}`)).body.data.status).toBe("DRAFT");
    expect(s.bulk.messages).toHaveLength(0);
  });

  it("scheduled -> cancelled -> DRAFT; scheduled again, two overlapping cron runs start it once; SENDING cannot be changed, cancelled or deleted", async () => {
    const s = await campaignSetup();
    await s.addContacts([{ email: "a@example.com" }, { email: "b@example.com" }]);
    const campaign = await s.createCampaign();
    err(await s.request("POST", `/campaigns/${campaign.id}/cancel`), 400, "INVALID_STATE");
    const at = new Date(Date.now() + 3_600_000);
    const scheduled = await s.request<CampaignResponse>("POST", `/campaigns/${campaign.id}/send`, { scheduledFor: at.toISOString() });
    expect(scheduled.body.data).toMatchObject({ status: "SCHEDULED", scheduledAt: at.toISOString() });
    // Editable while scheduled.
    expect((await s.request<CampaignResponse>("PATCH", `/campaigns/${campaign.id}`, { name: "Renamed" })).body.data).toMatchObject({
      name: "Renamed",
      status: "SCHEDULED",
    });
    err(await s.request("DELETE", `/campaigns/${campaign.id}`), 400, "INVALID_STATE");
    const cancelled = await s.request<CampaignResponse>("POST", `/campaigns/${campaign.id}/cancel`);
    expect(cancelled.body.data).toMatchObject({ status: "DRAFT", scheduledAt: null });

    await s.request("POST", `/campaigns/${campaign.id}/send`, { scheduledFor: at.toISOString() });
    await cron(s, new Date(at.getTime() - 60_000)); // not due yet
    expect((await s.request<CampaignResponse>("GET", `/campaigns/${campaign.id}`)).body.data.status).toBe("SCHEDULED");
    await Promise.all([cron(s, new Date(at.getTime() + 1000)), cron(s, new Date(at.getTime() + 2000))]);
    const pages = s.bulk.take();
    expect(pages.filter((m) => (m.body as any).kind === "campaign-page")).toHaveLength(1);
    expect((await s.request<CampaignResponse>("GET", `/campaigns/${campaign.id}`)).body.data.status).toBe("SENDING");

    err(await s.request("PATCH", `/campaigns/${campaign.id}`, { name: "x" }), 400, "INVALID_STATE");
    err(await s.request("POST", `/campaigns/${campaign.id}/cancel`), 400, "INVALID_STATE");
    err(await s.request("POST", `/campaigns/${campaign.id}/send`), 400, "INVALID_STATE");
    err(await s.request("DELETE", `/campaigns/${campaign.id}`), 400, "INVALID_STATE");

    s.bulk.messages.push(...pages);
    await s.pump();
    expect((await s.request<CampaignResponse>("GET", `/campaigns/${campaign.id}`)).body.data.status).toBe("SENT");
    expect(s.ses.calls.map((c) => c.to[0]).sort()).toEqual(["a@example.com", "b@example.com"]);
  });

  it("a due campaign of a project the reputation breaker paused stays SCHEDULED with no email; the first tick after the resume starts it", async () => {
    const s = await campaignSetup();
    await s.addContacts([{ email: "a@example.com" }, { email: "b@example.com" }]);
    const campaign = await s.createCampaign();
    const at = new Date(Date.now() + 3_600_000);
    const api = <T>(method: string, path: string) => call<T>(method, path, { key: s.project.secretKey, env: s.env });
    const status = async () => (await api<{ data: { status: string } }>("GET", `/campaigns/${campaign.id}`)).body.data.status;
    const emailCount = async () => (await api<{ data: { total: number } }>("GET", `/emails?campaignId=${campaign.id}`)).body.data.total;
    expect(
      (await call("POST", `/campaigns/${campaign.id}/send`, { key: s.project.secretKey, body: { scheduledFor: at.toISOString() }, env: s.env })).status,
    ).toBe(200);

    // Paused as the breaker's cron job pauses (src/store/reputation.ts sets these two columns).
    await s.db
      .update(projects)
      .set({ sendingPausedAt: new Date(), sendingPausedReason: "Bounce rate 10.00% (2 of 20 emails sent)" })
      .where(eq(projects.id, s.project.id));
    await cron(s, new Date(at.getTime() + 1000));
    await cron(s, new Date(at.getTime() + 2000));
    expect(await status()).toBe("SCHEDULED");
    expect(s.bulk.messages).toHaveLength(0);
    expect(await emailCount()).toBe(0);

    const resumed = await api<{ paused: boolean }>("POST", "/project/sending/resume");
    expect(resumed.status, JSON.stringify(resumed.body)).toBe(200);
    expect(resumed.body.paused).toBe(false);
    await cron(s, new Date(at.getTime() + 3000));
    expect(await status()).toBe("SENDING");
    await s.pump();
    expect(await status()).toBe("SENT");
    expect(await emailCount()).toBe(2);
    expect(s.ses.calls.map((c) => c.to[0]).sort()).toEqual(["a@example.com", "b@example.com"]);
  });

  it("a lost page message is re-queued by the cron, and the walk finishes once", async () => {
    const s = await campaignSetup();
    await s.addContacts([{ email: "a@example.com" }]);
    const campaign = await s.createCampaign();
    await s.request("POST", `/campaigns/${campaign.id}/send`);
    s.bulk.take(); // the first page message is lost
    await cron(s, new Date(Date.now() + 60_000)); // not stalled long enough yet
    expect(s.bulk.messages).toHaveLength(0);
    await cron(s, new Date(Date.now() + 10 * 60_000));
    expect(s.bulk.messages).toHaveLength(1);
    await s.pump();
    expect((await s.request<CampaignResponse>("GET", `/campaigns/${campaign.id}`)).body.data.status).toBe("SENT");
    expect(s.ses.calls).toHaveLength(1);
  });

  it("a segment audience: only subscribed members; the segment cannot be deleted while the campaign is DRAFT or SENDING, can be once SENT", async () => {
    const s = await campaignSetup();
    await s.addContacts([
      { email: "pro1@example.com", data: { plan: "pro" } },
      { email: "pro2@example.com", data: { plan: "pro" }, subscribed: false },
      { email: "free@example.com", data: { plan: "free" } },
    ]);
    const segment = await s.request<Segment>("POST", "/segments", {
      name: "Pro",
      condition: { logic: "AND", groups: [{ filters: [{ field: "data.plan", operator: "equals", value: "pro" }] }] },
    });
    expect(segment.body.memberCount).toBe(2);
    const campaign = await s.createCampaign({ audienceType: "SEGMENT", segmentId: segment.body.id });
    err(await s.request("DELETE", `/segments/${segment.body.id}`), 400, "INVALID_STATE");
    await s.request("POST", `/campaigns/${campaign.id}/send`);
    err(await s.request("DELETE", `/segments/${segment.body.id}`), 400, "INVALID_STATE");
    await s.pump();
    expect(s.ses.calls.map((c) => c.to[0])).toEqual(["pro1@example.com"]);
    expect((await s.request<CampaignResponse>("GET", `/campaigns/${campaign.id}`)).body.data.status).toBe("SENT");
    expect((await s.request("DELETE", `/segments/${segment.body.id}`)).status).toBe(204);
  });

  it("test sends: [TEST] subject, the contact's data, untracked, on the transactional queue, never in stats; stats count people", async () => {
    const s = await campaignSetup();
    await s.addContacts([
      { email: "ada@example.com", data: { firstName: "Ada" } },
      { email: "bob@example.com", data: { firstName: "Bob" } },
    ]);
    const campaign = await s.createCampaign({ body: '<p>Hi {{data.firstName}} <a href="https://example.com/x">x</a></p>' });
    const test = await s.request<Success<{ email: string }>>("POST", `/campaigns/${campaign.id}/test`, { email: "ADA@example.com" });
    expect(test.status, JSON.stringify(test.body)).toBe(200);
    expect(typeof test.body.data.email).toBe("string");
    expect(s.queue.messages).toHaveLength(1);
    expect(s.bulk.messages).toHaveLength(0);
    await s.pump();
    const [testCall] = s.ses.calls;
    const { decodeWords } = await import("../fakes/ses");
    expect(decodeWords(testCall.mime.headers.subject)).toBe("[TEST] Hello Ada");
    const html = testCall.mime.parts.find((p) => p.contentType.startsWith("text/html"))!.text;
    expect(html).toContain("Hi Ada");
    expect(html).toContain('href="https://example.com/x"'); // no click tracking
    expect(html).not.toContain("/t/o/"); // no open pixel
    expect((await s.request<CampaignStats>("GET", `/campaigns/${campaign.id}/stats`)).body.data).toMatchObject({
      totalRecipients: 0,
      sentCount: 0,
      openRate: 0,
    });
    expect((await s.request<EmailList>("GET", `/emails?campaignId=${campaign.id}`)).body.data.total).toBe(0);
    err(await s.request("POST", `/campaigns/${campaign.id}/test`, { email: "not-an-address" }), 422);

    await s.request("POST", `/campaigns/${campaign.id}/send`);
    await s.pump();
    const real = s.ses.calls.filter((c) => !decodeWords(c.mime.headers.subject).startsWith("[TEST]"));
    expect(real).toHaveLength(2);
    // Ada opens twice: one opener.
    const adaHtml = real.find((c) => c.to[0] === "ada@example.com")!.mime.parts.find((p) => p.contentType.startsWith("text/html"))!.text;
    const pixel = /<img src="([^"]*\/t\/o\/[^"]*)"/.exec(adaHtml)![1].replace(/&amp;/g, "&");
    for (let i = 0; i < 2; i++) {
      await call("GET", pixel, { binary: true, env: s.env });
    }
    const stats = await s.request<CampaignStats>("GET", `/campaigns/${campaign.id}/stats`);
    expect(stats.body.data).toMatchObject({ totalRecipients: 2, sentCount: 2, openedCount: 1, openRate: 50, clickRate: 0, failedCount: 0 });
    const opened = await s.request<EmailList>("GET", `/emails?campaignId=${campaign.id}&status=OPENED`);
    expect(opened.body.data.total).toBe(1);
  });

  it("deletes a DRAFT campaign", async () => {
    const s = await campaignSetup();
    const campaign = await s.createCampaign();
    expect((await s.request("DELETE", `/campaigns/${campaign.id}`)).status).toBe(204);
    err(await s.request("GET", `/campaigns/${campaign.id}`), 404);
  });
});
