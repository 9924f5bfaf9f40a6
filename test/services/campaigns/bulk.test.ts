import { afterEach, describe, expect, it, vi } from "vitest";
import { PAGE_SIZE } from "../../../src/services/campaigns/audience";
import { decodeWords } from "../../fakes/ses";
import { BULK_QUEUE, callsPerAddress, campaignSetup } from "../../support/campaigns";
import type { CampaignResponse, EmailList } from "../../support/api";

afterEach(() => vi.restoreAllMocks());

describe("a campaign to 2,000 contacts", () => {
  it("sends exactly one email per subscribed contact through a redelivered page and transient provider failures; DRAFT -> SENDING -> SENT", async () => {
    const s = await campaignSetup();
    const subscribed = Array.from({ length: 1990 }, (_, i) => ({ email: `c${String(i).padStart(4, "0")}@example.com`, data: { firstName: `F${i}` } }));
    const rows = await s.addContacts([
      ...subscribed,
      ...Array.from({ length: 5 }, (_, i) => ({ email: `unsub${i}@example.com`, subscribed: false })),
      ...Array.from({ length: 5 }, (_, i) => ({ email: `supp${i}@example.com` })),
    ]);
    for (let i = 0; i < 5; i++) await s.suppress(`supp${i}@example.com`);

    const campaign = await s.createCampaign();
    expect(campaign.status).toBe("DRAFT");
    const sent = await s.request<CampaignResponse>("POST", `/campaigns/${campaign.id}/send`);
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    expect(sent.body.data.status).toBe("SENDING");

    // Joins after the send started: not added.
    expect((await s.request("POST", "/contacts", { email: "late@example.com" })).status).toBe(201);

    // The first page, then the same page message again (at-least-once delivery).
    const [firstPage] = s.bulk.take();
    expect(firstPage.body).toMatchObject({ kind: "campaign-page", campaignId: campaign.id, after: null });
    expect(await s.runBatch(BULK_QUEUE, [firstPage])).toEqual([]);
    const afterFirst = s.bulk.take();
    expect(afterFirst.filter((m) => (m.body as any).kind === "campaign-page")).toHaveLength(1);
    expect(afterFirst.filter((m) => (m.body as any).emailId)).toHaveLength(PAGE_SIZE);
    expect(await s.runBatch(BULK_QUEUE, [firstPage], 2)).toEqual([]);
    const afterRedelivery = s.bulk.take();
    // Nothing inserted twice, no second chain of pages; its still-queued emails are queued again (claims dedupe them).
    expect(afterRedelivery.filter((m) => (m.body as any).kind === "campaign-page")).toHaveLength(0);
    const listed = await s.request<EmailList>("GET", `/emails?campaignId=${campaign.id}&limit=1`);
    expect(listed.body.data.total).toBe(PAGE_SIZE);
    s.bulk.messages.push(...afterFirst, ...afterRedelivery);

    // Mid-send: one contact of a later page is deleted, one of the first page unsubscribes before its email goes.
    const deleted = rows[1989];
    expect((await s.request("DELETE", `/contacts/${deleted.id}`)).status).toBe(204);
    const unsubscribed = rows[3];
    expect((await s.request("PATCH", `/contacts/${unsubscribed.id}`, { subscribed: false })).status).toBe(200);

    // The provider fails transiently a few times.
    s.ses.failNext(
      { status: 500, message: "internal" },
      { status: 503, message: "unavailable" },
      { status: 429, errorType: "TooManyRequestsException", message: "slow down" },
    );

    await s.pump();

    const perAddress = callsPerAddress(s.ses.calls);
    const expected = subscribed.map((c) => c.email).filter((e) => e !== deleted.email && e !== unsubscribed.email);
    expect(expected).toHaveLength(1988);
    for (const address of expected) expect(perAddress.get(address), address).toBe(1);
    expect(s.ses.calls).toHaveLength(1988);
    expect(s.ses.requests.filter((r) => r.path === "/v2/email/outbound-emails" && r.status !== 200)).toHaveLength(3);
    for (const never of [deleted.email, unsubscribed.email, "late@example.com", "unsub0@example.com", "supp0@example.com"]) {
      expect(perAddress.has(never), never).toBe(false);
    }

    const done = await s.request<CampaignResponse>("GET", `/campaigns/${campaign.id}`);
    expect(done.body.data.status).toBe("SENT");
    expect(Date.parse(done.body.data.sentAt!)).not.toBeNaN();

    const stats = await s.request("GET", `/campaigns/${campaign.id}/stats`);
    expect(stats.body).toMatchObject({
      success: true,
      data: { totalRecipients: 1989, sentCount: 1988, failedCount: 1, deliveredCount: 0, openedCount: 0, openRate: 0, deliveryRate: 0 },
    });
    expect((await s.request<EmailList>("GET", `/emails?campaignId=${campaign.id}&status=SENT&limit=1`)).body.data.total).toBe(1988);
    const skipped = await s.request<EmailList>("GET", `/emails?campaignId=${campaign.id}&status=FAILED`);
    expect(skipped.body.data.items.map((e) => e.to)).toEqual([unsubscribed.email]);

    // Marketing mail: rendered per contact, unsubscribe link in the body and RFC 8058 one-click headers.
    const one = s.ses.calls.find((c) => c.to[0] === "c0007@example.com")!;
    expect(decodeWords(one.mime.headers.subject)).toBe("Hello F7");
    expect(one.mime.headers["list-unsubscribe"]).toMatch(/^<http:\/\/edge-mail\.test\/unsubscribe\/[^>]+>, <mailto:/);
    expect(one.mime.headers["list-unsubscribe-post"]).toBe("List-Unsubscribe=One-Click");
    const html = one.mime.parts.find((p) => p.contentType.startsWith("text/html"))!.text;
    expect(html).toContain("Hi F7");
    expect(html).toMatch(/href="http:\/\/edge-mail\.test\/unsubscribe\//);
  }, 240_000);
});
