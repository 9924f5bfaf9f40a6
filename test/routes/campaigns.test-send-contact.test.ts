import { describe, expect, it } from "vitest";
import { expectError, newProject } from "../support/http";
import { campaignSetup } from "../support/campaigns";
import type { Success } from "../support/api";

/** POST /campaigns/{id}/test with `contactId`: the test goes to `email`, rendered with that contact's data. */
describe("campaign test send with a chosen contact", () => {
  it("renders with the chosen contact's data, not the recipient's; refuses another project's contact and an unknown id", async () => {
    const s = await campaignSetup();
    const [grace] = await s.addContacts([
      { email: "grace@example.com", data: { firstName: "Grace", plan: "team" } },
      { email: "reviewer@example.com", data: { firstName: "Reviewer", plan: "free" } },
    ]);
    const campaign = await s.createCampaign({
      subject: "News for {{firstName ?? you}}",
      body: '<p>Hi {{firstName ?? there}}, plan {{plan}}, to {{email}}</p><p><a href="https://example.com/p?plan={{plan}}">more</a></p>',
    });
    const test = await s.request<Success<{ email: string }>>("POST", `/campaigns/${campaign.id}/test`, { email: "reviewer@example.com", contactId: grace.id });
    expect(test.status, JSON.stringify(test.body)).toBe(200);
    await s.pump();
    expect(s.ses.calls).toHaveLength(1);
    const [sent] = s.ses.calls;
    expect(sent.to).toEqual(["reviewer@example.com"]);
    const { decodeWords } = await import("../fakes/ses");
    expect(decodeWords(sent.mime.headers.subject)).toBe("[TEST] News for Grace");
    const html = sent.mime.parts.find((p) => p.contentType.startsWith("text/html"))!.text;
    expect(html).toContain("Hi Grace, plan team, to reviewer@example.com");
    expect(html).toContain('href="https://example.com/p?plan=team"');
    expect(html).not.toContain("Reviewer");

    // Another project's contact, and an id that is no contact: 404 in the error envelope, nothing sent.
    const other = await newProject("other");
    const theirs = await other.api.post<{ id: string }>("/contacts", { email: "them@example.com", data: { firstName: "Them" } });
    expect(theirs.status, JSON.stringify(theirs.body)).toBeLessThan(300);
    const theirId = theirs.body.id;
    expectError(await s.request("POST", `/campaigns/${campaign.id}/test`, { email: "reviewer@example.com", contactId: theirId }), 404, "NOT_FOUND");
    expectError(await s.request("POST", `/campaigns/${campaign.id}/test`, { email: "reviewer@example.com", contactId: "no-such-contact" }), 404, "NOT_FOUND");
    expectError(await s.request("POST", `/campaigns/${campaign.id}/test`, { email: "reviewer@example.com", contactId: "" }), 422);
    await s.pump();
    expect(s.ses.calls).toHaveLength(1);

    // Without contactId the recipient's own contact data renders, as before.
    await s.request("POST", `/campaigns/${campaign.id}/test`, { email: "reviewer@example.com" });
    await s.pump();
    const own = s.ses.calls[1].mime.parts.find((p) => p.contentType.startsWith("text/html"))!.text;
    expect(own).toContain("Hi Reviewer, plan free");
  });
});
