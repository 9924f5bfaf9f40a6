import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { getDb } from "../../src/db/client";
import { eq } from "drizzle-orm";
import { events } from "../../src/db/schema";
import { ENGAGEMENT_DEDUP_WINDOW_MS, recordEngagement } from "../../src/services/emails/status";
import { decodeHtmlAttribute } from "../../src/lib/html";
import { addTracking } from "../../src/services/tracking/links";
import { eventsOfEmail, getEmail, insertSentEmail, setTracking } from "../support/emails";
import { BASE, call, type ErrorBody, expectError, newProject } from "../support/http";
import type { EventList, OpenApiDoc } from "../support/api";
import { d1Outage } from "../fakes/d1-outage";

const SECRET = env.LINK_SIGNING_SECRET!;

/** The tracked links and pixel the consumer would put in this email's HTML, as paths. */
async function trackedMail(emailId: string, links: string[]) {
  const html = `<html><body>${links.map((l) => `<a href="${l}">x</a>`).join("")}</body></html>`;
  const out = await addTracking(html, { emailId, baseUrl: BASE, secret: SECRET, trackOpens: true, trackClicks: true });
  const clicks = [...out.matchAll(/<a href="([^"]*)"/g)].map((m) => decodeHtmlAttribute(m[1]).slice(BASE.length));
  const pixel = decodeHtmlAttribute(/<img src="([^"]*)"/.exec(out)![1]).slice(BASE.length);
  return { clicks, pixel };
}

const GIF_HEADER = "GIF89a";

/** GET without following redirects (the test client would follow a 302 back into the Worker). */
const click = (path: string) => call("GET", path, { redirect: "manual" });

/** GET the pixel; the body checked as bytes. */
async function open(path: string) {
  const res = await call<Uint8Array>("GET", path, { binary: true });
  return { status: res.status, headers: res.headers, bytes: res.body };
}

describe("GET /t/o/{emailId} (open pixel)", () => {
  it("returns a 1x1 GIF with no-cache headers and records the open, a repeat within a minute not again", async () => {
    const p = await newProject();
    const email = await insertSentEmail(p);
    const { pixel } = await trackedMail(email.id, []);

    const res = await open(pixel);
    expect(res.status).toBe(200);
    expect(res.headers.get("Content-Type")).toBe("image/gif");
    expect(res.headers.get("Cache-Control")).toContain("no-store");
    expect(new TextDecoder().decode(res.bytes.slice(0, 6))).toBe(GIF_HEADER);
    expect(res.bytes.length).toBe(42);

    const first = await getEmail(email.id);
    expect(first.opens).toBe(1);
    expect(first.status).toBe("OPENED");
    expect(first.openedAt).toBeInstanceOf(Date);

    // A privacy proxy or a reload fetching the pixel again right away: served, not counted.
    expect((await open(pixel)).status).toBe(200);
    const second = await getEmail(email.id);
    expect(second.opens).toBe(1);
    expect(second.openedAt!.getTime()).toBe(first.openedAt!.getTime());

    // The events are visible to the project's API, with the contact and the email.
    const list = await p.api.get<EventList>("/events?name=email.opened");
    expect(list.status).toBe(200);
    expect(list.body.data.items).toHaveLength(1);
    expect(list.body.data.items[0]).toMatchObject({ name: "email.opened", contactId: email.contactId, emailId: email.id, email: email.to });
  });

  it("still answers the GIF for a bad or missing signature, but records nothing", async () => {
    const p = await newProject();
    const email = await insertSentEmail(p);
    for (const path of [`/t/o/${email.id}?s=AAAA`, `/t/o/${email.id}`, `/t/o/${email.id}?s=${"A".repeat(43)}`]) {
      const res = await open(path);
      expect(res.status).toBe(200);
      expect(res.headers.get("Content-Type")).toBe("image/gif");
    }
    // A valid signature for another email does not count for this one.
    const otherEmail = await insertSentEmail(p);
    const { pixel } = await trackedMail(otherEmail.id, []);
    await open(pixel.replace(otherEmail.id, email.id));
    expect((await getEmail(email.id)).opens).toBe(0);
    expect(await eventsOfEmail(email.id)).toHaveLength(0);
  });
});

