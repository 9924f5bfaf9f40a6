import { describe, expect, it } from "vitest";
import { BULK_QUEUE, campaignSetup } from "../support/campaigns";
import { call, expectError } from "../support/http";
import { notification, sesBounce, sign, snsHandler } from "../fakes/sns";
import { automationProject } from "../support/workflows";
import type { Contact, ContactList, Email, EmailList, List, Template, UpsertedContact } from "../support/api";

/**
 * The four consent gates (src/services/consent/gates.ts), in their order, on every mail path:
 * /v1/send, a campaign (its audience page and the claim), a workflow's SEND_EMAIL and a campaign's
 * test send. Each refusal names its gate in the answer and in the email record.
 */

type Setup = Awaited<ReturnType<typeof campaignSetup>>;

async function contact(s: Setup, email: string, subscribed = true) {
  const res = await s.request<UpsertedContact>("POST", "/contacts", { email, subscribed });
  expect(res.status, JSON.stringify(res.body)).toBeLessThan(300);
  return res.body;
}

/** A contact that was subscribed and then unsubscribed (an UNSUBSCRIBE entry of broadcast mail). */
async function unsubscribed(s: Setup, email: string) {
  const created = await contact(s, email, true);
  expect((await s.request("PATCH", `/contacts/${created.id}`, { subscribed: false })).status).toBe(200);
  return created;
}

const suppress = async (s: Setup, emails: string[], note?: string) => {
  const res = await s.request<{ added: number }>("POST", "/suppressions", { emails, note });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
};

/** Every message on both queues, delivered until nothing is left; the addresses the fake SES got. */
async function sentTo(s: Setup) {
  await s.pump();
  return s.ses.calls.flatMap((c) => c.to).sort();
}

/** SES reports a permanent bounce of the mail the fake SES took for `to`. */
async function hardBounce(s: Setup, to: string) {
  s.serve(snsHandler);
  const sent = s.ses.calls.find((c) => c.to.includes(to));
  expect(sent, `no mail to ${to} reached SES`).toBeDefined();
  const res = await call<{ data: { outcome: string } }>("POST", "/webhooks/ses", {
    rawBody: JSON.stringify(await sign(notification(sesBounce(sent!.messageId, to)))),
    headers: { "Content-Type": "text/plain; charset=UTF-8", "x-amz-sns-message-type": "Notification" },
  });
  expect(res.body.data.outcome).toBe("bounced");
}

