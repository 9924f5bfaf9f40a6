import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { decodeWords } from "../fakes/ses";
import type { CampaignResponse, Email, EventList } from "../support/api";
import { move, rowsOn } from "./support";
import { liveALife, shardOf, twoShards } from "./world";

/** What a user reads back of a project: its contacts, emails and events (ids and states), through the API. */
async function snapshot(p: Awaited<ReturnType<typeof twoShards>>["shards"][number]) {
  const contacts = await p.request<{ contacts: { id: string; email: string; subscribed: boolean }[] }>("GET", "/contacts?limit=100");
  const emails = await p.request<{ data: { items: Email[] } }>("GET", "/emails?limit=100");
  const events = await p.request<EventList>("GET", "/events?limit=100");
  for (const res of [contacts, emails, events]) expect(res.status, JSON.stringify(res.body)).toBe(200);
  return {
    contacts: contacts.body.contacts.map((c) => [c.id, c.email, c.subscribed]).sort(),
    emails: emails.body.data.items.map((e) => [e.id, e.status, e.subject]).sort(),
    events: events.body.data.items.map((e) => [e.id, e.name]).sort(),
  };
}

/** Tables a project that lived a life has rows in. */
const LIVED = [
  "contacts",
  "emails",
  "events",
  "campaigns",
  "templates",
  "workflows",
  "workflow_executions",
  "webhook_endpoints",
  "webhook_deliveries",
  "contact_imports",
];

describe("two projects on two data shards", () => {
  it("each works end to end (send, track, campaign, workflow, webhook, import, unsubscribe link, SES feedback) and neither shard holds the other's rows", async () => {
    const w = await twoShards();
    const [zero, one] = w.shards;
    expect([await shardOf(zero.id), await shardOf(one.id)]).toEqual([0, 1]);
    await liveALife(w, zero, "zero");
    await liveALife(w, one, "one");

    const own = [await rowsOn(0, zero.id), await rowsOn(1, one.id)];
    for (const rows of own) expect(Object.keys(rows)).toEqual(expect.arrayContaining(LIVED));
    expect(await rowsOn(1, zero.id)).toEqual({});
    // The control database keeps the registry row of every project (and its keys and domains, not moved tables).
    expect(await rowsOn(0, one.id)).toEqual({ projects: 1 });
    // Each SES message was tagged with its project's shard: feedback found its email without a lookup.
    expect(own[0].emails).toBe(own[1].emails);
  }, 180_000);

  it("a cron tick reaches both shards: each project's scheduled campaign starts", async () => {
    const w = await twoShards();
    const at = new Date(Date.now() + 120_000);
    const campaigns: string[] = [];
    for (const p of w.shards) {
      await p.request("POST", "/contacts", { email: `cron-${p.id.slice(-6)}@example.org` });
      const created = await p.request<CampaignResponse>("POST", "/campaigns", {
        name: "Later",
        subject: "Later",
        body: "<p>Later</p>",
        from: p.from,
        audienceType: "ALL",
      });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      const scheduled = await p.request("POST", `/campaigns/${created.body.data.id}/send`, { scheduledFor: at.toISOString() });
      expect(scheduled.status, JSON.stringify(scheduled.body)).toBe(200);
      campaigns.push(created.body.data.id);
    }
    await w.s.tick(new Date(at.getTime() + 1_000));
    await w.pump();
    for (const [i, p] of w.shards.entries()) {
      const campaign = await p.request<CampaignResponse>("GET", `/campaigns/${campaigns[i]}`);
      expect(campaign.body.data.status, `shard ${i}`).toBe("SENT");
    }
    expect(
      w.s.ses.calls.filter((c) => decodeWords(c.mime.headers.subject) === "Later"),
      JSON.stringify(w.s.ses.calls.map((c) => [c.to, c.mime.headers.subject])),
    ).toHaveLength(2);
  }, 120_000);

  it("a project moved between shards mid-life keeps every contact, email and event and answers the same ids", async () => {
    const w = await twoShards();
    const one = w.shards[1];
    const life = await liveALife(w, one, "mover");
    const before = await snapshot(one);
    const rows = await rowsOn(1, one.id);

    expect(await move(one.id, 0)).toMatchObject({ status: "complete", output: { status: "moved", from: 1, to: 0 } });
    expect(await shardOf(one.id)).toBe(0);
    expect(await rowsOn(0, one.id)).toEqual(rows);
    expect(await rowsOn(1, one.id)).toEqual({});
    expect(await snapshot(one)).toEqual(before);
    expect((await one.request<Email>("GET", `/emails/${life.transactional}`)).body).toMatchObject({ id: life.transactional, status: "BOUNCED" });

    // It goes on living on its new shard: a send is sent, a link in mail sent before the move still unsubscribes.
    const sent = await one.request<{ data: { emails: { email: string }[] } }>("POST", "/v1/send", {
      to: life.ann,
      from: one.from,
      subject: "After",
      body: "<p>After</p>",
    });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    await w.pump();
    expect((await one.request<Email>("GET", `/emails/${sent.body.data.emails[0].email}`)).body.status).toBe("SENT");
    const news = w.s.ses.calls.find((c) => decodeWords(c.mime.headers.subject) === "News mover" && c.to[0] === life.ann)!;
    const link = /<(https?:\/\/[^>]*\/unsubscribe\/[^>]+)>/.exec(news.mime.headers["list-unsubscribe"])![1];
    const res = await fetchWorker(w, link);
    expect(res).toBe(200);
    const contacts = await one.request<{ contacts: { email: string; subscribed: boolean }[] }>("GET", "/contacts");
    expect(contacts.body.contacts.find((c) => c.email === life.ann)?.subscribed).toBe(false);
    expect(await rowsOn(1, one.id)).toEqual({});
    void env;
  }, 180_000);
});

/** A one-click unsubscribe POST to a link, as a mail client sends it; answers the status. */
async function fetchWorker(w: Awaited<ReturnType<typeof twoShards>>, link: string): Promise<number> {
  const { call } = await import("../support/http");
  return (await call("POST", link, { env: w.s.env, rawBody: "List-Unsubscribe=One-Click", headers: { "Content-Type": "application/x-www-form-urlencoded" } }))
    .status;
}
