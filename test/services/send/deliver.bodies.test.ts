import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { eq, inArray } from "drizzle-orm";
import { getDb } from "../../../src/db/client";
import { emails } from "../../../src/db/schema";
import { sendingSetup } from "../../support/sending";
import { campaignSetup } from "../../support/campaigns";
import { expectError } from "../../support/http";
import type { CampaignResponse, EmailDetail, EmailList, ProjectSettings } from "../../support/api";

/**
 * Issue 34: a sent email's HTML leaves D1 for one R2 object per consumer batch (store/objects/bodies.ts),
 * GET /emails/{id} returns the HTML as sent while it is kept, the cron mirrors the bucket's lifecycle
 * rule locally, and QUOTA_R2_STORED_BYTES counts what a project keeps in R2 apart from D1.
 */
afterEach(() => vi.restoreAllMocks());

type Setup = Awaited<ReturnType<typeof sendingSetup>>;
const DAY_MS = 86_400_000;
const utf8 = (text: string) => new TextEncoder().encode(text).length;

async function sendTo(s: Setup, to: string, body: string) {
  const res = await s.send({ to, from: s.from, subject: "Hello", body });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data.emails[0].email as string;
}

const row = async (id: string) => (await getDb(env.DB).select().from(emails).where(eq(emails.id, id)))[0];
const detail = async (s: Setup, id: string) => {
  const res = await s.get<EmailDetail>(`/emails/${id}`);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
};
const usage = async (s: Setup) => (await s.get<ProjectSettings>("/project")).body.data;
/** The HTML part of each message the fake SES received, by recipient. */
const sentHtml = (s: Setup) => new Map(s.ses.calls.map((call) => [call.to[0], call.mime.parts.find((p) => p.contentType.startsWith("text/html"))!.text]));