describe("gate 1 and 2 on POST /v1/send: suppressed for the stream, then transactional mail passes", () => {
  it("a suppressed address is refused naming the gate; an unsubscribe never blocks a transactional send", async () => {
    const s = await campaignSetup();
    await suppress(s, ["manual@example.com"], "asked by phone");
    await unsubscribed(s, "left@example.com");

    // Transactional (the default): the manual entry stops it, the unsubscribe does not.
    const tx = await s.send({ to: ["manual@example.com", "left@example.com", "ok@example.com"], from: s.from, subject: "Reset", body: "<p>reset</p>" });
    expect(tx.status, JSON.stringify(tx.body)).toBe(200);
    expect(tx.body.data.emails.map((e) => e.contact.email).sort()).toEqual(["left@example.com", "ok@example.com"]);
    expect(tx.body.data.suppressed).toEqual([{ email: "manual@example.com", reason: "MANUAL", stream: "ALL", gate: "SUPPRESSED" }]);
    expect(await sentTo(s)).toEqual(["left@example.com", "ok@example.com"]);
    const records = (await s.get<EmailList>("/emails")).body.data.items;
    expect(records.map((e) => [e.to, e.stream, e.status, e.gate])).toEqual(
      expect.arrayContaining([
        ["left@example.com", "TRANSACTIONAL", "SENT", null],
        ["ok@example.com", "TRANSACTIONAL", "SENT", null],
      ]),
    );

    // Broadcast: the unsubscribe (an UNSUBSCRIBE entry, broadcast only) stops it at gate 1 as well.
    await contact(s, "fan@example.com");
    const news = await s.send({
      to: ["left@example.com", "manual@example.com", "fan@example.com"],
      from: s.from,
      subject: "News",
      body: "<p>n</p>",
      stream: "broadcast",
    });
    expect(news.status, JSON.stringify(news.body)).toBe(200);
    expect(news.body.data.emails.map((e) => e.contact.email)).toEqual(["fan@example.com"]);
    expect(news.body.data.suppressed).toEqual([
      { email: "left@example.com", reason: "UNSUBSCRIBE", stream: "BROADCAST", gate: "SUPPRESSED" },
      { email: "manual@example.com", reason: "MANUAL", stream: "ALL", gate: "SUPPRESSED" },
    ]);
    const [fan] = (await s.get<EmailList>("/emails?limit=1")).body.data.items;
    expect(fan).toMatchObject({ to: "fan@example.com", stream: "BROADCAST" });
  });

  it("gate 3: a broadcast to a contact who never subscribed is refused naming UNSUBSCRIBED; the same mail as transactional goes", async () => {
    const s = await campaignSetup();
    await contact(s, "never@example.com", false);
    const refused = expectError(
      await s.send({ to: "never@example.com", from: s.from, subject: "News", body: "<p>n</p>", stream: "broadcast" }),
      400,
      "INVALID_STATE",
    );
    expect(refused.errors).toEqual([{ field: "to", code: "UNSUBSCRIBED", message: expect.stringContaining("never@example.com") }]);
    // A MARKETING template is broadcast mail too; `stream: "transactional"` cannot override it.
    const template = await s.request<Template>("POST", "/templates", { name: "News", subject: "News", body: "<p>n</p>", type: "MARKETING", from: s.from });
    expectError(await s.send({ to: "never@example.com", template: template.body.id }), 400, "INVALID_STATE");
    const flipped = expectError(await s.send({ to: "never@example.com", template: template.body.id, stream: "transactional" }), 422, "VALIDATION_ERROR");
    expect(flipped.errors?.[0].field).toBe("stream");
    expect(s.queue.messages).toHaveLength(0);
    const tx = await s.send({ to: "never@example.com", from: s.from, subject: "Receipt", body: "<p>r</p>" });
    expect(tx.status).toBe(200);
    expect(await sentTo(s)).toEqual(["never@example.com"]);
  });

  it("a hard bounce blocks both streams (its BOUNCE entry stays when it also unsubscribes the contact); removing the entry lets mail through again", async () => {
    const s = await campaignSetup();
    await contact(s, "gone@example.com");
    expect((await s.send({ to: "gone@example.com", from: s.from, subject: "Hi", body: "<p>hi</p>" })).status).toBe(200);
    await sentTo(s);
    await hardBounce(s, "gone@example.com");

    const list = await s.get<List<{ email: string; reason: string; stream: string }>>("/suppressions");
    expect(list.body.data.items).toEqual([expect.objectContaining({ email: "gone@example.com", reason: "BOUNCE", stream: "ALL" })]);
    for (const stream of ["transactional", "broadcast"]) {
      const res = await s.send({ to: "gone@example.com", from: s.from, subject: "Again", body: "<p>again</p>", stream });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body.data.emails).toEqual([]);
      expect(res.body.data.suppressed).toEqual([{ email: "gone@example.com", reason: "BOUNCE", stream: "ALL", gate: "SUPPRESSED" }]);
    }
    // A bounce also unsubscribes the contact, but the BOUNCE entry (every stream) is kept, not narrowed to broadcast.
    const [gone] = (await s.get<ContactList>("/contacts?search=gone@example.com")).body.contacts;
    expect(gone.subscribed).toBe(false);
    expect((await s.get<List<{ reason: string }>>("/suppressions?email=gone@")).body.data.items.map((i) => i.reason)).toEqual(["BOUNCE"]);

    expect((await s.request("DELETE", "/suppressions/gone@example.com")).status).toBe(204);
    const again = await s.send({ to: "gone@example.com", from: s.from, subject: "Again", body: "<p>again</p>" });
    expect(again.body.data.emails).toHaveLength(1);
  });
});

