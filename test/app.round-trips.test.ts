import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { createApp } from "../src/app";
import { getDb } from "../src/db/client";
import { contacts as dbContacts, domains, emails, suppressions, type Domain } from "../src/db/schema";
import { VERIFIED_DOMAIN_CACHE_TTL_MS, verifiedDomainCache } from "../src/services/domains";
import type { Env } from "../src/env";
import { countingD1, type D1Stats, emptyD1Stats } from "../src/lib/d1-counter";
import { BASE, type ErrorBody, newProject, type JsonResponse } from "./support/http";
import type { SendResponse, Template } from "./support/api";
import { heldQueue, receiver, webhookProject } from "./support/webhooks";
import { insertVerifiedDomain } from "./support/sending";

/**
 * What a request costs in D1, pinned: every request goes through the Worker's
 * app with its D1 binding wrapped by the counter (src/lib/d1-counter.ts), and
 * the count includes the work after the response (waitUntil). A change that
 * adds a round trip to one of these paths fails here.
 */
function countingApp(settings: Partial<Env> = {}, now?: () => number) {
  const stats: D1Stats = emptyD1Stats();
  const app = createApp({ now });
  const countedEnv = { ...env, ...settings, DB: countingD1(env.DB, stats) } as Env;
  async function request<T = unknown>(
    method: string,
    path: string,
    key: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<JsonResponse<T>> {
    const ctx = createExecutionContext();
    const res = await app.fetch(
      new Request(BASE + path, {
        method,
        headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json", ...headers },
        body: body === undefined ? undefined : JSON.stringify(body),
      }),
      countedEnv,
      ctx,
    );
    await waitOnExecutionContext(ctx);
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : null };
  }
  /** The D1 cost of one call: round trips, batches and statements. */
  async function cost(call: () => Promise<JsonResponse>, expectStatus: number) {
    Object.assign(stats, { statements: 0, batches: 0, roundTrips: 0, captureStatements: 0 });
    const res = await call();
    expect(res.status, JSON.stringify(res.body)).toBe(expectStatus);
    return { roundTrips: stats.roundTrips, batches: stats.batches, statements: stats.statements };
  }
  return { request, cost };
}