describe("GET /t/c/{emailId} (click redirect)", () => {
  it("redirects to the original URL and records the click with the URL, once per email within a minute", async () => {
    const p = await newProject();
    const email = await insertSentEmail(p);
    const { clicks } = await trackedMail(email.id, ["https://example.com/pricing?plan=pro&amp;ref=mail", "http://example.org/"]);

    const res = await click(clicks[0]);
    expect(res.status).toBe(302);
    expect(res.headers.get("Location")).toBe("https://example.com/pricing?plan=pro&ref=mail");
    // A link scanner following every link right after: redirected, not counted.
    expect((await click(clicks[1])).headers.get("Location")).toBe("http://example.org/");
    expect((await click(clicks[0])).status).toBe(302);

    const row = await getEmail(email.id);
    expect(row.clicks).toBe(1);
    expect(row.status).toBe("CLICKED");
    expect(row.clickedAt).toBeInstanceOf(Date);
    const list = await p.api.get<EventList>("/events?name=email.clicked");
    expect(list.body.data.items.map((e) => e.data.url)).toEqual(["https://example.com/pricing?plan=pro&ref=mail"]);
    expect(list.body.data.items[0]).toMatchObject({ contactId: email.contactId, emailId: email.id });
  });

  it("refuses a forged or missing signature with 400 and no redirect (not an open redirect)", async () => {
    const p = await newProject();
    const email = await insertSentEmail(p);
    const { clicks } = await trackedMail(email.id, ["https://example.com/"]);
    const tracked = new URL(BASE + clicks[0]);
    const sig = tracked.searchParams.get("s")!;

    const swapped = `/t/c/${email.id}?u=${encodeURIComponent("https://evil.example/")}&s=${sig}`;
    const forged = await click(swapped);
    expectError(forged, 400, "BAD_REQUEST");
    expect(forged.headers.get("Location")).toBeNull();

    expectError(await click(`/t/c/${email.id}?u=${encodeURIComponent("https://evil.example/")}`), 400);
    expectError(await click(`/t/c/${email.id}?s=${sig}`), 400);
    expectError(await click(`/t/c/${email.id}`), 400);
    expectError(await click(`/t/c/${email.id}?u=${encodeURIComponent("https://example.com/")}&s=%%%`), 400);

    expect((await getEmail(email.id)).clicks).toBe(0);
    expect(await eventsOfEmail(email.id)).toHaveLength(0);
  });

  it("refuses a correctly signed link to a non-http(s) URL", async () => {
    const p = await newProject();
    const email = await insertSentEmail(p);
    const { clickUrl } = await import("../../src/services/tracking/links");
    const signed = (await clickUrl(BASE, SECRET, email.id, "javascript:alert(1)")).slice(BASE.length);
    expectError(await click(signed), 400, "BAD_REQUEST");
    expect((await getEmail(email.id)).clicks).toBe(0);
  });

  it("still redirects (records nothing) for a valid link whose email no longer exists", async () => {
    const { clicks } = await trackedMail("0190f0a4-0000-7000-8000-000000000000", ["https://example.com/gone"]);
    const res = await click(clicks[0]);
    expect(res.status).toBe(302);
    expect(res.headers.get("Location")).toBe("https://example.com/gone");
  });
});