describe("the gates on a campaign: the audience page and the claim", () => {
  it("the page leaves out the suppressed, the unsubscribed and those never subscribed; mail refused at the claim names its gate", async () => {
    const s = await campaignSetup();
    await s.addContacts([
      { email: "a@example.com" },
      { email: "b@example.com" },
      { email: "c@example.com" },
      { email: "never@example.com", subscribed: false },
    ]);
    await suppress(s, ["manual@example.com"]);
    await s.addContacts([{ email: "manual@example.com" }]);
    await unsubscribed(s, "left@example.com");
    const campaign = await s.createCampaign();
    expect((await s.request("POST", `/campaigns/${campaign.id}/send`)).status).toBe(200);

    // The audience pages write the emails; the emails' own messages are held back.
    const held = await s.writeAudiencePages();
    const listed = async () => (await s.get<EmailList>(`/emails?campaignId=${campaign.id}`)).body.data.items;
    expect((await listed()).map((e) => e.to).sort()).toEqual(["a@example.com", "b@example.com", "c@example.com"]);
    expect((await listed()).every((e) => e.stream === "BROADCAST")).toBe(true);

    // After the page: b is suppressed by hand, c unsubscribes (gate 1 for both, each with its entry's reason).
    await suppress(s, ["b@example.com"]);
    const [c] = (await s.get<ContactList>("/contacts?search=c@example.com")).body.contacts;
    expect((await s.request("PATCH", `/contacts/${c.id}`, { subscribed: false })).status).toBe(200);
    await s.runBatch(BULK_QUEUE, held);
    const after = await listed();
    const of = (to: string) => after.find((e) => e.to === to)!;
    expect(of("a@example.com")).toMatchObject({ status: "SENT", gate: null });
    expect(of("b@example.com")).toMatchObject({ status: "FAILED", gate: "SUPPRESSED", error: expect.stringContaining("MANUAL") });
    expect(of("c@example.com")).toMatchObject({ status: "FAILED", gate: "SUPPRESSED", error: expect.stringContaining("UNSUBSCRIBE") });
    expect(s.ses.calls.flatMap((call) => call.to)).toEqual(["a@example.com"]);
  });

  it("gate 3 at the claim: a campaign email whose contact was deleted after its page is refused as UNSUBSCRIBED", async () => {
    const s = await campaignSetup();
    const [kept, deleted] = await s.addContacts([{ email: "kept@example.com" }, { email: "deleted@example.com" }]);
    const campaign = await s.createCampaign();
    expect((await s.request("POST", `/campaigns/${campaign.id}/send`)).status).toBe(200);
    const held = await s.writeAudiencePages();
    expect((await s.request("DELETE", `/contacts/${deleted.id}`)).status).toBe(204);
    await s.runBatch(BULK_QUEUE, held);
    const items = (await s.get<EmailList>(`/emails?campaignId=${campaign.id}`)).body.data.items;
    expect(items.find((e) => e.to === "deleted@example.com")).toMatchObject({
      status: "FAILED",
      gate: "UNSUBSCRIBED",
      error: expect.stringMatching(/^UNSUBSCRIBED:/),
    });
    expect(items.find((e) => e.contactId === kept.id)).toMatchObject({ status: "SENT" });
  });

  it("an audience of only suppressed and unsubscribed contacts cannot be sent (400 INVALID_STATE)", async () => {
    const s = await campaignSetup();
    await s.addContacts([{ email: "m@example.com" }]);
    await suppress(s, ["m@example.com"]);
    await unsubscribed(s, "u@example.com");
    const campaign = await s.createCampaign();
    expectError(await s.request("POST", `/campaigns/${campaign.id}/send`), 400, "INVALID_STATE");
  });
});

