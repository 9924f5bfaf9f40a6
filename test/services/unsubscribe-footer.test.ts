/** A marketing body without `{{unsubscribeUrl}}` gets the footer with the link; transactional mail does not; a body with it keeps its own. */
import { afterEach, describe, expect, it, vi } from "vitest";
import { sendingSetup } from "../support/sending";

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
