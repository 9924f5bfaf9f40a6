import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { unsubscribeUrl } from "../../src/services/tracking/links";
import { automationProject } from "../support/workflows";
import { BULK_QUEUE, campaignSetup } from "../support/campaigns";
import { call, expectError } from "../support/http";
import type { ContactList, Email, EmailList, UpsertedContact } from "../support/api";

/**
 * Gate 4, the topic (src/services/consent/gates.ts): mail aimed at a topic reaches a contact only
 * if it is OPT_IN for it (its choice, or the topic's default), on /v1/send, a campaign's audience
 * page and at the claim. Topic mail carries List-Id; its one-click and link unsubscribe opt the
 * contact out of that topic only.
 */

type Setup = Awaited<ReturnType<typeof campaignSetup>>;

async function topic(s: Setup, key: string, defaultSubscription: "OPT_IN" | "OPT_OUT") {
  const res = await s.request<{ id: string }>("POST", "/topics", { key, name: key, defaultSubscription, visibility: "PUBLIC" });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.id;
}

async function contact(s: Setup, email: string, topics?: Record<string, boolean>) {
  const res = await s.request<UpsertedContact>("POST", "/contacts", { email, subscribed: true, topics });
  expect(res.status, JSON.stringify(res.body)).toBeLessThan(300);
  return res.body;
}

const topicsOf = async (s: Setup, contactId: string) =>
  Object.fromEntries(
    (await s.request<{ data: { items: { key: string; subscription: string }[] } }>("GET", `/contacts/${contactId}/topics`)).body.data.items.map((t) => [
      t.key,
      t.subscription,
    ]),
  );

describe("the topic gate on POST /v1/send", () => {
  it("sends topic mail only to contacts OPT_IN for the topic, refuses the others naming TOPIC, and names the topic in List-Id", async () => {
    const s = await campaignSetup();
    await topic(s, "news", "OPT_IN");
    await topic(s, "beta", "OPT_OUT");
    await contact(s, "default@example.com");
    await contact(s, "out@example.com", { news: false });
    await contact(s, "in@example.com", { beta: true });

    const refused = await s.send({ to: ["default@example.com", "out@example.com"], from: s.from, subject: "News", body: "<p>n</p>", topic: "news" });
    const error = expectError(refused, 400, "INVALID_STATE");
    expect(error.errors).toEqual([expect.objectContaining({ field: "to", code: "TOPIC", message: expect.stringContaining("out@example.com") })]);
    expect(s.queue.messages).toHaveLength(0);

    const news = await s.send({ to: "default@example.com", from: s.from, subject: "News", body: "<p>n</p>", topic: "news" });
    expect(news.status, JSON.stringify(news.body)).toBe(200);
    // OPT_OUT by default: only a contact that opted in.
    expectError(await s.send({ to: "default@example.com", from: s.from, subject: "Beta", body: "<p>b</p>", topic: "beta" }), 400, "INVALID_STATE");
    expect((await s.send({ to: "in@example.com", from: s.from, subject: "Beta", body: "<p>b</p>", topic: "beta" })).status).toBe(200);
    await s.pump();
    const headers = Object.fromEntries(s.ses.calls.map((c) => [c.to[0], c.mime.headers]));
    expect(headers["default@example.com"]["list-id"]).toBe(`<news.${s.project.id}.edge-mail.test>`);
    expect(headers["in@example.com"]["list-id"]).toBe(`<beta.${s.project.id}.edge-mail.test>`);
    expect(headers["default@example.com"]["list-unsubscribe-post"]).toBe("List-Unsubscribe=One-Click");

    const unknown = expectError(await s.send({ to: "in@example.com", from: s.from, subject: "x", body: "y", topic: "nope" }), 422);
    expect(unknown.errors?.map((e) => e.field)).toEqual(["topic"]);
    expectError(await s.send({ to: "in@example.com", from: s.from, subject: "x", body: "y", topic: "news", stream: "transactional" }), 422);
  });

  it("transactional mail without a topic ignores topic choices", async () => {
    const s = await campaignSetup();
    await topic(s, "news", "OPT_IN");
    await contact(s, "out@example.com", { news: false });
    const res = await s.send({ to: "out@example.com", from: s.from, subject: "Receipt", body: "<p>r</p>" });
    expect(res.status).toBe(200);
    await s.pump();
    expect(s.ses.calls.map((c) => c.to[0])).toEqual(["out@example.com"]);
    expect(s.ses.calls[0].mime.headers["list-id"]).toBeUndefined();
  });
});

