import { env } from "cloudflare:workers";
import { Webhook } from "standardwebhooks";
import { afterEach, describe, expect, it, vi } from "vitest";
import { clickUrl, openPixelUrl, unsubscribeUrl } from "../../../src/services/tracking/links";
import { insertSentEmail } from "../../support/emails";
import { BASE, call } from "../../support/http";
import { receiver, recordedEvents, webhookProject } from "../../support/webhooks";
import { eventually } from "../../support/wait";

afterEach(() => vi.restoreAllMocks());

const URL_ = "https://hooks.example.net/in";
const SECRET = env.LINK_SIGNING_SECRET!;

describe("engagement and unsubscribe events", () => {
  it("email.opened and email.clicked (with url) once per counted engagement; contact.unsubscribed from the one-click link, once", async () => {
    const { calls } = receiver();
    const p = await webhookProject();
    const hook = await p.createWebhook({ url: URL_, events: ["email.opened", "email.clicked", "contact.unsubscribed"] });
    const email = await insertSentEmail(p);
    const open = (await openPixelUrl(BASE, SECRET, email.id)).slice(BASE.length);
    const click = (await clickUrl(BASE, SECRET, email.id, "https://example.com/pricing")).slice(BASE.length);
    expect((await call("GET", open, { binary: true })).status).toBe(200);
    // A repeat inside the dedup window is not counted, so records no second event.
    expect((await call("GET", open, { binary: true })).status).toBe(200);
    expect((await call("GET", click, { redirect: "manual" })).status).toBe(302);
    const unsubscribe = (await unsubscribeUrl(BASE, SECRET, email.id)).slice(BASE.length);
    const oneClick = () =>
      call("POST", unsubscribe, { rawBody: "List-Unsubscribe=One-Click", headers: { "Content-Type": "application/x-www-form-urlencoded" } });
    expect((await oneClick()).status).toBe(200);
    expect((await oneClick()).status).toBe(200);

    const events = await eventually(async () => {
      const list = calls.filter((c) => c.url === URL_).map((c) => new Webhook(hook.secret).verify(c.body, c.headers) as { type: string; data: any });
      expect(list).toHaveLength(3);
      return list;
    });
    const of = (type: string) => events.filter((e) => e.type === type).map((e) => e.data);
    expect(of("email.opened")).toMatchObject([{ emailId: email.id, to: email.to }]);
    expect(of("email.clicked")).toMatchObject([{ emailId: email.id, url: "https://example.com/pricing" }]);
    expect(of("contact.unsubscribed")).toMatchObject([{ id: email.contactId, email: email.to, subscribed: false }]);
    // The repeats recorded nothing, so nothing else will be sent.
    expect((await recordedEvents(p.id)).sort()).toEqual(["contact.unsubscribed", "email.clicked", "email.opened"]);
  });
});
