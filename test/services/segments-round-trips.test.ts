/** A campaign to a static segment walks its members a page of 500 at a time, at the cost of a page to every contact. */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { countingD1, emptyD1Stats } from "../../src/lib/d1-counter";
import { BULK_QUEUE, campaignSetup } from "../support/campaigns";

describe("D1 round trips of a static segment's audience page", () => {
  it("a page of 500 of a list's members costs the round trips and statements of a page of 500 of every contact", async () => {
    const stats = emptyD1Stats();
    const s = await campaignSetup({ DB: countingD1(env.DB, stats) });
    const added = await s.addContacts(Array.from({ length: 1100 }, (_, i) => ({ email: `m${String(i).padStart(4, "0")}@example.com` })));
    const list = await s.request<{ id: string }>("POST", "/segments", { name: "List", type: "STATIC" });
    // Every other contact is a member (550): the page skips the others and still fills 500.
    const members = added.filter((_, i) => i % 2 === 0).map((c) => c.email);
    for (let i = 0; i < members.length; i += 500) {
      const res = await s.request<{ added: number }>("POST", `/segments/${list.body.id}/members`, { emails: members.slice(i, i + 500) });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
    }

    async function firstPage(body: Record<string, unknown>) {
      const campaign = await s.createCampaign(body);
      expect((await s.request("POST", `/campaigns/${campaign.id}/send`)).status).toBe(200);
      const page = s.bulk.take().filter((m) => (m.body as { kind?: string }).kind === "campaign-page");
      expect(page).toHaveLength(1);
      Object.assign(stats, { statements: 0, batches: 0, roundTrips: 0 });
      await s.runBatch(BULK_QUEUE, page);
      const cost = { roundTrips: stats.roundTrips, statements: stats.statements };
      s.bulk.take();
      const written = await env.DB.prepare("SELECT count(*) AS n, sum(to_address IN (SELECT value FROM json_each(?2))) AS m FROM emails WHERE campaign_id = ?1")
        .bind(campaign.id, JSON.stringify(members))
        .first<{ n: number; m: number }>();
      return { cost, written: written!.n, members: written!.m };
    }
    const everyone = await firstPage({});
    const toList = await firstPage({ audienceType: "SEGMENT", segmentId: list.body.id });
    expect(everyone.written).toBe(500);
    expect(toList).toMatchObject({ written: 500, members: 500 });
    expect(toList.cost).toEqual(everyone.cost);
  });
});
