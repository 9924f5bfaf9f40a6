import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { forgetRoute } from "../../src/db/shards";
import { EMAIL_EVENTS_QUEUE } from "../../src/services/feedback/email-service";
import { MOVE_RETRY_SECONDS } from "../../src/services/shards/moving";
import { clickUrl, confirmUrl, openPixelUrl, unsubscribeUrl } from "../../src/services/tracking/links";
import { markMoving } from "../../src/store/moves";
import { fakeEmailService } from "../fakes/email-service";
import { insertSentEmail } from "../support/emails";
import { BASE, call, expectError, newProject } from "../support/http";
import { runConsumer } from "../support/queues";
import { sendingSetup } from "../support/sending";
import { move, shard } from "./support";

/**
 * Key-less writes (signed links in sent mail, Cloudflare Email Service events) while the email's
 * project moves from shard 0 to 1: nothing is written to the shard being copied from (it could be
 * lost in the copy). Each request goes through a fresh app, as in move.test.ts: the move waits out
 * the isolates' caches before it copies; the tests skip that wait.
 */
const SECRET = env.LINK_SIGNING_SECRET!;
const pathOf = (url: string) => url.slice(BASE.length);
const fresh = (method: string, path: string, options: Parameters<typeof call>[2] = {}) => call(method, path, { ...options, handler: createApp().fetch });
const form = (path: string, body = "List-Unsubscribe=One-Click") =>
  fresh("POST", path, { rawBody: body, headers: { "Content-Type": "application/x-www-form-urlencoded" } });

const contactRow = (n: number, id: string) => shard(n).prepare("SELECT subscribed FROM contacts WHERE id = ?1").bind(id).first<{ subscribed: number }>();
const eventNames = async (n: number, projectId: string) =>
  (await shard(n).prepare("SELECT name FROM events WHERE project_id = ?1 ORDER BY name").bind(projectId).all<{ name: string }>()).results.map((r) => r.name);

async function startMove(projectId: string) {
  await markMoving(env.DB, projectId, 0, 1).run();
  forgetRoute(projectId);
}

async function endMove(projectId: string) {
  expect(await move(projectId, 1)).toMatchObject({ status: "complete", output: { status: "moved", from: 0, to: 1 } });
  forgetRoute(projectId);
}