describe("sent bodies in R2", () => {
  it("after sending the row holds no HTML and GET /emails/{id} returns exactly what the provider received (tracking applied); lists do not repeat it", async () => {
    const s = await sendingSetup();
    const id = await sendTo(s, "ada@example.com", '<p>Hi {{email}} <a href="https://example.com/x">link</a> é</p>');
    const queued = await detail(s, id);
    // Before sending: the HTML as it will go out, variables filled, not tracked yet.
    expect(queued.html).toBe('<p>Hi ada@example.com <a href="https://example.com/x">link</a> é</p>');

    await s.deliver();
    const provider = sentHtml(s).get("ada@example.com")!;
    expect(provider).toContain(`/t/c/${id}`);
    const sent = await detail(s, id);
    expect(sent.status).toBe("SENT");
    expect(sent.html).toBe(provider);

    const stored = await row(id);
    expect(stored.html).toBe("");
    expect(stored.bodyRef).toMatch(/^bodies\/\d{4}-\d{2}-\d{2}\/[0-9a-f-]+#0,\d+$/);
    const list = (await s.get<EmailList>("/emails")).body;
    expect(list.data.items[0]).not.toHaveProperty("html");
  });

  it("two emails of one batch are in one object and each reads back its own body", async () => {
    const s = await sendingSetup();
    const first = await sendTo(s, "ada@example.com", "<p>First {{email}}</p>");
    const second = await sendTo(s, "bob@example.com", "<p>Second, a little longer: {{email}}</p>");
    expect(s.queue.messages).toHaveLength(2);
    await s.deliver();
    const provider = sentHtml(s);
    const [a, b] = [await row(first), await row(second)];
    const key = (ref: string | null) => ref?.split("#")[0];
    expect(key(a.bodyRef)).toBeDefined();
    expect(key(a.bodyRef)).toBe(key(b.bodyRef));
    expect(a.bodyRef).not.toBe(b.bodyRef);
    expect((await detail(s, first)).html).toBe(provider.get("ada@example.com"));
    expect((await detail(s, second)).html).toBe(provider.get("bob@example.com"));
    // The object is the batch's bodies one after another, each where its ref says.
    const offset = (ref: string | null) => Number(ref!.split("#")[1].split(",")[0]);
    const inOrder = [
      { at: offset(a.bodyRef), html: provider.get("ada@example.com")! },
      { at: offset(b.bodyRef), html: provider.get("bob@example.com")! },
    ].sort((x, y) => x.at - y.at);
    const object = await env.STORAGE.get(key(a.bodyRef)!);
    expect(await object!.text()).toBe(inOrder.map((p) => p.html).join(""));
  });

  it("moves the body's bytes from the D1 count to the R2 count; past EMAIL_HTML_RETENTION_DAYS the cron deleted the object, html is null and the R2 count drops", async () => {
    const s = await sendingSetup();
    const before = await usage(s);
    const id = await sendTo(s, "ada@example.com", `<p>${"x".repeat(2000)}</p>`);
    const queuedHtml = (await row(id)).html;
    const accepted = await usage(s);
    expect(accepted.storedBytes - before.storedBytes).toBeGreaterThanOrEqual(utf8(queuedHtml));
    expect(accepted.r2StoredBytes).toBe(before.r2StoredBytes);

    await s.deliver();
    const sentBody = (await detail(s, id)).html!;
    const sent = await usage(s);
    expect(sent.storedBytes).toBe(accepted.storedBytes - utf8(queuedHtml));
    expect(sent.r2StoredBytes).toBe(before.r2StoredBytes + utf8(sentBody));

    // A day after the keep (default 30 days), as the cron sees it: the local mirror of the lifecycle rule.
    const key = (await row(id)).bodyRef!.split("#")[0];
    expect(await env.STORAGE.head(key)).not.toBeNull();
    await s.tick(new Date(Date.now() + 32 * DAY_MS));
    expect(await env.STORAGE.head(key)).toBeNull();
    expect((await detail(s, id)).html).toBeNull();
    expect((await usage(s)).r2StoredBytes).toBe(before.r2StoredBytes);
  });

  it("when the bodies object cannot be written the mail is still SENT and keeps its HTML in D1 (purged later); nothing is counted in R2", async () => {
    const bucket = env.STORAGE;
    const down = {
      put: () => Promise.reject(new Error("R2 unavailable (test)")),
      get: (key: string, options?: R2GetOptions) => bucket.get(key, options),
      head: (key: string) => bucket.head(key),
      list: (options?: R2ListOptions) => bucket.list(options),
      delete: (keys: string | string[]) => bucket.delete(keys),
    } as unknown as R2Bucket;
    const s = await sendingSetup({ STORAGE: down });
    const before = await usage(s);
    const id = await sendTo(s, "ada@example.com", "<p>Kept</p>");
    await s.deliver();
    const email = await detail(s, id);
    expect(email.status).toBe("SENT");
    expect(email.html).toBe("<p>Kept</p>");
    expect((await row(id)).bodyRef).toBeNull();
    expect((await usage(s)).r2StoredBytes).toBe(before.r2StoredBytes);
  });

  it("a body older than EMAIL_HTML_RETENTION_DAYS answers html: null even before its object is deleted", async () => {
    const s = await sendingSetup();
    const id = await sendTo(s, "ada@example.com", "<p>Old</p>");
    await s.deliver();
    expect((await detail(s, id)).html).not.toBeNull();
    await getDb(env.DB)
      .update(emails)
      .set({ sentAt: new Date(Date.now() - 31 * DAY_MS) })
      .where(inArray(emails.id, [id]));
    expect((await detail(s, id)).html).toBeNull();
  });

  it("past QUOTA_R2_STORED_BYTES new mail is a 403 QUOTA_EXCEEDED and writes nothing; the D1 count does not hold the moved bodies", async () => {
    const s = await sendingSetup({ QUOTA_R2_STORED_BYTES: "3000" });
    const body = `<p>${"y".repeat(1200)}</p>`;
    const first = await sendTo(s, "ada@example.com", body);
    await s.deliver();
    const afterFirst = await usage(s);
    expect(afterFirst.r2StoredBytes).toBeGreaterThan(1200);
    // 1.2 KB more still fits in 3000 bytes; the body after it would not.
    await sendTo(s, "bob@example.com", body);
    await s.deliver();
    const full = await usage(s);
    const refused = expectError(await s.send({ to: "cy@example.com", from: s.from, subject: "Hello", body }), 403, "QUOTA_EXCEEDED");
    expect(refused.message).toContain("object storage");
    const written = await getDb(env.DB).select({ id: emails.id }).from(emails).where(eq(emails.projectId, s.project.id));
    expect(written).toHaveLength(2);
    expect(await usage(s)).toMatchObject({ storedBytes: full.storedBytes, r2StoredBytes: full.r2StoredBytes });
    // Both bodies are in R2, none in D1: the D1 count holds only small things (headers "{}", contact data "{}").
    expect(full.storedBytes).toBeLessThan(100);
    expect((await row(first)).html).toBe("");
  });

  it("a campaign page whose bodies would pass QUOTA_R2_STORED_BYTES writes nothing and the campaign waits, SENDING", async () => {
    const s = await campaignSetup({ QUOTA_R2_STORED_BYTES: "8000" });
    await s.addContacts([{ email: "c1@example.com" }, { email: "c2@example.com" }, { email: "c3@example.com" }]);
    const campaign = await s.createCampaign({ body: `<p>${"c".repeat(3000)}</p>` });
    expect((await s.request("POST", `/campaigns/${campaign.id}/send`)).status).toBe(200);
    await s.pump();
    expect((await s.request<CampaignResponse>("GET", `/campaigns/${campaign.id}`)).body.data.status).toBe("SENDING");
    expect((await s.request<EmailList>("GET", "/emails?limit=1")).body.data.total).toBe(0);
  });
});
