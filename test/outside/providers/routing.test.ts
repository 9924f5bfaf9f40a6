import { describe, expect, it } from "vitest";
import type { Env } from "../../../src/env";
import { broadcastUnavailable, providerNameFor, usesSes } from "../../../src/outside/providers";
import { fakeEmailService } from "../../fakes/email-service";
import { decodeWords } from "../../fakes/ses";
import { campaignSetup, SEND_QUEUE } from "../../support/campaigns";
import { expectError } from "../../support/http";
import { runConsumer } from "../../support/queues";
import type { Email, EmailList } from "../../support/api";

/**
 * Provider routing by stream (src/outside/providers/index.ts; docs/deploy.md "Streams and
 * suppressions"): broadcast mail through EMAIL_PROVIDER_BROADCAST (default EMAIL_PROVIDER),
 * transactional through EMAIL_PROVIDER; Cloudflare Email Service carries transactional mail only.
 */

const asEnv = (vars: Record<string, string>) => vars as unknown as Env;

describe("which provider carries which stream", () => {
  it("EMAIL_PROVIDER_BROADCAST defaults to EMAIL_PROVIDER; Cloudflare alone carries no broadcast", () => {
    expect(providerNameFor(asEnv({ EMAIL_PROVIDER: "ses" }), "BROADCAST")).toBe("ses");
    expect(providerNameFor(asEnv({ EMAIL_PROVIDER: "cloudflare", EMAIL_PROVIDER_BROADCAST: "SES" }), "BROADCAST")).toBe("ses");
    expect(providerNameFor(asEnv({ EMAIL_PROVIDER: "cloudflare", EMAIL_PROVIDER_BROADCAST: "ses" }), "TRANSACTIONAL")).toBe("cloudflare");
    expect(broadcastUnavailable(asEnv({ EMAIL_PROVIDER: "cloudflare" }))).toContain("EMAIL_PROVIDER_BROADCAST=ses");
    expect(broadcastUnavailable(asEnv({ EMAIL_PROVIDER: "cloudflare", EMAIL_PROVIDER_BROADCAST: "ses" }))).toBeNull();
    expect(broadcastUnavailable(asEnv({ EMAIL_PROVIDER: "ses" }))).toBeNull();
    expect(usesSes(asEnv({ EMAIL_PROVIDER: "cloudflare", EMAIL_PROVIDER_BROADCAST: "ses" }))).toBe(true);
    expect(usesSes(asEnv({ EMAIL_PROVIDER: "cloudflare" }))).toBe(false);
  });
});

describe("both providers: transactional through Cloudflare Email Service, broadcast through SES", () => {
  it("each stream reaches its own provider, /v1/send, a campaign and its test send alike", async () => {
    const service = fakeEmailService();
    const s = await campaignSetup({
      EMAIL_PROVIDER: "cloudflare",
      EMAIL_PROVIDER_BROADCAST: "ses",
      EMAIL: service.binding,
      PUBLIC_URL: "https://mail.edge-mail.test",
    });
    // A domain added here is registered with SES too (BYODKIM), so SES can sign its broadcast mail.
    const added = await s.post<{ domain: string }>("/domains", { domain: `both-${crypto.randomUUID().slice(0, 8)}.test` });
    expect(added.status, JSON.stringify(added.body)).toBe(201);
    expect(s.ses.identities.has(added.body.domain)).toBe(true);
    await s.addContacts([{ email: "ada@example.com" }, { email: "grace@example.com" }]);

    const tx = await s.send({ to: "ada@example.com", from: s.from, subject: "Receipt", body: "<p>r</p>" });
    expect(tx.status, JSON.stringify(tx.body)).toBe(200);
    const news = await s.send({ to: "grace@example.com", from: s.from, subject: "News", body: "<p>n</p>", stream: "broadcast" });
    expect(news.status, JSON.stringify(news.body)).toBe(200);
    const campaign = await s.createCampaign({ subject: "Spring" });
    expect((await s.request("POST", `/campaigns/${campaign.id}/send`)).status).toBe(200);
    const test = await s.request<{ data: { email: string } }>("POST", `/campaigns/${campaign.id}/test`, { email: "boss@example.com" });
    expect(test.status, JSON.stringify(test.body)).toBe(200);
    await s.pump();

    expect(service.sent.map((m) => `${m.to}: ${m.subject}`)).toEqual(["ada@example.com: Receipt"]);
    expect(s.ses.calls.map((c) => `${c.to.join()}: ${decodeWords(c.mime.headers.subject)}`).sort()).toEqual(
      ["ada@example.com: Spring", "boss@example.com: [TEST] Spring", "grace@example.com: News", "grace@example.com: Spring"].sort(),
    );
    const records = (await s.get<EmailList>("/emails?limit=10")).body.data.items;
    expect(records.every((e) => e.status === "SENT")).toBe(true);
    expect(records.filter((e) => e.stream === "TRANSACTIONAL").map((e) => e.to)).toEqual(["ada@example.com"]);
  });
});

