/** A marketing body without `{{unsubscribeUrl}}` gets the footer with the link; transactional mail does not; a body with it keeps its own. */
import { afterEach, describe, expect, it, vi } from "vitest";
import { sendingSetup } from "../support/sending";
import { campaignSetup } from "../support/campaigns";
import { expectError } from "../support/http";

afterEach(() => vi.restoreAllMocks());

describe("the unsubscribe link of marketing mail", () => {
  it("a MARKETING template without {{unsubscribeUrl}} gets a footer with the link; with it, only its own; transactional mail none", async () => {
    const s = await sendingSetup();
    await s.request("POST", "/contacts", { email: "fan@example.com", subscribed: true });
    const template = async (body: string) =>
      (await s.request<{ id: string }>("POST", "/templates", { name: "News", subject: "News", body, type: "MARKETING", from: s.from })).body.id;
    const deliveredHtml = async (payload: object) => {
      const before = s.ses.calls.length;
      const res = await s.send({ to: "fan@example.com", ...payload });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      await s.deliver();
      return s.ses.calls[before].mime.parts[1].text;
    };

    const footer = await deliveredHtml({ template: await template("<html><body><p>News</p></body></html>") });
    expect(footer.match(/http:\/\/edge-mail\.test\/unsubscribe\//g)).toHaveLength(1);
    expect(footer).toMatch(/>Unsubscribe<\/a><\/p>(<img[^>]*>)?<\/body>/);

    const own = await deliveredHtml({ template: await template('<p>News <a href="{{unsubscribeUrl}}">leave</a></p>') });
    expect(own.match(/\/unsubscribe\//g)).toHaveLength(1);
    expect(own).toContain(">leave</a>");

    const transactional = await deliveredHtml({ from: s.from, subject: "Receipt", body: "<p>Thanks</p>" });
    expect(transactional).not.toContain("/unsubscribe/");
  });
});

describe("the project's own unsubscribe footer (PATCH /project unsubscribeFooter)", () => {
  const FOOTER = '<p class="legal">Acme Inc. · <a href="{{unsubscribeUrl}}">Stop these emails</a> · <a href="{{preferencesUrl}}">Choose</a> · $5 off</p>';

  it("replaces the built-in one on every marketing path (a MARKETING template, a broadcast send, a campaign, its test send); null brings the built-in one back", async () => {
    const s = await campaignSetup();
    const set = await s.request<{ data: { unsubscribeFooter: string | null } }>("PATCH", "/project", { unsubscribeFooter: FOOTER });
    expect(set.status, JSON.stringify(set.body)).toBe(200);
    expect(set.body.data.unsubscribeFooter).toBe(FOOTER);
    expect((await s.request<{ data: { unsubscribeFooter: string } }>("GET", "/project")).body.data.unsubscribeFooter).toBe(FOOTER);
    await s.addContacts([{ email: "fan@example.com" }]);
    const template = (await s.request<{ id: string }>("POST", "/templates", { name: "N", subject: "N", body: "<p>News</p>", type: "MARKETING", from: s.from }))
      .body.id;

    expect((await s.send({ to: "fan@example.com", template })).status).toBe(200);
    expect((await s.send({ to: "fan@example.com", from: s.from, subject: "B", body: "<p>Broadcast</p>", stream: "broadcast" })).status).toBe(200);
    const campaign = await s.createCampaign({ body: "<html><body><p>Spring</p></body></html>" });
    expect((await s.request("POST", `/campaigns/${campaign.id}/test`, { email: "me@example.com" })).status).toBe(200);
    expect((await s.request("POST", `/campaigns/${campaign.id}/send`)).status).toBe(200);
    await s.pump();
    const bodies = s.ses.calls.map((c) => c.mime.parts.find((p) => p.contentType.startsWith("text/html"))!.text);
    expect(bodies).toHaveLength(4);
    for (const html of bodies) {
      expect(html).toMatch(
        /<p class="legal">Acme Inc\. · <a href="http:\/\/edge-mail\.test\/unsubscribe\/[^"]+">Stop these emails<\/a> · <a href="http:\/\/edge-mail\.test\/preferences\/[^"]+">Choose<\/a> · \$5 off<\/p>/,
      );
      expect(html).not.toContain(">Unsubscribe</a>");
    }
    // Before </body> when the body has one.
    expect(bodies.filter((html) => /\$5 off<\/p>(<img[^>]*>)?<\/body>/.test(html))).toHaveLength(2);

    expect((await s.request("PATCH", "/project", { unsubscribeFooter: null })).status).toBe(200);
    expect((await s.send({ to: "fan@example.com", template })).status).toBe(200);
    await s.pump();
    expect(s.ses.calls.at(-1)!.mime.parts.find((p) => p.contentType.startsWith("text/html"))!.text).toContain(">Unsubscribe</a>");
  });

  it("must use {{unsubscribeUrl}}, parse as a template and stay within 2,000 characters (422 naming unsubscribeFooter); nothing changes", async () => {
    const s = await campaignSetup();
    for (const footer of ["<p>No link</p>", '<p><a href="{{unsubscribeUrl}}">x</a>{% if %}</p>', `<p>{{unsubscribeUrl}}${"x".repeat(2000)}</p>`, ""]) {
      const res = await s.request("PATCH", "/project", { unsubscribeFooter: footer });
      expect(expectError(res, 422).errors?.map((e) => e.field)).toEqual(["unsubscribeFooter"]);
    }
    expect((await s.request<{ data: { unsubscribeFooter: string | null } }>("GET", "/project")).body.data.unsubscribeFooter).toBeNull();
  });
});