describe("D1 round trips per request (warm isolate: the key is cached)", () => {
  it("POST /v1/track: one round trip, new contact or existing, public or secret key", async () => {
    const p = await newProject();
    const { request, cost } = countingApp();
    // The first request of a key looks it up: one round trip more.
    expect(await cost(() => request("POST", "/v1/track", p.publicKey, { email: "a@example.com", event: "visit" }), 200)).toMatchObject({ roundTrips: 2 });
    expect(await cost(() => request("POST", "/v1/track", p.publicKey, { email: "b@example.com", event: "visit" }), 200)).toMatchObject({
      roundTrips: 1,
      batches: 1,
    });
    expect(await cost(() => request("POST", "/v1/track", p.publicKey, { email: "b@example.com", event: "again" }), 200)).toMatchObject({
      roundTrips: 1,
      batches: 1,
    });
    await request("GET", "/contacts?limit=1", p.secretKey);
    expect(
      await cost(
        () => request("POST", "/v1/track", p.secretKey, { email: "b@example.com", event: "paid", data: { plan: "pro", tmp: { value: 1, persistent: false } } }),
        200,
      ),
    ).toMatchObject({ roundTrips: 1, batches: 1 });
  });

  it("concurrent requests with a key the isolate has not cached each look it up, then the key is cached", async () => {
    const p = await newProject();
    const { request, cost } = countingApp();
    const burst = await cost(async () => {
      const responses = await Promise.all(
        Array.from({ length: 10 }, (_, i) => request("POST", "/v1/track", p.publicKey, { email: `burst${i}@example.com`, event: "visit" })),
      );
      for (const res of responses) expect(res.status, JSON.stringify(res.body)).toBe(200);
      return responses[0];
    }, 200);
    // No request waits on another's lookup: at most one lookup each, then each request's own batch.
    expect(burst.batches).toBe(10);
    expect(burst.roundTrips).toBeLessThanOrEqual(20);
    expect(await cost(() => request("POST", "/v1/track", p.publicKey, { email: "after@example.com", event: "visit" }), 200)).toMatchObject({
      roundTrips: 1,
      batches: 1,
    });
  });

  it("POST /v1/track refused by a quota: one round trip (the guard in the batch names the quota)", async () => {
    const p = await newProject();
    const { request, cost } = countingApp({ QUOTA_EVENTS_PER_DAY: "1" } as Partial<Env>);
    expect((await request("POST", "/v1/track", p.publicKey, { email: "a@example.com", event: "visit" })).status).toBe(200);
    expect(await cost(() => request("POST", "/v1/track", p.publicKey, { email: "a@example.com", event: "visit" }), 429)).toMatchObject({ roundTrips: 1 });
  });

  it("POST /contacts: one round trip, created or updated", async () => {
    const p = await newProject();
    const { request, cost } = countingApp();
    expect(await cost(() => request("POST", "/contacts", p.secretKey, { email: "a@example.com" }), 201)).toMatchObject({ roundTrips: 2 });
    expect(await cost(() => request("POST", "/contacts", p.secretKey, { email: "b@example.com", data: { n: 1 } }), 201)).toMatchObject({
      roundTrips: 1,
      batches: 1,
    });
    expect(await cost(() => request("POST", "/contacts", p.secretKey, { email: "b@example.com", data: { n: 2 }, subscribed: false }), 200)).toMatchObject({
      roundTrips: 1,
      batches: 1,
    });
  });

  it("a write that starts a workflow hands the trigger over after the response (one round trip more, in waitUntil)", async () => {
    const p = await newProject();
    const { request, cost } = countingApp();
    const workflow = await request("POST", "/workflows", p.secretKey, { name: "w", eventName: "signup", enabled: true, steps: [] });
    expect(workflow.status, JSON.stringify(workflow.body)).toBe(201);
    expect(await cost(() => request("POST", "/v1/track", p.publicKey, { email: "a@example.com", event: "visit" }), 200)).toMatchObject({ roundTrips: 2 });
    expect(await cost(() => request("POST", "/v1/track", p.publicKey, { email: "a@example.com", event: "visit" }), 200)).toMatchObject({ roundTrips: 1 });
    expect(await cost(() => request("POST", "/v1/track", p.publicKey, { email: "a@example.com", event: "signup" }), 200)).toMatchObject({ roundTrips: 2 });
  });
});

describe("what an event webhook costs the write that records it", () => {
  it("POST /v1/track and POST /contacts: the same round trip and statements with two endpoints subscribed as with none, and one queue message", async () => {
    receiver(); // hooks.example.net resolves to a public address
    const none = await webhookProject("no endpoints");
    const two = await webhookProject("two endpoints");
    for (const path of ["/a", "/b"]) await two.createWebhook({ url: `https://hooks.example.net${path}`, events: ["contact.created", "contact.updated"] });
    const held = heldQueue();
    const { request, cost } = countingApp({ WEBHOOK_QUEUE: held.env.WEBHOOK_QUEUE });
    const costs = async (p: typeof none) => {
      await request("GET", "/contacts?limit=1", p.secretKey); // the secret key cached
      await request("POST", "/v1/track", p.publicKey, { email: "warm@example.com", event: "visit" }); // and the public one
      held.take();
      const out: Record<string, { roundTrips: number; batches: number; statements: number; messages: number }> = {};
      const measure = async (name: string, call: () => Promise<JsonResponse>, status: number) => {
        out[name] = { ...(await cost(call, status)), messages: held.take().length };
      };
      await measure("track, new contact", () => request("POST", "/v1/track", p.publicKey, { email: "t@example.com", event: "visit" }), 200);
      await measure("contacts, new", () => request("POST", "/contacts", p.secretKey, { email: "c@example.com", data: { plan: "pro" } }), 201);
      await measure("contacts, existing", () => request("POST", "/contacts", p.secretKey, { email: "c@example.com", data: { plan: "team" } }), 200);
      return out;
    };
    const withNone = await costs(none);
    const withTwo = await costs(two);
    // The event is one statement of the write's own batch, there with or without endpoints (it records
    // nothing without a subscribed one): /v1/track with a public key is quota guard (stored bytes and the
    // key's daily use included, up front), contact upsert and the read of its id (a public key leaves an
    // existing contact unwritten), the contact.created record, event (its triggers
    // count the key's use; it returns whether the workflow outbox holds triggers); POST /contacts quota
    // guard (stored bytes up front), upsert, one record for contact.created or .updated, outbox probe.
    const cost1 = (statements: number, messages: number) => ({ roundTrips: 1, batches: 1, statements, messages });
    expect(withNone).toEqual({ "track, new contact": cost1(5, 0), "contacts, new": cost1(4, 0), "contacts, existing": cost1(4, 0) });
    expect(withTwo).toEqual({ "track, new contact": cost1(5, 1), "contacts, new": cost1(4, 1), "contacts, existing": cost1(4, 1) });
  });
});

