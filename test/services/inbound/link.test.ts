/** The ids a reply's In-Reply-To / References can be stored as, per provider (src/services/providers/*). */
import { describe, expect, it } from "vitest";
import { providerIdCandidates } from "../../../src/services/inbound/consume";
import { messageIdsOf } from "../../../src/services/inbound/parse";

describe("matching header ids to provider message ids", () => {
  it("SES keeps its bare MessageId (the local part); Cloudflare Email Service the whole id without brackets", () => {
    expect(providerIdCandidates("<0100018f-aaaa-bbbb-cccc-000000000000-000000@email.amazonses.com>")).toEqual([
      "0100018f-aaaa-bbbb-cccc-000000000000-000000@email.amazonses.com",
      "0100018f-aaaa-bbbb-cccc-000000000000-000000",
    ]);
    expect(providerIdCandidates("<abc123@example.cloudflare.net>")).toContain("abc123@example.cloudflare.net");
  });

  it("References are read as bracketed ids; anything else in the header is ignored", () => {
    expect(messageIdsOf("<a@x>  <b@y>\r\n (comment) <c@z> junk")).toEqual(["<a@x>", "<b@y>", "<c@z>"]);
    expect(messageIdsOf("no ids here")).toEqual([]);
  });
});
