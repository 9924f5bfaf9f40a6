import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { callsPerAddress, BULK_QUEUE, campaignSetup, SEND_QUEUE } from "../../support/campaigns";
import type { CampaignResponse, Email, EmailList } from "../../support/api";

type Pending = { body: any; readyAt: number };

describe("sending priority: transactional mail never waits behind a campaign", () => {
  it("at the default send rate, a /v1/send during a draining campaign reaches the provider at once; the campaign still completes exactly once", async () => {
    // The deployed default (wrangler.toml): 14 emails per second for the project.
    expect(env.SEND_RATE_PER_SECOND).toBe("14");
    const s = await campaignSetup({ SEND_RATE_PER_SECOND: env.SEND_RATE_PER_SECOND });
    const recipients = 200;
    await s.addContacts(Array.from({ length: recipients }, (_, i) => ({ email: `fan${i}@example.com` })));
    const campaign = await s.createCampaign();
    expect((await s.request("POST", `/campaigns/${campaign.id}/send`)).status).toBe(200);

    // The bulk queue as the platform runs it: each message becomes ready after its delay.
    const pending: Pending[] = [];
    const collect = () => pending.push(...s.bulk.take().map((m) => ({ body: m.body, readyAt: Date.now() + (m.delaySeconds ?? 0) * 1000 })));
    let lastStepGranted = 0;
    /** One consumer invocation on up to 10 ready bulk messages; false when none is ready. */
    async function bulkStep(): Promise<boolean> {
      collect();
      const now = Date.now();
      const ready = pending.filter((p) => p.readyAt <= now).slice(0, 10);
      if (ready.length === 0) return false;
      for (const r of ready) pending.splice(pending.indexOf(r), 1);
      const calls = s.ses.calls.length;
      const retried = await s.runBatch(BULK_QUEUE, ready);
      lastStepGranted = s.ses.calls.length - calls;
      pending.push(...retried.map((m) => ({ body: m.body, readyAt: Date.now() + 1000 })));
      collect();
      return true;
    }

    // The campaign drains for a while: its audience page, then mail at the rate.
    const drainUntil = Date.now() + 1500;
    while (Date.now() < drainUntil) if (!(await bulkStep())) await new Promise((r) => setTimeout(r, 50));
    const sentBefore = s.ses.calls.length;
    expect(sentBefore).toBeGreaterThan(0);
    expect(sentBefore).toBeLessThan(recipients);

    // A sign-in link arrives while the campaign drains ...
    const sent = await s.send({ to: "user@example.com", from: s.from, subject: "Your sign-in link", body: "<p>Sign in</p>" });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    const messages = s.queue.take();
    expect(messages).toHaveLength(1);
    // ... and its consumer runs right after bulk invocations took every token they could
    // (the last one was refused any: without priority the bucket would now be empty).
    for (let guard = 0; guard < 200; guard++) {
      if (!(await bulkStep())) await new Promise((r) => setTimeout(r, 20));
      else if (lastStepGranted === 0) break;
    }
    expect(lastStepGranted).toBe(0);
    // Its first consumer invocation sends it: not deferred for a token (a deferral would
    // come back here as a retry with a delay of seconds). How long that takes on the
    // platform (queue batch wait + this one call) is measured by `npm run bench`
    // ("transactional delay during a campaign"), not by a wall-clock bound on a shared runner.
    const retried = await s.runBatch(SEND_QUEUE, messages);
    expect(retried).toEqual([]);
    expect(s.ses.calls.filter((c) => c.to[0] === "user@example.com")).toHaveLength(1);
    const email = await s.request<Email>("GET", `/emails/${sent.body.data.emails[0].email}`);
    expect(email.body.status).toBe("SENT");
    // ... while most of the campaign's mail is still waiting.
    const queued = await s.request<EmailList>("GET", `/emails?campaignId=${campaign.id}&status=QUEUED&limit=1`);
    expect(queued.body.data.total).toBeGreaterThan(recipients / 2);

    // The campaign goes on at the rate and completes with every contact exactly once.
    const deadline = Date.now() + 90_000;
    while (Date.now() < deadline) {
      if (!(await bulkStep())) {
        if (pending.length === 0) break;
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    const perAddress = callsPerAddress(s.ses.calls);
    expect(perAddress.get("user@example.com")).toBe(1);
    for (let i = 0; i < recipients; i++) expect(perAddress.get(`fan${i}@example.com`), `fan${i}`).toBe(1);
    expect(s.ses.calls).toHaveLength(recipients + 1);
    expect((await s.request<CampaignResponse>("GET", `/campaigns/${campaign.id}`)).body.data.status).toBe("SENT");
  }, 120_000);
});