/** A VERIFIED sending domain written straight into D1 (these tests count D1, not DNS). */
const verifiedDomainOf = (projectId: string) => insertVerifiedDomain(projectId, "rt");

describe("D1 round trips of POST /v1/send (warm isolate)", () => {
  it("one round trip when nothing needs reading: the write batch alone, for 1 or 50 recipients", async () => {
    const p = await newProject();
    const domain = await verifiedDomainOf(p.id);
    const from = `hi@${domain}`;
    const { request, cost } = countingApp();
    const send = (body: Record<string, unknown>) => () => request("POST", "/v1/send", p.secretKey, body);
    // First send of the key: the key lookup, then the reads (the domain is not cached yet), then the writes.
    expect(await cost(send({ to: "a@example.com", from, subject: "Hi", body: "<p>Hi {{n}}</p>", data: { n: 1 } }), 200)).toMatchObject({
      roundTrips: 3,
      batches: 2,
    });
    // Every variable comes from the request's data or is a built-in: no contact data to read. Nine statements:
    // suppression guard, quota guard (stored bytes included, up front), contact upsert and the read of its ids
    // (an existing contact it leaves alone returns nothing), contact.created record, emails with the day's
    // count and their stored bytes, workflow outbox probe.
    expect(await cost(send({ to: "b@example.com", from, subject: "Hi {{n}}", body: "<p>Hi {{ data.n }}</p>", data: { n: 2 } }), 200)).toEqual({
      roundTrips: 1,
      batches: 1,
      statements: 9,
    });
    const fifty = Array.from({ length: 50 }, (_, i) => `r${i}@example.com`);
    expect(await cost(send({ to: fifty, from, subject: "Hi", body: '<p>Hi {{email}}</p><a href="{{unsubscribeUrl}}">x</a>' }), 200)).toMatchObject({
      roundTrips: 1,
      batches: 1,
    });
  });

  it("two round trips, one batch of reads and one of writes, when the send needs something read: contact data, a template or an Idempotency-Key", async () => {
    const p = await newProject();
    const domain = await verifiedDomainOf(p.id);
    const from = `hi@${domain}`;
    const { request, cost } = countingApp();
    const send = (body: Record<string, unknown>, headers?: Record<string, string>) => () => request("POST", "/v1/send", p.secretKey, body, headers);
    expect((await send({ to: "a@example.com", from, subject: "Hi", body: "<p>Hi</p>" })()).status).toBe(200);
    // {{plan}} is not in the request's data: it may come from the contact's.
    for (const body of ["<p>Hi {{plan}}</p>", "<p>Hi {{data.plan}}</p>", "<p>{{ data | json }}</p>", "<p>{{ n | default: plan }}</p>"]) {
      expect(await cost(send({ to: "b@example.com", from, subject: "Hi", body, data: { n: 1 } }), 200), body).toMatchObject({ roundTrips: 2, batches: 2 });
    }
    expect(await cost(send({ to: "c@example.com", from, subject: "Hi", body: "<p>Hi</p>" }, { "Idempotency-Key": "k1" }), 200)).toMatchObject({
      roundTrips: 2,
    });
    const template = await request<Template>("POST", "/templates", p.secretKey, { name: "t", subject: "S", body: "<p>B</p>", from, type: "TRANSACTIONAL" });
    expect(template.status, JSON.stringify(template.body)).toBe(201);
    // The template's from domain was seen VERIFIED moments ago (the domain cache): still two.
    expect(await cost(send({ to: "d@example.com", template: template.body.id }), 200)).toMatchObject({ roundTrips: 2, batches: 2 });
  });

  it("a suppressed recipient aborts the write-only batch (nothing written), then the reading path sends to the others: three round trips", async () => {
    const p = await newProject();
    const domain = await verifiedDomainOf(p.id);
    const from = `hi@${domain}`;
    const { request, cost } = countingApp();
    expect((await request("POST", "/v1/send", p.secretKey, { to: "a@example.com", from, subject: "Hi", body: "<p>Hi</p>" })).status).toBe(200);
    await getDb(env.DB).insert(suppressions).values({ projectId: p.id, email: "gone@example.com", reason: "BOUNCE", createdAt: new Date() });
    let res: JsonResponse<SendResponse> | undefined;
    const body = { to: ["b@example.com", "gone@example.com"], from, subject: "Hi", body: "<p>Hi</p>" };
    expect(await cost(async () => (res = await request<SendResponse>("POST", "/v1/send", p.secretKey, body)), 200)).toMatchObject({
      roundTrips: 3,
      batches: 3,
    });
    expect(res!.body.data.suppressed).toEqual([{ email: "gone@example.com", reason: "BOUNCE", stream: "ALL", gate: "SUPPRESSED" }]);
    const stored = await getDb(env.DB).select({ to: emails.toAddress }).from(emails).where(eq(emails.projectId, p.id));
    expect(stored.map((e) => e.to).sort()).toEqual(["a@example.com", "b@example.com"]);
  });

  it("a 429 from the rate limiter writes nothing, though the reads ran while the limiter answered", async () => {
    const p = await newProject();
    const domain = await verifiedDomainOf(p.id);
    const minute = 29_500_000 * 60_000;
    const { request } = countingApp({ RATE_LIMIT_PER_MINUTE: "2" } as Partial<Env>, () => minute + 1_000);
    const body = { to: "a@example.com", from: `hi@${domain}`, subject: "Hi", body: "<p>Hi</p>" };
    expect((await request("POST", "/v1/send", p.secretKey, body)).status).toBe(200);
    expect((await request("POST", "/v1/send", p.secretKey, { ...body, to: "b@example.com" })).status).toBe(200);
    const refused = await request<ErrorBody>("POST", "/v1/send", p.secretKey, { ...body, to: "c@example.com" });
    expect(refused.status).toBe(429);
    expect(refused.body.error.code).toBe("RATE_LIMITED");
    expect(refused.headers.get("Retry-After")).toBe("59");
    // A request that would fail validation while refused is refused too (429 first, as before).
    expect((await request("POST", "/v1/send", p.secretKey, { ...body, from: "hi@unverified.test" })).status).toBe(429);
    const stored = await getDb(env.DB).select({ to: emails.toAddress }).from(emails).where(eq(emails.projectId, p.id));
    expect(stored.map((e) => e.to).sort()).toEqual(["a@example.com", "b@example.com"]);
    expect((await request("GET", "/contacts", p.secretKey)).status).toBe(429);
    const contacts = await getDb(env.DB).select({ email: dbContacts.email }).from(dbContacts).where(eq(dbContacts.projectId, p.id));
    expect(contacts.map((c) => c.email).sort()).toEqual(["a@example.com", "b@example.com"]);
  });
});

