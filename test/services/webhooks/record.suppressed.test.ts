import { env } from "cloudflare:workers";
import { Webhook } from "standardwebhooks";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Env } from "../../../src/env";
import { BULK_QUEUE } from "../../../src/messages";
import { campaignSetup } from "../../support/campaigns";
import { runConsumer } from "../../support/queues";
import { eventually } from "../../support/wait";
import { recordedEvents } from "../../support/webhooks";
import type { ContactList, EmailList, WebhookWithSecret } from "../../support/api";
import { d1Outage } from "../../fakes/d1-outage";

afterEach(() => vi.restoreAllMocks());

const URL_ = "https://hooks.example.net/suppressed";

interface EmailEvent {
  type: string;
  data: { emailId: string; to: string; reason?: string; campaignId: string | null };
}

/** D1 whose webhook-event inserts fail when run: a batch holding one fails as a whole. */
const failingEventInserts = (db: D1Database) =>
  d1Outage({ rewrite: (sql) => sql.replace("INSERT INTO webhook_events ", "INSERT INTO webhook_events_unavailable ") }, db);

describe("email.suppressed is written with the claim that settles the email", () => {
  it("a claim batch that fails at the event leaves the email QUEUED; the redelivery settles it with exactly one event", async () => {
    const s = await campaignSetup();
    const calls: { body: string; headers: Record<string, string> }[] = [];
    s.dns.set("hooks.example.net", "A", ["93.184.216.34"]);
    s.serve(async (request) => {
      if (request.url !== URL_) return undefined;
      calls.push({ body: await request.text(), headers: Object.fromEntries(request.headers) });
      return new Response("ok");
    });
    const hook = await s.request<WebhookWithSecret>("POST", "/webhooks", { url: URL_, events: ["email.suppressed"] });
    expect(hook.status, JSON.stringify(hook.body)).toBe(201);
    const secret = hook.body.secret;
    const events = () => calls.map((c) => new Webhook(secret).verify(c.body, c.headers) as EmailEvent);

    await s.addContacts([{ email: "stays@example.com" }, { email: "leaves@example.com" }]);
    const campaign = await s.createCampaign();
    expect((await s.request("POST", `/campaigns/${campaign.id}/send`)).status).toBe(200);
    // Audience pages make the emails; the emails' own messages are held back.
    const held = await s.writeAudiencePages();
    expect(held).toHaveLength(2);
    const listed = () => s.request<EmailList>("GET", `/emails?campaignId=${campaign.id}`).then((r) => r.body.data.items);
    const leaving = (await listed()).find((e) => e.to === "leaves@example.com")!;
    const contacts = (await s.request<ContactList>("GET", "/contacts?limit=10")).body;
    const leaver = contacts.contacts.find((c) => c.email === "leaves@example.com")!;
    // The contact unsubscribes after its email was written: the claim settles that email instead of sending it.
    expect((await s.request("PATCH", `/contacts/${leaver.id}`, { subscribed: false })).status).toBe(200);

    // The invocation's claim batch fails at the event's statement: nothing of it is written.
    const broken = { ...s.env, DB: failingEventInserts(env.DB) } as Env;
    const run = await runConsumer(
      BULK_QUEUE,
      broken,
      held.map((m, i) => ({ id: `broken${i}`, body: m.body })),
    );
    expect(run.retryMessages).toHaveLength(2);
    expect((await listed()).map((e) => e.status)).toEqual(["QUEUED", "QUEUED"]);

    // The redelivery (twice: the second claims nothing) settles it, with its event.
    await s.runBatch(BULK_QUEUE, held, 2);
    await s.runBatch(BULK_QUEUE, held, 3);
    const after = await listed();
    expect(after.find((e) => e.id === leaving.id)).toMatchObject({ status: "FAILED", error: expect.stringContaining("unsubscribed") });
    expect(after.find((e) => e.to === "stays@example.com")!.status).toBe("SENT");
    await eventually(async () => expect(events()).toHaveLength(1));
    expect(await recordedEvents(s.project.id, ["email.suppressed"])).toHaveLength(1);
    expect(events()[0]).toMatchObject({
      type: "email.suppressed",
      // The unsubscribe is an UNSUBSCRIBE entry of broadcast mail: gate 1 refused it (src/services/consent/gates.ts).
      data: { emailId: leaving.id, to: "leaves@example.com", campaignId: campaign.id, gate: "SUPPRESSED", reason: expect.stringContaining("unsubscribed") },
    });
  }, 60_000);
});
