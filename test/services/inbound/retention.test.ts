/** Received mail is kept 30 days (rows by the retention cron, raw objects by the inbound/ expiry), and a lost queue message is queued again. */
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Env } from "../../../src/env";
import worker from "../../../src/index";
import { namedAddress } from "../../../src/services/inbound/receive";
import { requeueStaleInbound } from "../../../src/services/retention";
import { emailMessage } from "../../fakes/email-message";
import gmail from "../../fixtures/inbound/gmail-reply.eml?raw";
import { fill, INBOUND_DOMAIN, inboundSetup } from "./harness";

afterEach(() => vi.restoreAllMocks());

const DAY = 86_400_000;

describe("inbound retention", () => {
  it("after 30 days the row, the raw object and its R2 bytes are gone; before, they stay", async () => {
    const s = await inboundSetup();
    const to = namedAddress("support", s.project.id, INBOUND_DOMAIN);
    await s.receive({ from: "a@example.com", to, raw: fill(gmail, { to, from: "a@example.com" }) });
    await s.parse();
    const [item] = (await s.list()).items;
    const { r2_key: key } = (await env.DB.prepare("SELECT r2_key FROM inbound_messages WHERE id = ?").bind(item.id).first<{ r2_key: string }>())!;
    expect(key).toMatch(new RegExp(`^inbound/${s.project.id}/\\d{4}-\\d{2}-\\d{2}/${item.id}\\.eml$`));
    const r2Bytes = async () => (await s.get<{ data: { r2StoredBytes: number } }>("/project")).body.data.r2StoredBytes;
    expect(await r2Bytes()).toBe(item.size);

    await s.tick(new Date(Date.now() + 29 * DAY));
    expect((await s.list()).total).toBe(1);
    expect(await env.STORAGE.head(key)).not.toBeNull();

    await s.tick(new Date(Date.now() + 32 * DAY));
    expect((await s.list()).total).toBe(0);
    expect(await env.STORAGE.head(key)).toBeNull();
    expect(await r2Bytes()).toBe(0);
  });

  it("a message whose queueing failed is still taken, and the cron queues it again once it is 15 minutes old", async () => {
    const failing = { send: async () => Promise.reject(new Error("queue down")), sendBatch: async () => Promise.reject(new Error("queue down")) };
    const s = await inboundSetup();
    const to = namedAddress("support", s.project.id, INBOUND_DOMAIN);
    const down = { ...s.env, INBOUND_QUEUE: failing as unknown as Env["INBOUND_QUEUE"] };
    const message = emailMessage({ from: "a@example.com", to, raw: fill(gmail, { to, from: "a@example.com" }) });
    const ctx = createExecutionContext();
    await worker.email!(message, down, ctx);
    await waitOnExecutionContext(ctx);
    expect(message.rejected).toBeNull();
    expect(s.inbound.messages).toHaveLength(0);

    expect(await requeueStaleInbound(s.env, new Date(Date.now() + 5 * 60_000))).toBe(0);
    expect(await requeueStaleInbound(s.env, new Date(Date.now() + 16 * 60_000))).toBeGreaterThanOrEqual(1);
    await s.parse();
    expect((await s.list()).items[0]).toMatchObject({ status: "PARSED", from: "a@example.com" });
  });
});
