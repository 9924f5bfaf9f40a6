/**
 * Pausing a SENDING campaign stops its mail (nothing leaves while paused, whatever is queued or
 * redelivered); resuming sends each remaining recipient the email exactly once.
 */
import { describe, expect, it } from "vitest";
import { BULK_QUEUE, callsPerAddress, campaignSetup } from "../support/campaigns";
import { expectError } from "../support/http";
import type { CampaignResponse } from "../support/api";

type Paused = CampaignResponse & { data: { paused: boolean } };

describe("campaign pause and resume", () => {
  it("over 2,000 recipients with a redelivered batch: nothing leaves while paused, then every recipient gets it once", async () => {
    const s = await campaignSetup();
    const contacts = Array.from({ length: 2000 }, (_, i) => ({ email: `pause${String(i).padStart(4, "0")}@example.com` }));
    await s.addContacts(contacts);
    const campaign = await s.createCampaign();
    expect((await s.request("POST", `/campaigns/${campaign.id}/send`)).status).toBe(200);

    // The first page is written; 100 of its emails go out; then the campaign is paused.
    const [firstPage] = s.bulk.take();
    await s.runBatch(BULK_QUEUE, [firstPage]);
    const queued = s.bulk.take();
    const emails = queued.filter((m) => m.body.emailId);
    await s.runBatch(BULK_QUEUE, emails.slice(0, 50));
    await s.runBatch(BULK_QUEUE, emails.slice(50, 100));
    expect(s.ses.calls).toHaveLength(100);

    const paused = await s.request<Paused>("POST", `/campaigns/${campaign.id}/pause`);
    expect(paused.status, JSON.stringify(paused.body)).toBe(200);
    expect(paused.body.data).toMatchObject({ status: "SENDING", paused: true });
    expectError(await s.request("POST", `/campaigns/${campaign.id}/pause`), 409, "CONFLICT");

    // Everything still queued (the rest of the page's emails and the next page), delivered twice over: nothing leaves.
    const rest = queued.filter((m) => !emails.slice(0, 100).includes(m));
    await s.runBatch(BULK_QUEUE, rest.slice(0, 50));
    await s.runBatch(BULK_QUEUE, rest.slice(0, 50), 2);
    s.bulk.messages.push(...rest.slice(50));
    await s.pump();
    expect(s.ses.calls).toHaveLength(100);
    // The cron leaves a paused walk alone.
    await s.tick(new Date(Date.now() + 5 * 60_000));
    await s.pump();
    expect(s.ses.calls).toHaveLength(100);
    expect((await s.request<Paused>("GET", `/campaigns/${campaign.id}`)).body.data).toMatchObject({ status: "SENDING", paused: true });

    const resumed = await s.request<Paused>("POST", `/campaigns/${campaign.id}/resume`);
    expect(resumed.status, JSON.stringify(resumed.body)).toBe(200);
    expect(resumed.body.data).toMatchObject({ status: "SENDING", paused: false });
    expectError(await s.request("POST", `/campaigns/${campaign.id}/resume`), 409, "CONFLICT");

    // The resume's messages (re-queue the QUEUED emails, the walk's next page); then one batch of emails is redelivered.
    await s.runBatch(BULK_QUEUE, s.bulk.take());
    const again = s.bulk.take();
    const againEmails = again.filter((m) => m.body.emailId);
    expect(againEmails.length).toBeGreaterThan(50);
    await s.runBatch(BULK_QUEUE, againEmails.slice(0, 50));
    await s.runBatch(BULK_QUEUE, againEmails.slice(0, 50), 2);
    s.bulk.messages.push(...again.filter((m) => !againEmails.slice(0, 50).includes(m)));
    await s.pump();

    expect(s.ses.calls).toHaveLength(2000);
    const perAddress = callsPerAddress(s.ses.calls);
    expect(perAddress.size).toBe(2000);
    for (const { email } of contacts) expect(perAddress.get(email), email).toBe(1);
    const done = await s.request<Paused>("GET", `/campaigns/${campaign.id}`);
    expect(done.body.data).toMatchObject({ status: "SENT", paused: false });
  });

  it("only a SENDING campaign pauses, only a paused one resumes (409 CONFLICT in the envelope)", async () => {
    const s = await campaignSetup();
    await s.addContacts([{ email: "one@example.com" }]);
    const campaign = await s.createCampaign();
    expect(expectError(await s.request("POST", `/campaigns/${campaign.id}/pause`), 409, "CONFLICT").message).toMatch(/DRAFT/);
    expectError(await s.request("POST", `/campaigns/${campaign.id}/resume`), 409, "CONFLICT");
    expectError(await s.request("POST", "/campaigns/nope/pause"), 404);
    expect((await s.request<Paused>("GET", `/campaigns/${campaign.id}`)).body.data.paused).toBe(false);
  });
});