describe("OpenAPI", () => {
  it("documents the tracking, unsubscribe and webhook routes without a security requirement", async () => {
    const doc = await call<OpenApiDoc>("GET", "/openapi.json");
    expect(doc.status).toBe(200);
    for (const [path, method] of [
      ["/t/o/{emailId}", "get"],
      ["/t/c/{emailId}", "get"],
      ["/unsubscribe/{token}", "get"],
      ["/unsubscribe/{token}", "post"],
      ["/webhooks/ses", "post"],
    ]) {
      expect(doc.body.paths[path]?.[method], `${method} ${path}`).toBeDefined();
      // `security: []` overrides the document's key requirement: no key needed.
      expect(doc.body.paths[path][method].security).toEqual([]);
    }
  });
});

describe("tracking turned off for the project", () => {
  it("records neither opens nor clicks, but still serves the pixel and the redirect", async () => {
    const p = await newProject();
    await setTracking(p.id, false);
    const email = await insertSentEmail(p);
    const { clicks, pixel } = await trackedMail(email.id, ["https://example.com/"]);
    expect((await open(pixel)).status).toBe(200);
    expect((await click(clicks[0])).status).toBe(302);
    const row = await getEmail(email.id);
    expect([row.opens, row.clicks, row.status]).toEqual([0, 0, "SENT"]);
    expect(await eventsOfEmail(email.id)).toHaveLength(0);
  });
});

describe("status advance order", () => {
  it("an open after a click keeps CLICKED; an open never undoes a bounce; counts still go up", async () => {
    const p = await newProject();
    const db = getDb(env.DB);
    const clicked = await insertSentEmail(p, { status: "DELIVERED" });
    await recordEngagement(db, clicked.id, "CLICKED", { url: "https://example.com/" });
    await recordEngagement(db, clicked.id, "OPENED");
    const a = await getEmail(clicked.id);
    expect([a.status, a.opens, a.clicks]).toEqual(["CLICKED", 1, 1]);

    const bounced = await insertSentEmail(p, { status: "BOUNCED" });
    await recordEngagement(db, bounced.id, "OPENED");
    const b = await getEmail(bounced.id);
    expect([b.status, b.opens]).toEqual(["BOUNCED", 1]);

    const events = await eventsOfEmail(clicked.id);
    expect(events.map((e) => [e.name, e.data])).toEqual([
      ["email.clicked", { url: "https://example.com/" }],
      ["email.opened", {}],
    ]);
    expect(events.every((e) => e.contactId === clicked.contactId && e.projectId === p.id)).toBe(true);
  });

  it("an open while the consumer still holds the email (SENDING) counts but leaves the status to the consumer", async () => {
    const p = await newProject();
    const email = await insertSentEmail(p, { status: "SENDING" });
    expect(await recordEngagement(getDb(env.DB), email.id, "OPENED")).toBe(true);
    const row = await getEmail(email.id);
    expect([row.status, row.opens]).toEqual(["SENDING", 1]);
    expect(row.openedAt).toBeInstanceOf(Date);
  });

  it("recordEngagement on an unknown email changes nothing and reports false", async () => {
    const db = getDb(env.DB);
    expect(await recordEngagement(db, "no-such-email", "OPENED")).toBe(false);
    expect(await db.select().from(events).where(eq(events.emailId, "no-such-email"))).toHaveLength(0);
  });
});