describe("the topic gate on a campaign", () => {
  it("the audience page leaves out contacts not OPT_IN for the campaign's topic; an opt-out after the page is refused at the claim naming TOPIC", async () => {
    const s = await campaignSetup();
    const news = await topic(s, "news", "OPT_IN");
    await contact(s, "a@example.com");
    await contact(s, "b@example.com");
    await contact(s, "out@example.com", { news: false });
    const campaign = await s.createCampaign({ topicId: news });
    expect(campaign.topicId).toBe(news);
    expect((await s.request("POST", `/campaigns/${campaign.id}/send`)).status).toBe(200);

    const held = await s.writeAudiencePages();
    const listed = async () => (await s.request<EmailList>("GET", `/emails?campaignId=${campaign.id}`)).body.data.items;
    expect((await listed()).map((e) => e.to).sort()).toEqual(["a@example.com", "b@example.com"]);

    // b opts out of the topic after its email was written: the claim refuses it, naming the gate.
    const [b] = (await s.request<ContactList>("GET", "/contacts?search=b@example.com")).body.contacts;
    expect((await s.request("PATCH", `/contacts/${b.id}/topics`, { topics: [{ key: "news", subscription: "OPT_OUT" }] })).status).toBe(200);
    await s.runBatch(BULK_QUEUE, held);
    await s.pump();
    const after = await listed();
    expect(after.find((e) => e.to === "a@example.com")).toMatchObject({ status: "SENT" });
    expect(after.find((e) => e.to === "b@example.com")).toMatchObject({ status: "FAILED", gate: "TOPIC", error: expect.stringContaining("topic") });
    expect(s.ses.calls.map((c) => c.to[0])).toEqual(["a@example.com"]);
    expect(s.ses.calls[0].mime.headers["list-id"]).toBe(`<news.${s.project.id}.edge-mail.test>`);
  });

  it("a topicId of another project, or none, is a 422 naming topicId", async () => {
    const s = await campaignSetup();
    const other = await campaignSetup();
    const foreign = await topic(other, "news", "OPT_IN");
    const res = await s.request("POST", "/campaigns", { name: "x", subject: "x", body: "<p>x</p>", from: s.from, audienceType: "ALL", topicId: foreign });
    expect(expectError(res, 422).errors?.map((e) => e.field)).toEqual(["topicId"]);
  });
});

describe("unsubscribing from topic mail", () => {
  it("the RFC 8058 one-click and the link opt out of that topic only: other topics and the subscription stay", async () => {
    const s = await campaignSetup();
    await topic(s, "news", "OPT_IN");
    await topic(s, "tips", "OPT_IN");
    const ada = await contact(s, "ada@example.com", { tips: true });
    expect((await s.send({ to: "ada@example.com", from: s.from, subject: "News", body: "<p>n</p>", topic: "news" })).status).toBe(200);
    expect(
      (await s.send({ to: "ada@example.com", from: s.from, subject: "Tips", body: '<p><a href="{{unsubscribeUrl}}">stop tips</a></p>', topic: "tips" })).status,
    ).toBe(200);
    await s.pump();
    const [newsMail, tipsMail] = s.ses.calls;
    const oneClick = /<(http[^>]+\/unsubscribe\/[^>]+)>/.exec(newsMail.mime.headers["list-unsubscribe"])![1];
    const res = await call("POST", new URL(oneClick).pathname, {
      rawBody: "List-Unsubscribe=One-Click",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
    });
    expect(res.status).toBe(200);
    expect(await topicsOf(s, ada.id)).toEqual({ news: "OPT_OUT", tips: "OPT_IN" });
    expect((await s.request<{ subscribed: boolean }>("GET", `/contacts/${ada.id}`)).body.subscribed).toBe(true);
    // Again: nothing changes, nothing more is recorded.
    await call("POST", new URL(oneClick).pathname, { rawBody: "List-Unsubscribe=One-Click", headers: { "Content-Type": "application/x-www-form-urlencoded" } });
    const events = await s.request<{ data: { items: { name: string; data: { topic: string; source: string } }[] } }>("GET", "/events?limit=100");
    expect(events.body.data.items.filter((e) => e.name === "topic.opted_out").map((e) => [e.data.topic, e.data.source])).toEqual([["news", "one_click"]]);

    // The link in the body ({{unsubscribeUrl}}): its page's button opts out of tips only.
    const html = tipsMail.mime.parts.find((p) => p.contentType.startsWith("text/html"))!.text;
    const link = /href="(http[^"]+\/unsubscribe\/[^"]+)"/.exec(html)![1];
    const page = await call("POST", new URL(link).pathname, {
      rawBody: "List-Unsubscribe=One-Click&source=page",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
    });
    expect(page.status).toBe(200);
    expect(await topicsOf(s, ada.id)).toEqual({ news: "OPT_OUT", tips: "OPT_OUT" });
    expect((await s.request<{ subscribed: boolean }>("GET", `/contacts/${ada.id}`)).body.subscribed).toBe(true);
  });
});

