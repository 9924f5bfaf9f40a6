import { afterEach, describe, expect, it, vi } from "vitest";
import { expectError, type JsonResponse } from "../../support/http";
import { campaignSetup } from "../../support/campaigns";
import type { CampaignResponse, CampaignStats, EmailList } from "../../support/api";

afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

const transactional = (s: Awaited<ReturnType<typeof campaignSetup>>, to: string[]) =>
  s.request("POST", "/v1/send", { to, from: s.from, subject: "Receipt", body: "<p>Thanks</p>" });

describe("campaigns and the emails-per-day quota", () => {
  it("a campaign counts toward the quota: sent when it fits, and /v1/send past the quota is then 429", async () => {
    const s = await campaignSetup({ QUOTA_EMAILS_PER_DAY: "5" });
    await s.addContacts([{ email: "c1@example.com" }, { email: "c2@example.com" }, { email: "c3@example.com" }]);
    expect((await transactional(s, ["t1@example.com"])).status).toBe(200);
    const campaign = await s.createCampaign();
    const sent = await s.request("POST", `/campaigns/${campaign.id}/send`);
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    await s.pump();
    expect((await s.request<CampaignResponse>("GET", `/campaigns/${campaign.id}`)).body.data.status).toBe("SENT");
    // 1 + 3 of 5 used: one more fits, two do not.
    expectError((await transactional(s, ["t2@example.com", "t3@example.com"])) as JsonResponse, 429, "QUOTA_EXCEEDED");
    expect((await transactional(s, ["t2@example.com"])).status).toBe(200);
  });

  it("a campaign whose audience exceeds what is left of today's quota is refused with 429 and Retry-After; nothing is sent", async () => {
    const s = await campaignSetup({ QUOTA_EMAILS_PER_DAY: "5" });
    await s.addContacts([{ email: "c1@example.com" }, { email: "c2@example.com" }, { email: "c3@example.com" }]);
    expect((await transactional(s, ["t1@example.com", "t2@example.com", "t3@example.com"])).status).toBe(200);
    const campaign = await s.createCampaign();
    const refused = await s.request("POST", `/campaigns/${campaign.id}/send`);
    const error = expectError(refused as JsonResponse, 429, "QUOTA_EXCEEDED");
    expect(error.message).toContain("3 contacts");
    expect(error.message).toContain("2 emails left");
    expect(Number(refused.headers.get("Retry-After"))).toBeGreaterThan(0);
    expect((await s.request<CampaignResponse>("GET", `/campaigns/${campaign.id}`)).body.data.status).toBe("DRAFT");
    expect(s.bulk.messages).toHaveLength(0);
    expect((await s.request<EmailList>("GET", "/emails?limit=1")).body.data.total).toBe(3);
    // Scheduling it for another day is fine: it fits in a day.
    const scheduled = await s.request<CampaignResponse>("POST", `/campaigns/${campaign.id}/send`, {
      scheduledFor: new Date(Date.now() + 86_400_000).toISOString(),
    });
    expect(scheduled.status, JSON.stringify(scheduled.body)).toBe(200);
    expect(scheduled.body.data.status).toBe("SCHEDULED");
  });

  it("an audience larger than a whole day's quota is refused with 403, now or scheduled", async () => {
    const s = await campaignSetup({ QUOTA_EMAILS_PER_DAY: "2" });
    await s.addContacts([{ email: "c1@example.com" }, { email: "c2@example.com" }, { email: "c3@example.com" }]);
    const campaign = await s.createCampaign();
    expectError((await s.request("POST", `/campaigns/${campaign.id}/send`)) as JsonResponse, 403, "QUOTA_EXCEEDED");
    const later = await s.request("POST", `/campaigns/${campaign.id}/send`, { scheduledFor: new Date(Date.now() + 86_400_000).toISOString() });
    expectError(later as JsonResponse, 403, "QUOTA_EXCEEDED");
    expect((await s.request<CampaignResponse>("GET", `/campaigns/${campaign.id}`)).body.data.status).toBe("DRAFT");
  });

  it("a due scheduled campaign that does not fit today's quota is postponed to 00:00 UTC, and starts then", async () => {
    const s = await campaignSetup({ QUOTA_EMAILS_PER_DAY: "4" });
    await s.addContacts([{ email: "c1@example.com" }, { email: "c2@example.com" }, { email: "c3@example.com" }]);
    const campaign = await s.createCampaign();
    const at = new Date(Date.now() + 5_000);
    expect((await s.request("POST", `/campaigns/${campaign.id}/send`, { scheduledFor: at.toISOString() })).status).toBe(200);
    // Meanwhile transactional mail uses most of today's quota.
    expect((await transactional(s, ["t1@example.com", "t2@example.com"])).status).toBe(200);
    await s.tick(new Date(at.getTime() + 1000));
    const held = (await s.request<CampaignResponse>("GET", `/campaigns/${campaign.id}`)).body.data;
    expect(held.status).toBe("SCHEDULED");
    const midnight = new Date(at);
    midnight.setUTCHours(24, 0, 0, 0);
    expect(held.scheduledAt).toBe(midnight.toISOString());
    expect(s.bulk.messages).toHaveLength(0);
    // At 00:00 UTC the quota is whole again: the cron starts it.
    await s.tick(new Date(midnight.getTime() + 1000));
    expect((await s.request<CampaignResponse>("GET", `/campaigns/${campaign.id}`)).body.data.status).toBe("SENDING");
    expect(s.bulk.messages.map((m) => (m.body as { kind?: string }).kind)).toEqual(["campaign-page"]);
  });

  it("a campaign test send counts toward the quota too", async () => {
    const s = await campaignSetup({ QUOTA_EMAILS_PER_DAY: "1" });
    await s.addContacts([{ email: "c1@example.com" }]);
    const campaign = await s.createCampaign();
    expect((await s.request("POST", `/campaigns/${campaign.id}/test`, { email: "me@example.com" })).status).toBe(200);
    expectError((await s.request("POST", `/campaigns/${campaign.id}/test`, { email: "me@example.com" })) as JsonResponse, 429, "QUOTA_EXCEEDED");
  });
  it("campaign emails count on the day they were written: the next UTC day, the whole quota is there again", async () => {
    const s = await campaignSetup({ QUOTA_EMAILS_PER_DAY: "5" });
    await s.addContacts([{ email: "c1@example.com" }, { email: "c2@example.com" }, { email: "c3@example.com" }, { email: "c4@example.com" }]);
    const campaign = await s.createCampaign();
    expect((await s.request("POST", `/campaigns/${campaign.id}/send`)).status).toBe(200);
    await s.pump();
    expect((await s.request<CampaignStats>("GET", `/campaigns/${campaign.id}/stats`)).body.data.sentCount).toBe(4);
    expectError((await transactional(s, ["t1@example.com", "t2@example.com"])) as JsonResponse, 429, "QUOTA_EXCEEDED");
    // The next UTC day (the clock only moves forward: ids stay ordered).
    const tomorrow = new Date();
    tomorrow.setUTCHours(24, 0, 1, 0);
    vi.useFakeTimers({ toFake: ["Date"], now: tomorrow });
    const next = await transactional(s, ["t1@example.com", "t2@example.com", "t3@example.com", "t4@example.com", "t5@example.com"]);
    expect(next.status, JSON.stringify(next.body)).toBe(200);
  });
});