describe("the verified-domain cache", () => {
  it("trusts a VERIFIED answer for at most VERIFIED_DOMAIN_CACHE_TTL_MS, and never caches another status", () => {
    const clock = { now: 1_000_000 };
    const cache = verifiedDomainCache(() => clock.now);
    const domain = { name: "a.test", status: "VERIFIED" } as Domain;
    cache.remember("p1", domain);
    cache.remember("p1", { name: "b.test", status: "PENDING" } as Domain);
    expect(cache.get("p1", "x@a.test")).toBe("a.test");
    expect(cache.get("p1", "x@A.TEST")).toBe("a.test");
    expect(cache.get("p2", "x@a.test")).toBeUndefined();
    expect(cache.get("p1", "x@b.test")).toBeUndefined();
    clock.now += VERIFIED_DOMAIN_CACHE_TTL_MS + 1;
    expect(cache.get("p1", "x@a.test")).toBeUndefined();
  });

  it("a domain deleted through the API stops /v1/send at once in this isolate", async () => {
    const p = await newProject();
    const name = await verifiedDomainOf(p.id);
    const { request } = countingApp();
    const body = { to: "a@example.com", from: `hi@${name}`, subject: "Hi", body: "<p>Hi</p>" };
    expect((await request("POST", "/v1/send", p.secretKey, body)).status).toBe(200);
    const [row] = await getDb(env.DB).select({ id: domains.id }).from(domains).where(eq(domains.name, name));
    const deleted = await request("DELETE", `/domains/${row.id}`, p.secretKey);
    expect(deleted.status, JSON.stringify(deleted.body)).toBe(204);
    const refused = await request<ErrorBody>("POST", "/v1/send", p.secretKey, body);
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe("DOMAIN_NOT_VERIFIED");
  });
});