describe("the topic gate on a campaign's test send", () => {
  it("a contact not OPT_IN for the campaign's topic is refused naming TOPIC; an address that is no contact gets the test with the topic's List-Id", async () => {
    const s = await campaignSetup();
    const news = await topic(s, "news", "OPT_IN");
    await contact(s, "out@example.com", { news: false });
    const campaign = await s.createCampaign({ topicId: news });
    const refused = expectError(await s.request("POST", `/campaigns/${campaign.id}/test`, { email: "out@example.com" }), 400, "INVALID_STATE");
    expect(refused.errors).toEqual([{ field: "email", code: "TOPIC", message: expect.stringMatching(/^TOPIC: /) }]);
    expect(s.queue.messages).toHaveLength(0);

    const ok = await s.request<{ data: { email: string } }>("POST", `/campaigns/${campaign.id}/test`, { email: "boss@example.com" });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    await s.pump();
    expect(s.ses.calls.map((c) => c.to[0])).toEqual(["boss@example.com"]);
    expect(s.ses.calls[0].mime.headers["list-id"]).toBe(`<news.${s.project.id}.edge-mail.test>`);
  });
});

describe("the topic gate on a workflow's SEND_EMAIL", () => {
  it("a step naming a topic sends broadcast mail only to contacts OPT_IN for it; its unsubscribe opts out of that topic only", async () => {
    const a = await automationProject();
    const api = a.project.api;
    for (const [key, def] of [
      ["news", "OPT_IN"],
      ["tips", "OPT_IN"],
    ] as const) {
      expect((await api.post("/topics", { key, name: key, defaultSubscription: def, visibility: "PUBLIC" })).status).toBe(201);
    }
    const digest = await a.template("Digest");
    const workflow = await a.createWorkflow({
      name: "digest",
      eventName: "read",
      steps: [{ id: "digest", type: "SEND_EMAIL", config: { templateId: digest, topic: "news" } }],
    });
    await api.post("/contacts", { email: "in@example.org", subscribed: true });
    await api.post("/contacts", { email: "out@example.org", subscribed: true, topics: { news: false } });

    const outcome = async (email: string) => {
      const { contact } = await a.track(email, "read");
      const execution = await a.executionWhere(workflow.id, (e) => e.contactId === contact && e.status === "COMPLETED");
      return execution.history[0];
    };
    expect((await outcome("out@example.org")).outcome).toMatch(/^skipped: TOPIC: /);
    const sent = await outcome("in@example.org");
    const emailId = /^email (\S+) queued$/.exec(sent.outcome!)![1];
    expect((await api.get<Email>(`/emails/${emailId}`)).body).toMatchObject({ stream: "BROADCAST" });

    // The email is the topic's: its one-click unsubscribe opts the contact out of news, not tips, not marketing.
    const link = await unsubscribeUrl("http://edge-mail.test", env.LINK_SIGNING_SECRET!, emailId);
    const res = await call("POST", new URL(link).pathname, {
      rawBody: "List-Unsubscribe=One-Click",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
    });
    expect(res.status).toBe(200);
    const [inContact] = (await api.get<ContactList>("/contacts?search=in@example.org")).body.contacts;
    const topics = (await api.get<{ data: { items: { key: string; subscription: string }[] } }>(`/contacts/${inContact.id}/topics`)).body.data.items;
    expect(Object.fromEntries(topics.map((t) => [t.key, t.subscription]))).toEqual({ news: "OPT_OUT", tips: "OPT_IN" });
    expect(inContact.subscribed).toBe(true);
  }, 120_000);

  it("a step naming a topic the project does not have is a 422 naming the step's topic", async () => {
    const a = await automationProject();
    const digest = await a.template("Digest");
    const res = await a.project.api.post("/workflows", {
      name: "x",
      eventName: "read",
      steps: [{ id: "digest", type: "SEND_EMAIL", config: { templateId: digest, topic: "nope" } }],
    });
    expect(expectError(res, 422).errors).toEqual([expect.objectContaining({ field: "steps.0.config.topic", code: "unknown_topic" })]);
  });
});
