/** A campaign's stats count the recipients who replied (issue 37): auto-replies never count, two replies from one person count once. */
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Env } from "../../../src/env";
import worker from "../../../src/index";
import { INBOUND_QUEUE_NAME, type InboundQueueMessage } from "../../../src/messages";
import { replyAddress } from "../../../src/services/inbound/reply-token";
import gmail from "../../fixtures/inbound/gmail-reply.eml?raw";
import outOfOffice from "../../fixtures/inbound/out-of-office.eml?raw";
import { emailMessage } from "../../fakes/email-message";
import type { EmailList } from "../../support/api";
import { campaignSetup } from "../../support/campaigns";
import { heldQueue } from "../../support/queues";
import { fill, INBOUND_DOMAIN, SECRET } from "./harness";

describe("replies in a campaign's stats", () => {
  it("repliedCount and replyRate: recipients with a real reply; GET /inbound?campaignId= lists every message", async () => {
    const s = await campaignSetup();
    await s.addContacts([{ email: "a@example.com" }, { email: "b@example.com" }, { email: "c@example.com" }]);
    const campaign = await s.createCampaign();
    expect((await s.request("POST", `/campaigns/${campaign.id}/send`)).status).toBe(200);
    await s.pump();
    const emails = (await s.request<EmailList>("GET", `/emails?campaignId=${campaign.id}`)).body.data.items;
    expect(emails).toHaveLength(3);

    const inbound = heldQueue<InboundQueueMessage>("INBOUND_QUEUE", INBOUND_QUEUE_NAME, s.env);
    const byAddress = new Map(emails.map((e) => [e.to, e.id]));
    const reply = async (from: string, eml: string) => {
      const to = await replyAddress(SECRET, INBOUND_DOMAIN, byAddress.get(from)!);
      const message = emailMessage({ from, to, raw: fill(eml, { to, from }) });
      const ctx = createExecutionContext();
      await worker.email!(message, inbound.env as Env, ctx);
      await waitOnExecutionContext(ctx);
      expect(message.rejected).toBeNull();
    };
    await reply("a@example.com", gmail);
    await reply("a@example.com", gmail);
    await reply("b@example.com", gmail);
    await reply("c@example.com", outOfOffice);
    await inbound.drain();

    const stats = await s.request<{ data: { repliedCount: number; replyRate: number; sentCount: number } }>("GET", `/campaigns/${campaign.id}/stats`);
    expect(stats.body.data).toMatchObject({ sentCount: 3, repliedCount: 2, replyRate: 66.67 });
    const listed = await s.request<{ data: { total: number } }>("GET", `/inbound?campaignId=${campaign.id}`);
    expect(listed.body.data.total).toBe(4);
  });
});
