/**
 * A campaign whose queue lost everything it held (a crash): the next cron tick past the queued lease
 * queues the lost emails again (with their campaignId) and the walk's next page at once, and the campaign
 * finishes SENT with every contact sent once.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { PAGE_SIZE } from "../../../src/services/campaigns/audience";
import { QUEUED_LEASE_MS } from "../../../src/services/send/reasons";
import { BULK_QUEUE, callsPerAddress, campaignSetup } from "../../support/campaigns";
import type { CampaignResponse } from "../../support/api";

/** A bulk queue message as the test reads it: a campaign email or an audience page. */
type BulkBody = { emailId?: string; campaignId?: string; kind?: string; after?: string };

afterEach(() => vi.restoreAllMocks());

describe("a campaign after its queue lost every message", () => {
  it("the first tick past the lease re-queues its emails and its next page; it ends SENT, one email per contact", async () => {
    const s = await campaignSetup();
    const contacts = Array.from({ length: PAGE_SIZE + 20 }, (_, i) => ({ email: `crash${String(i).padStart(4, "0")}@example.com` }));
    await s.addContacts(contacts);
    const campaign = await s.createCampaign();
    expect((await s.request("POST", `/campaigns/${campaign.id}/send`)).status).toBe(200);

    // The first page is written and its emails and the next page are queued; 50 go out; then the runtime dies
    // and the queue with it.
    const [firstPage] = s.bulk.take();
    await s.runBatch(BULK_QUEUE, [firstPage]);
    const queued = s.bulk.take();
    const emails = queued.filter((m) => m.body.emailId);
    expect(emails.every((m) => (m.body as BulkBody).campaignId === campaign.id)).toBe(true);
    await s.runBatch(BULK_QUEUE, emails.slice(0, 50));
    expect(s.ses.calls).toHaveLength(50);
    s.bulk.take();

    await s.tick(new Date(Date.now() + QUEUED_LEASE_MS + 1_000));
    const requeued = s.bulk.messages.map((m) => m.body as BulkBody);
    expect(requeued.filter((b) => b.emailId)).toHaveLength(PAGE_SIZE - 50);
    expect(requeued.filter((b) => b.emailId).every((b) => b.campaignId === campaign.id)).toBe(true);
    expect(requeued.filter((b) => b.kind === "campaign-page")).toEqual([
      expect.objectContaining({ kind: "campaign-page", campaignId: campaign.id, after: expect.any(String) }),
    ]);

    await s.pump();
    const perAddress = callsPerAddress(s.ses.calls);
    for (const { email } of contacts) expect(perAddress.get(email), email).toBe(1);
    expect((await s.request<CampaignResponse>("GET", `/campaigns/${campaign.id}`)).body.data.status).toBe("SENT");
  });
});