describe("D1 round trips of a campaign's audience page", () => {
  it("a page of 500 aimed at a topic costs no more round trips or statements than one without (the topic gate is one fragment of the page's query)", async () => {
    const stats = emptyD1Stats();
    const { campaignSetup, BULK_QUEUE } = await import("./support/campaigns");
    const s = await campaignSetup({ DB: countingD1(env.DB, stats) });
    const topic = await s.request<{ id: string }>("POST", "/topics", { key: "news", name: "News", defaultSubscription: "OPT_IN" });
    const added = await s.addContacts(Array.from({ length: 520 }, (_, i) => ({ email: `r${String(i).padStart(4, "0")}@example.com` })));
    // Some contacts opted out of the topic: the page skips them and still fills 500.
    for (const c of added.slice(0, 5)) await s.request("PATCH", `/contacts/${c.id}/topics`, { topics: [{ key: "news", subscription: "OPT_OUT" }] });

    async function firstPage(topicId?: string) {
      const campaign = await s.createCampaign(topicId ? { topicId } : {});
      expect((await s.request("POST", `/campaigns/${campaign.id}/send`)).status).toBe(200);
      const page = s.bulk.take().filter((m) => (m.body as { kind?: string; campaignId?: string }).kind === "campaign-page");
      expect(page).toHaveLength(1);
      Object.assign(stats, { statements: 0, batches: 0, roundTrips: 0 });
      await s.runBatch(BULK_QUEUE, page);
      const cost = { roundTrips: stats.roundTrips, statements: stats.statements };
      s.bulk.take();
      const written = await env.DB.prepare("SELECT count(*) AS n FROM emails WHERE campaign_id = ?").bind(campaign.id).first<{ n: number }>();
      return { cost, written: written!.n };
    }
    const without = await firstPage();
    const withTopic = await firstPage(topic.body.id);
    expect(without.written).toBe(500);
    expect(withTopic.written).toBe(500);
    expect(withTopic.cost).toEqual(without.cost);
  });
});