describe("Cloudflare Email Service alone: broadcast mail is refused with a clear error", () => {
  it("409 CONFLICT naming the stream on a campaign send, its test send and a broadcast /v1/send; transactional mail goes", async () => {
    const service = fakeEmailService();
    const s = await campaignSetup({ EMAIL_PROVIDER: "cloudflare", EMAIL: service.binding });
    await s.addContacts([{ email: "ada@example.com" }]);
    const campaign = await s.createCampaign();
    for (const res of [
      await s.request("POST", `/campaigns/${campaign.id}/send`),
      await s.request("POST", `/campaigns/${campaign.id}/test`, { email: "boss@example.com" }),
      await s.send({ to: "ada@example.com", from: s.from, subject: "News", body: "<p>n</p>", stream: "broadcast" }),
    ]) {
      const error = expectError(res, 409, "CONFLICT");
      expect(error.message).toContain("Cloudflare Email Service carries transactional mail only");
      expect(error.errors).toEqual([{ field: "stream", code: "broadcast_unavailable", message: expect.stringContaining("EMAIL_PROVIDER_BROADCAST") }]);
    }
    expect((await s.get<{ data: { status: string } }>(`/campaigns/${campaign.id}`)).body.data.status).toBe("DRAFT");
    expect(s.queue.messages).toHaveLength(0);

    const tx = await s.send({ to: "ada@example.com", from: s.from, subject: "Receipt", body: "<p>r</p>" });
    expect(tx.status).toBe(200);
    await s.pump();
    expect(service.sent.map((m) => m.to)).toEqual(["ada@example.com"]);
  });

  it("broadcast mail already queued when the setting went away is FAILED with the reason, never sent through Cloudflare", async () => {
    const service = fakeEmailService();
    const s = await campaignSetup({ EMAIL_PROVIDER: "cloudflare", EMAIL_PROVIDER_BROADCAST: "ses", EMAIL: service.binding });
    const res = await s.send({ to: "ada@example.com", from: s.from, subject: "News", body: "<p>n</p>", stream: "broadcast", subscribed: true });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const id = res.body.data.emails[0].email;
    const cloudflareOnly = { ...s.env, EMAIL_PROVIDER_BROADCAST: undefined } as Env;
    await runConsumer(
      SEND_QUEUE,
      cloudflareOnly,
      s.queue.take().map((m) => ({ body: m.body })),
    );
    const email = (await s.get<Email>(`/emails/${id}`)).body;
    expect(email).toMatchObject({
      status: "FAILED",
      stream: "BROADCAST",
      error: expect.stringContaining("Cloudflare Email Service carries transactional mail only"),
    });
    expect(service.sent).toHaveLength(0);
    expect(s.ses.calls).toHaveLength(0);
  });
});