describe("signed links while their email's project moves between shards", () => {
  it("an unsubscribe (one-click and the page's form) answers 503 with Retry-After and changes nothing; the same link works after the move", async () => {
    const p = await newProject("unsubscribe during a move");
    const email = await insertSentEmail(p);
    const path = pathOf(await unsubscribeUrl(env.PUBLIC_URL!, SECRET, email.id));
    await startMove(p.id);

    const oneClick = await form(path);
    expectError(oneClick, 503, "SERVICE_UNAVAILABLE");
    expect(oneClick.headers.get("Retry-After")).toBe(String(MOVE_RETRY_SECONDS));
    const page = await form(path, "List-Unsubscribe=One-Click&source=page");
    expect(page.status).toBe(503);
    expect(page.headers.get("Content-Type")).toContain("text/html");
    expect(page.headers.get("Retry-After")).toBe(String(MOVE_RETRY_SECONDS));
    expect(page.body).toContain("try again in a minute");
    // The page itself is a read: it still shows the button.
    expect((await fresh("GET", path)).status).toBe(200);
    expect(await contactRow(0, email.contactId!)).toEqual({ subscribed: 1 });
    expect(await eventNames(0, p.id)).toEqual([]);

    await endMove(p.id);
    const after = await form(path);
    expect(after.status).toBe(200);
    expect(after.body).toBe("Unsubscribed");
    expect(await contactRow(1, email.contactId!)).toEqual({ subscribed: 0 });
    expect(await eventNames(1, p.id)).toEqual(["contact.unsubscribed"]);
  }, 60_000);

  it("a double opt-in confirm answers a 503 page with Retry-After and subscribes no one; the same link confirms after the move", async () => {
    const p = await newProject("confirm during a move");
    const email = await insertSentEmail(p, { subscribed: false });
    const path = pathOf(await confirmUrl(env.PUBLIC_URL!, SECRET, email.id));
    await startMove(p.id);

    const refused = await fresh("POST", path);
    expect(refused.status).toBe(503);
    expect(refused.headers.get("Content-Type")).toContain("text/html");
    expect(refused.headers.get("Retry-After")).toBe(String(MOVE_RETRY_SECONDS));
    expect(await contactRow(0, email.contactId!)).toEqual({ subscribed: 0 });
    expect(await eventNames(0, p.id)).toEqual([]);

    await endMove(p.id);
    const after = await fresh("POST", path);
    expect(after.status).toBe(200);
    expect(after.body).toContain("Subscription confirmed");
    expect(await contactRow(1, email.contactId!)).toEqual({ subscribed: 1 });
    expect(await eventNames(1, p.id)).toEqual(["contact.subscribed"]);
  }, 60_000);

  it("a click still redirects and the pixel is still served, neither counted; after the move they count on the new shard", async () => {
    const p = await newProject("engagement during a move");
    const email = await insertSentEmail(p);
    const target = "https://example.com/offer?id=7";
    const clickPath = pathOf(await clickUrl(BASE, SECRET, email.id, target));
    const pixelPath = pathOf(await openPixelUrl(BASE, SECRET, email.id));
    const counts = (n: number) => shard(n).prepare("SELECT opens, clicks FROM emails WHERE id = ?1").bind(email.id).first();
    await startMove(p.id);

    const clicked = await fresh("GET", clickPath, { redirect: "manual" });
    expect(clicked.status).toBe(302);
    expect(clicked.headers.get("Location")).toBe(target);
    const pixel = await fresh("GET", pixelPath);
    expect(pixel.status).toBe(200);
    expect(pixel.headers.get("Content-Type")).toBe("image/gif");
    expect(await counts(0)).toEqual({ opens: 0, clicks: 0 });
    expect(await eventNames(0, p.id)).toEqual([]);

    await endMove(p.id);
    expect((await fresh("GET", clickPath, { redirect: "manual" })).status).toBe(302);
    expect((await fresh("GET", pixelPath)).status).toBe(200);
    expect(await counts(1)).toEqual({ opens: 1, clicks: 1 });
    expect(await eventNames(1, p.id)).toEqual(["email.clicked", "email.opened"]);
  }, 60_000);
});

describe("Cloudflare Email Service events while the email's project moves", () => {
  it("are retried later (nothing written), and apply on the new shard after the move", async () => {
    const service = fakeEmailService();
    const s = await sendingSetup({ EMAIL_PROVIDER: "cloudflare", EMAIL: service.binding, PUBLIC_URL: "https://mail.edge-mail.test" });
    const sent = await s.send({ to: "ada@example.com", from: s.from, subject: "Hello", body: "<p>Hi</p>" });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    const emailId = sent.body.data.emails[0].email as string;
    await s.deliver();
    const delivered = {
      type: "cf.email.sending.message.delivered",
      source: { type: "email.sending", zoneId: "023e105f4ecef8ad9ca31a8372d0c353", domain: "example.com" },
      payload: { eventId: "evt-move-1", messageId: service.sent[0].messageId, sender: "hello@example.com", recipient: "ada@example.com", terminal: true },
      metadata: { accountId: "f9f7", eventSubscriptionId: "1830", eventSchemaVersion: 1, eventTimestamp: "2026-06-01T02:48:57.132Z" },
    };
    const status = (n: number) => shard(n).prepare("SELECT status FROM emails WHERE id = ?1").bind(emailId).first("status");
    expect(await status(0)).toBe("SENT");
    await startMove(s.project.id);

    const held = await runConsumer(EMAIL_EVENTS_QUEUE, { ...env }, [{ body: delivered }]);
    expect(held.explicitAcks).toEqual([]);
    expect(held.retryDelays).toEqual([MOVE_RETRY_SECONDS]);
    expect(await status(0)).toBe("SENT");

    await endMove(s.project.id);
    const applied = await runConsumer(EMAIL_EVENTS_QUEUE, { ...env }, [{ body: delivered, attempts: 2 }]);
    expect(applied.explicitAcks).toHaveLength(1);
    expect(await status(1)).toBe("DELIVERED");
  }, 60_000);
});
