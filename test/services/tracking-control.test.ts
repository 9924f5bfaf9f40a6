/**
 * Tracking control: the project's trackingMode (and Plunk's trackingEnabled), a sending domain's open and
 * click switches, a send's own `track`, and a custom tracking hostname used in links and the pixel once
 * its CNAME verifies. What the recipient's mail contains is what is checked.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { sendingSetup } from "../support/sending";

afterEach(() => vi.restoreAllMocks());

type Setup = Awaited<ReturnType<typeof sendingSetup>>;
type DomainBody = {
  id: string;
  domain: string;
  openTracking: boolean;
  clickTracking: boolean;
  trackingHostname: string | null;
  trackingStatus: string | null;
  trackingCname?: string;
};

const LINK = "https://example.com/x?a=1&amp;b=2";
const BODY = `<html><body><p>Hi <a href="${LINK}">link</a></p></body></html>`;

/** Sends one email, delivers it, and returns the HTML the provider got. */
async function sentHtml(s: Setup, over: object = {}): Promise<string> {
  const before = s.ses.calls.length;
  const res = await s.send({ to: "ada@example.com", from: s.from, subject: "Hello", body: BODY, ...over });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  await s.deliver();
  expect(s.ses.calls).toHaveLength(before + 1);
  return s.ses.calls[before].mime.parts[1].text;
}

const pixel = /<img src="[^"]*\/t\/o\//;
const untouched = (html: string) => html.includes(`href="${LINK}"`) && !html.includes("/t/c/");

async function domainOf(s: Setup): Promise<DomainBody> {
  const list = await s.get<{ data: { items: DomainBody[] } }>("/domains");
  return list.body.data.items.find((d) => d.domain === s.domain)!;
}