describe("the gates on a campaign's test send", () => {
  it("a suppressed address, or a contact that unsubscribed or never subscribed, is refused naming the gate; nothing is written", async () => {
    const s = await campaignSetup();
    await suppress(s, ["boss@example.com"]);
    await unsubscribed(s, "left@example.com");
    await contact(s, "never@example.com", false);
    const campaign = await s.createCampaign();
    const manual = expectError(await s.request("POST", `/campaigns/${campaign.id}/test`, { email: "Boss@example.com" }), 400, "INVALID_STATE");
    expect(manual.errors).toEqual([{ field: "email", code: "SUPPRESSED", message: expect.stringContaining("MANUAL") }]);
    const left = expectError(await s.request("POST", `/campaigns/${campaign.id}/test`, { email: "left@example.com" }), 400, "INVALID_STATE");
    expect(left.errors?.[0]).toMatchObject({ code: "SUPPRESSED", message: expect.stringContaining("UNSUBSCRIBE") });
    // A contact that never subscribed meets gate 3 as it would in the audience.
    const never = expectError(await s.request("POST", `/campaigns/${campaign.id}/test`, { email: "never@example.com" }), 400, "INVALID_STATE");
    expect(never.errors).toEqual([{ field: "email", code: "UNSUBSCRIBED", message: expect.stringMatching(/^UNSUBSCRIBED: /) }]);
    expect(s.queue.messages).toHaveLength(0);
    // An address that is no contact (the sender's own inbox) meets gate 1 only.
    const ok = await s.request<{ data: { email: string } }>("POST", `/campaigns/${campaign.id}/test`, { email: "me@example.com" });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect(await sentTo(s)).toEqual(["me@example.com"]);
    expect((await s.get<Email>(`/emails/${ok.body.data.email}`)).body).toMatchObject({ stream: "BROADCAST", status: "SENT" });
  });
});

describe("the gates on a workflow's SEND_EMAIL", () => {
  it("each step's refusal names its gate; an unsubscribe leaves the transactional step alone", async () => {
    const a = await automationProject();
    const receipt = await a.template("Receipt");
    const news = await a.template("News", { type: "MARKETING" });
    const workflow = await a.createWorkflow({
      name: "both",
      eventName: "bought",
      allowReentry: true,
      steps: [
        { id: "receipt", type: "SEND_EMAIL", config: { templateId: receipt }, next: "news" },
        { id: "news", type: "SEND_EMAIL", config: { templateId: news } },
      ],
    });
    const api = a.project.api;
    // left: subscribed, then unsubscribed; never: created unsubscribed; manual: on the list by hand.
    const left = await api.post<UpsertedContact>("/contacts", { email: "left@example.org", subscribed: true });
    expect((await api.patch<Contact>(`/contacts/${left.body.id}`, { subscribed: false })).status).toBe(200);
    await api.post("/contacts", { email: "never@example.org", subscribed: false });
    expect((await api.post("/suppressions", { emails: ["manual@example.org"] })).status).toBe(200);

    const outcomes = async (email: string) => {
      const { contact } = await a.track(email, "bought");
      const execution = await a.executionWhere(workflow.id, (e) => e.contactId === contact && e.status === "COMPLETED");
      return execution.history.map((h) => [h.stepId, h.status, h.outcome]);
    };
    const left_ = await outcomes("left@example.org");
    expect(left_[0]).toEqual(["receipt", "COMPLETED", expect.stringMatching(/^email .* queued$/)]);
    expect(left_[1]).toEqual(["news", "SKIPPED", expect.stringMatching(/^skipped: SUPPRESSED: .*UNSUBSCRIBE/)]);
    const never = await outcomes("never@example.org");
    expect(never[0]).toEqual(["receipt", "COMPLETED", expect.stringMatching(/^email .* queued$/)]);
    expect(never[1]).toEqual(["news", "SKIPPED", expect.stringMatching(/^skipped: UNSUBSCRIBED: /)]);
    const manual = await outcomes("manual@example.org");
    expect(manual).toEqual([
      ["receipt", "SKIPPED", expect.stringMatching(/^skipped: SUPPRESSED: .*MANUAL/)],
      ["news", "SKIPPED", expect.stringMatching(/^skipped: SUPPRESSED: .*MANUAL/)],
    ]);
  }, 120_000);
});