describe("opens and clicks: de-duplicated per email within a short window", () => {
  it("counts a repeat once the window has passed, and each email on its own", async () => {
    const p = await newProject();
    const db = getDb(env.DB);
    const a = await insertSentEmail(p);
    const b = await insertSentEmail(p);
    const t0 = new Date();
    expect(await recordEngagement(db, a.id, "OPENED", {}, t0)).toBe(true);
    expect(await recordEngagement(db, a.id, "OPENED", {}, new Date(t0.getTime() + ENGAGEMENT_DEDUP_WINDOW_MS - 1))).toBe(false);
    // Another email of the same contact and project is not affected.
    expect(await recordEngagement(db, b.id, "OPENED", {}, t0)).toBe(true);
    // A click is not an open: counted on its own.
    expect(await recordEngagement(db, a.id, "CLICKED", { url: "https://example.com/" }, t0)).toBe(true);
    expect(await recordEngagement(db, a.id, "OPENED", {}, new Date(t0.getTime() + ENGAGEMENT_DEDUP_WINDOW_MS + 1))).toBe(true);
    const row = await getEmail(a.id);
    expect([row.opens, row.clicks]).toEqual([2, 1]);
    expect(row.openedAt!.getTime()).toBe(t0.getTime());
    expect((await eventsOfEmail(a.id)).map((e) => e.name).sort()).toEqual(["email.clicked", "email.opened", "email.opened"]);
    expect((await getEmail(b.id)).opens).toBe(1);
  });

  it("ten simultaneous pixel fetches count one open", async () => {
    const p = await newProject();
    const email = await insertSentEmail(p);
    const { pixel } = await trackedMail(email.id, []);
    const results = await Promise.all(Array.from({ length: 10 }, () => open(pixel)));
    expect(results.every((r) => r.status === 200)).toBe(true);
    expect((await getEmail(email.id)).opens).toBe(1);
    expect(await eventsOfEmail(email.id)).toHaveLength(1);
  });
});

describe("the click redirect when D1 fails", () => {
  it("still redirects (and the pixel still answers) when recording throws", async () => {
    const p = await newProject();
    const email = await insertSentEmail(p);
    const { clicks, pixel } = await trackedMail(email.id, ["https://example.com/docs"]);
    const brokenDb = d1Outage({ down: true, message: "D1_ERROR: simulated outage" });
    const brokenEnv = { ...env, DB: brokenDb };
    const res = await call("GET", clicks[0], { redirect: "manual", env: brokenEnv });
    expect(res.status).toBe(302);
    expect(res.headers.get("Location")).toBe("https://example.com/docs");
    const img = await call("GET", pixel, { binary: true, env: brokenEnv });
    expect(img.status).toBe(200);
    expect((await getEmail(email.id)).clicks).toBe(0);
  });
});

describe("link signing secret rotation", () => {
  const OLD = "old-link-signing-secret-0123456789abcdef";

  it("links signed with LINK_SIGNING_SECRET_PREVIOUS keep working until it is removed", async () => {
    const p = await newProject();
    const email = await insertSentEmail(p);
    const html = `<html><body><a href="https://example.com/">x</a></body></html>`;
    const out = await addTracking(html, { emailId: email.id, baseUrl: BASE, secret: OLD, trackOpens: true, trackClicks: true });
    const link = decodeHtmlAttribute(/<a href="([^"]*)"/.exec(out)![1]);
    const rotating = { ...env, LINK_SIGNING_SECRET_PREVIOUS: OLD };
    const during = await call("GET", link, { redirect: "manual", env: rotating });
    expect(during.status).toBe(302);
    expect(during.headers.get("Location")).toBe("https://example.com/");
    // Without the previous secret the old link is refused.
    const after = await call("GET", link, { redirect: "manual", env });
    expect(after.status).toBe(400);
  });

  it("refuses a secret shorter than 32 bytes", async () => {
    const p = await newProject();
    const email = await insertSentEmail(p);
    const { clicks } = await trackedMail(email.id, ["https://example.com/"]);
    const short = { ...env, LINK_SIGNING_SECRET: "x".repeat(31) };
    const res = await call<ErrorBody>("GET", clicks[0], { redirect: "manual", env: short });
    expect(res.status).toBe(500);
    const body = res.body;
    expect(body.error.message).toContain("at least 32 bytes");
    expect(res.headers.get("Location")).toBeNull();
    const shortPrevious = { ...env, LINK_SIGNING_SECRET_PREVIOUS: "too-short" };
    const forged = `/t/c/${email.id}?u=${encodeURIComponent("https://example.com/")}&s=${"A".repeat(43)}`;
    const res2 = await call("GET", forged, { redirect: "manual", env: shortPrevious });
    expect(res2.status).toBe(500);
  });
});