describe("tracking control", () => {
  it("per project: DISABLED (or trackingEnabled false) sends no pixel and every link as written; GET /project shows both names", async () => {
    const s = await sendingSetup();
    const on = await sentHtml(s);
    expect(on).toMatch(pixel);
    expect(on).toContain("/t/c/");

    const patched = await s.request<{ data: { trackingMode: string; trackingEnabled: boolean } }>("PATCH", "/project", { trackingMode: "DISABLED" });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(patched.body.data).toMatchObject({ trackingMode: "DISABLED", trackingEnabled: false });
    const off = await sentHtml(s);
    expect(off).not.toMatch(pixel);
    expect(untouched(off)).toBe(true);

    // Plunk's boolean still works, and shows as the mode.
    const plunk = await s.request<{ data: { trackingMode: string; trackingEnabled: boolean } }>("PATCH", "/project", { trackingEnabled: true });
    expect(plunk.body.data).toMatchObject({ trackingMode: "ENABLED", trackingEnabled: true });
    expect(await sentHtml(s)).toMatch(pixel);
    const contradiction = await s.request("PATCH", "/project", { trackingEnabled: true, trackingMode: "DISABLED" });
    expect(contradiction.status).toBe(422);
  });

  it("MARKETING_ONLY: transactional mail untracked, a MARKETING template's mail tracked", async () => {
    const s = await sendingSetup();
    await s.request("PATCH", "/project", { trackingMode: "MARKETING_ONLY" });
    const transactional = await sentHtml(s);
    expect(transactional).not.toMatch(pixel);
    expect(untouched(transactional)).toBe(true);

    // The transactional send created the contact (unsubscribed); marketing mail needs it subscribed.
    expect((await s.request("POST", "/contacts", { email: "ada@example.com", subscribed: true })).status).toBeLessThan(300);
    const template = await s.request<{ id: string }>("POST", "/templates", { name: "News", subject: "News", body: BODY, type: "MARKETING", from: s.from });
    expect(template.status, JSON.stringify(template.body)).toBe(201);
    const marketing = await sentHtml(s, { template: template.body.id, subject: undefined, body: undefined });
    expect(marketing).toMatch(pixel);
    expect(marketing).toContain("/t/c/");
  });

  it("per sending domain: opens off drops the pixel, clicks off leaves links as written", async () => {
    const s = await sendingSetup();
    const domain = await domainOf(s);
    expect(domain).toMatchObject({ openTracking: true, clickTracking: true, trackingHostname: null, trackingStatus: null });

    const noOpens = await s.request<DomainBody>("PATCH", `/domains/${domain.id}`, { openTracking: false });
    expect(noOpens.status, JSON.stringify(noOpens.body)).toBe(200);
    expect(noOpens.body).toMatchObject({ openTracking: false, clickTracking: true });
    const a = await sentHtml(s);
    expect(a).not.toMatch(pixel);
    expect(a).toContain("/t/c/");

    await s.request("PATCH", `/domains/${domain.id}`, { openTracking: true, clickTracking: false });
    const b = await sentHtml(s);
    expect(b).toMatch(pixel);
    expect(untouched(b)).toBe(true);
  });

  it("per send: track {opens: false, clicks: false} over a tracking project; track {clicks: true} over a domain with clicks off", async () => {
    const s = await sendingSetup();
    const off = await sentHtml(s, { track: { opens: false, clicks: false } });
    expect(off).not.toMatch(pixel);
    expect(untouched(off)).toBe(true);
    const noClicks = await sentHtml(s, { track: { clicks: false } });
    expect(noClicks).toMatch(pixel);
    expect(untouched(noClicks)).toBe(true);

    const domain = await domainOf(s);
    await s.request("PATCH", `/domains/${domain.id}`, { clickTracking: false });
    const on = await sentHtml(s, { track: { clicks: true } });
    expect(on).toContain("/t/c/");
    const bad = await s.send({ to: "ada@example.com", from: s.from, subject: "x", body: "x", track: { opens: "no" } });
    expect(bad.status).toBe(422);
  });

  it("a custom tracking hostname: links and pixel on it once its CNAME verifies, not before; the Worker answers its clicks", async () => {
    const s = await sendingSetup();
    const domain = await domainOf(s);
    const host = `track.${s.domain}`;
    expect((await s.request("PATCH", `/domains/${domain.id}`, { trackingHostname: "track.elsewhere.test" })).status).toBe(422);

    const pending = await s.request<DomainBody>("PATCH", `/domains/${domain.id}`, { trackingHostname: host });
    expect(pending.status, JSON.stringify(pending.body)).toBe(200);
    expect(pending.body).toMatchObject({ trackingHostname: host, trackingStatus: "PENDING", trackingCname: "edge-mail.test" });
    const before = await sentHtml(s);
    expect(before).not.toContain(host);
    expect(before).toMatch(/href="http:\/\/edge-mail\.test\/t\/c\//);

    s.dns.cname(host, "edge-mail.test");
    const verified = await s.request<DomainBody>("POST", `/domains/${domain.id}/verify`);
    expect(verified.body).toMatchObject({ trackingHostname: host, trackingStatus: "VERIFIED" });
    const after = await sentHtml(s, { body: `${BODY}<p><a href="{{unsubscribeUrl}}">unsubscribe</a></p>` });
    const click = new RegExp(`href="(https://${host.replace(/\./g, "\\.")}/t/c/[^"]+)"`).exec(after);
    expect(click, after).not.toBeNull();
    expect(after).toMatch(new RegExp(`<img src="https://${host.replace(/\./g, "\\.")}/t/o/`));
    expect(after).not.toContain("edge-mail.test/t/");

    // The Worker routes by path: the click on the tracking host redirects to the link.
    const url = new URL(click![1].replace(/&amp;/g, "&"));
    const res = await s.request("GET", `${url.pathname}${url.search}`);
    expect(res.status).toBe(302);
    expect(res.headers.get("location")).toBe("https://example.com/x?a=1&b=2");

    // Without the hostname: back to the service host.
    const removed = await s.request<DomainBody>("PATCH", `/domains/${domain.id}`, { trackingHostname: null });
    expect(removed.body).toMatchObject({ trackingHostname: null, trackingStatus: null });
    expect(await sentHtml(s)).not.toContain(host);
  });
});
