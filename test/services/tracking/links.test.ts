import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { getDb } from "../../../src/db/client";
import { suppressions } from "../../../src/db/schema";
import { advanceStatus, STATUS_RANK } from "../../../src/services/emails/status";
import { decodeHtmlAttribute } from "../../../src/lib/html";
import { findSuppressed } from "../../../src/services/suppressions";
import { addTracking, clickSignature, openSignature, parseUnsubscribeToken, unsubscribeUrl, verifyClickSignature } from "../../../src/services/tracking/links";
import { newProject } from "../../support/http";

const BASE = "http://edge-mail.test";
const SECRET = "unit-test-link-signing-secret-0123456789";
const opts = { emailId: "em_1", baseUrl: BASE, secret: SECRET, trackOpens: true, trackClicks: true };

function hrefs(html: string): string[] {
  return [...html.matchAll(/<a [^>]*href="([^"]*)"/g)].map((m) => m[1]);
}

describe("addTracking", () => {
  it("rewrites absolute http(s) links to signed redirects and leaves other links alone", async () => {
    const unsub = await unsubscribeUrl(BASE, SECRET, "em_1");
    const html = `<html><body>
      <a href="https://example.com/a?x=1&amp;y=2">A</a>
      <a href="http://example.org/">B</a>
      <a href="mailto:help@example.com">mail</a>
      <a href="tel:+123">tel</a>
      <a href="#top">top</a>
      <a href="/relative">rel</a>
      <a href="${unsub}">Unsubscribe</a>
      <a name="anchor">no href</a>
    </body></html>`;
    const out = await addTracking(html, opts);
    const links = hrefs(out);
    expect(links[0]).toBe(
      `${BASE}/t/c/em_1?u=${encodeURIComponent("https://example.com/a?x=1&y=2")}&amp;s=${await clickSignature(SECRET, "em_1", "https://example.com/a?x=1&y=2")}`,
    );
    expect(links[1]).toMatch(new RegExp(`^${BASE}/t/c/em_1\\?u=http%3A%2F%2Fexample\\.org%2F&amp;s=[A-Za-z0-9_-]{43}$`));
    expect(links.slice(2)).toEqual(["mailto:help@example.com", "tel:+123", "#top", "/relative", unsub]);
    expect(out).toContain('<a name="anchor">no href</a>');
  });

  it("tracks links however the tag is spelled, and gives a body without links or <body> the pixel at its end", async () => {
    for (const html of ["<A\nHREF='https://example.com/x'>x</A>", "<a\thref=https://example.com/x>x</a>", '<a/href="https://example.com/x">x</a>']) {
      const out = await addTracking(html, { ...opts, trackOpens: false });
      expect(out, html).toContain(`${BASE}/t/c/em_1?u=${encodeURIComponent("https://example.com/x")}`);
    }
    const pixel = `<img src="${BASE}/t/o/em_1?s=${await openSignature(SECRET, "em_1")}" width="1" height="1" alt="" style="display:none">`;
    expect(await addTracking("<p>No links, <abbr>abbr</abbr> and <bodyguard>tags</bodyguard></p>", opts)).toBe(
      `<p>No links, <abbr>abbr</abbr> and <bodyguard>tags</bodyguard></p>${pixel}`,
    );
    expect(await addTracking("<BODY class=x><p>Hi</p></BODY>", opts)).toBe(`<BODY class=x><p>Hi</p>${pixel}</BODY>`);
    expect(await addTracking("<p>Hi</p>", { ...opts, trackOpens: false })).toBe("<p>Hi</p>");
  });

  it("signs each URL so the signature only verifies with that URL", async () => {
    const out = await addTracking(`<a href="https://example.com/x">x</a>`, { ...opts, trackOpens: false });
    const tracked = new URL(decodeHtmlAttribute(hrefs(out)[0]));
    const u = tracked.searchParams.get("u")!;
    const s = tracked.searchParams.get("s")!;
    expect(u).toBe("https://example.com/x");
    expect(await verifyClickSignature(SECRET, "em_1", u, s)).toBe(true);
    expect(await verifyClickSignature(SECRET, "em_1", "https://evil.example/x", s)).toBe(false);
    expect(await verifyClickSignature(SECRET, "em_2", u, s)).toBe(false);
    expect(await verifyClickSignature("other-link-signing-secret-0123456789abc", "em_1", u, s)).toBe(false);
  });

  it("appends the open pixel at the end of <body>, or of the document without a body", async () => {
    const pixel = `<img src="${BASE}/t/o/em_1?s=${await openSignature(SECRET, "em_1")}" width="1" height="1" alt="" style="display:none">`;
    const withBody = await addTracking("<html><body><p>Hi</p></body></html>", opts);
    expect(withBody).toBe(`<html><body><p>Hi</p>${pixel}</body></html>`);
    const fragment = await addTracking("<p>Hi</p>", opts);
    expect(fragment).toBe(`<p>Hi</p>${pixel}`);
    const unclosedBody = await addTracking("<body><p>Hi</p>", opts);
    expect(unclosedBody).toBe(`<body><p>Hi</p>${pixel}`);
    expect(withBody.match(/\/t\/o\//g)).toHaveLength(1);
  });

  it("does only what is asked: clicks only, opens only, or nothing", async () => {
    const html = `<body><a href="https://example.com/">x</a></body>`;
    const clicksOnly = await addTracking(html, { ...opts, trackOpens: false });
    expect(clicksOnly).toContain("/t/c/em_1");
    expect(clicksOnly).not.toContain("/t/o/");
    const opensOnly = await addTracking(html, { ...opts, trackClicks: false });
    expect(opensOnly).toContain('href="https://example.com/"');
    expect(opensOnly).toContain("/t/o/em_1");
    expect(await addTracking(html, { ...opts, trackOpens: false, trackClicks: false })).toBe(html);
  });

  it("keeps non-ASCII text and existing attributes intact", async () => {
    const html = `<body><a class="btn" href="https://example.com/ä?q=ü" style="color:red">Grüße</a></body>`;
    const out = await addTracking(html, { ...opts, trackOpens: false });
    expect(out).toContain(">Grüße</a>");
    expect(out).toContain('class="btn"');
    expect(out).toContain('style="color:red"');
    const u = new URL(decodeHtmlAttribute(hrefs(out)[0])).searchParams.get("u");
    expect(u).toBe("https://example.com/ä?q=ü");
  });
});

describe("unsubscribe tokens", () => {
  it("round-trip the email id and reject tampering", async () => {
    const url = await unsubscribeUrl(`${BASE}/`, SECRET, "0190f0a4-aaaa-7bbb-8ccc-123456789abc");
    expect(url.startsWith(`${BASE}/unsubscribe/0190f0a4-aaaa-7bbb-8ccc-123456789abc.`)).toBe(true);
    const token = url.slice(`${BASE}/unsubscribe/`.length);
    expect(await parseUnsubscribeToken(SECRET, token)).toBe("0190f0a4-aaaa-7bbb-8ccc-123456789abc");
    expect(await parseUnsubscribeToken(SECRET, token.replace("0190f0a4", "0190f0a5"))).toBeNull();
    expect(await parseUnsubscribeToken("other-link-signing-secret-0123456789abc", token)).toBeNull();
    expect(await parseUnsubscribeToken(SECRET, "no-dot")).toBeNull();
    expect(await parseUnsubscribeToken(SECRET, "x.!!!")).toBeNull();
    // An open-pixel signature is not an unsubscribe signature for the same id.
    expect(await parseUnsubscribeToken(SECRET, `em_1.${await openSignature(SECRET, "em_1")}`)).toBeNull();
  });
});

describe("status ranks", () => {
  it("only move forward; bounce, complaint and failure override engagement", () => {
    expect(advanceStatus("SENT", "DELIVERED")).toBe("DELIVERED");
    expect(advanceStatus("CLICKED", "OPENED")).toBe("CLICKED");
    expect(advanceStatus("OPENED", "DELIVERED")).toBe("OPENED");
    expect(advanceStatus("OPENED", "COMPLAINED")).toBe("COMPLAINED");
    expect(advanceStatus("BOUNCED", "DELIVERED")).toBe("BOUNCED");
    expect(advanceStatus("BOUNCED", "OPENED")).toBe("BOUNCED");
    const order = ["QUEUED", "SENDING", "SENT", "DELIVERED", "OPENED", "CLICKED"] as const;
    for (let i = 1; i < order.length; i++) expect(STATUS_RANK[order[i]]).toBeGreaterThan(STATUS_RANK[order[i - 1]]);
  });
});

describe("findSuppressed", () => {
  it("finds suppressed addresses case-insensitively, per project, across IN-list chunks", async () => {
    const p = await newProject();
    const other = await newProject();
    const db = getDb(env.DB);
    await db.insert(suppressions).values([
      { projectId: p.id, email: "bounced@example.com", reason: "BOUNCE" },
      { projectId: p.id, email: "angry@example.com", reason: "COMPLAINT" },
      { projectId: other.id, email: "elsewhere@example.com", reason: "BOUNCE" },
    ]);
    const many = Array.from({ length: 250 }, (_, i) => `user${i}@example.com`);
    const found = await findSuppressed(db, p.id, [...many, "Bounced@Example.com", "elsewhere@example.com", "angry@example.com"]);
    expect([...found.entries()].sort()).toEqual([
      ["angry@example.com", { reason: "COMPLAINT", stream: "ALL" }],
      ["bounced@example.com", { reason: "BOUNCE", stream: "ALL" }],
    ]);
    expect((await findSuppressed(db, p.id, [])).size).toBe(0);
  });
});
