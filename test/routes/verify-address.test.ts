import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { REASONS } from "../../src/services/email-verification";
import { fakeDns } from "../fakes/dns";
import { expectError, newProject, type TestProject } from "../support/http";
import type { OpenApiDoc, VerifyAddressResponse } from "../support/api";

let dns: ReturnType<typeof fakeDns>;
let p: TestProject;
beforeEach(async () => {
  dns = fakeDns();
  // A little world of domains, fresh per test (the verify cache lives for minutes).
  dns
    .set("gmail.com", "MX", ["5 gmail-smtp-in.l.google.com.", "10 alt1.gmail-smtp-in.l.google.com."])
    .set("mailer.test", "MX", ["10 mx.mailer.test."])
    .set("a-only.test", "A", ["192.0.2.10"])
    .set("aaaa-only.test", "AAAA", ["2001:db8::1"])
    .exists("nomail-corp.com")
    .set("nullmx-corp.com", "MX", ["0 ."])
    .set("xn--bcher-kva.de", "MX", ["10 mx.xn--bcher-kva.de."])
    .set("mailinator.com", "MX", ["10 mail.mailinator.com."])
    .set("inbox.mailinator.com", "MX", ["10 mail.mailinator.com."])
    .set("privaterelay.appleid.com", "MX", ["10 mx01.mail.icloud.com."])
    .set("mozmail.com", "MX", ["10 mx.relay.firefox.com."])
    .set("duck.com", "MX", ["10 inbound-smtp.duck.com."])
    .set("simplelogin.com", "MX", ["10 mx1.simplelogin.co."])
    .set("anonaddy.me", "MX", ["10 mail.anonaddy.me."])
    .set("ada.anonaddy.com", "MX", ["10 mail.anonaddy.me."])
    .set("gmial.com", "MX", ["10 mx.gmial.com."])
    .servfail("broken-corp.com")
    .slow("slow-corp.com");
  p = await newProject();
});
afterEach(() => {
  vi.restoreAllMocks();
});

const verify = (email: unknown) => p.api.post<VerifyAddressResponse>("/v1/verify", { email });

const clean = {
  valid: true,
  isDisposable: false,
  isAlias: false,
  isTypo: false,
  isPlusAddressed: false,
  domainExists: true,
  hasMxRecords: true,
  reasons: [],
};
const invalid = {
  valid: false,
  isDisposable: false,
  isAlias: false,
  isTypo: false,
  isPlusAddressed: false,
  domainExists: false,
  hasMxRecords: false,
};

describe("POST /v1/verify", () => {
  it("answers the spec's envelope for a deliverable address", async () => {
    const res = await verify("ada@mailer.test");
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, data: { email: "ada@mailer.test", ...clean } });
  });

  it.each<[string, string, Record<string, unknown>, string[]]>([
    ["trimmed input", "  ada@mailer.test  ", { ...clean, email: "ada@mailer.test" }, []],
    ["an upper-case domain", "Ada@MAILER.test", { ...clean, email: "Ada@MAILER.test" }, []],
    ["plus addressing", "ada+news@mailer.test", { ...clean, isPlusAddressed: true }, [REASONS.plus]],
    ["a leading + is not a tag", "+ada@mailer.test", { ...clean }, []],
    ["a disposable domain", "x@mailinator.com", { ...clean, isDisposable: true }, [REASONS.disposable]],
    ["a subdomain of a disposable domain", "x@inbox.mailinator.com", { ...clean, isDisposable: true }, [REASONS.disposable]],
    ["Apple Hide My Email", "a1b2@privaterelay.appleid.com", { ...clean, isAlias: true }, [REASONS.alias]],
    ["Firefox Relay", "abc@mozmail.com", { ...clean, isAlias: true }, [REASONS.alias]],
    ["DuckDuckGo", "abc@duck.com", { ...clean, isAlias: true }, [REASONS.alias]],
    ["SimpleLogin", "abc@simplelogin.com", { ...clean, isAlias: true }, [REASONS.alias]],
    ["addy.io", "abc@anonaddy.me", { ...clean, isAlias: true }, [REASONS.alias]],
    ["an addy.io username subdomain", "abc@ada.anonaddy.com", { ...clean, isAlias: true }, [REASONS.alias]],
    [
      "a typo of a popular domain",
      "Ada@gmial.com",
      // gmial.com is also on the disposable list (a typo-squatting domain).
      { ...clean, isDisposable: true, isTypo: true, suggestedEmail: "Ada@gmail.com" },
      [REASONS.disposable, `${REASONS.typo}: did you mean Ada@gmail.com?`],
    ],
    [
      "a typo TLD on a domain that does not exist",
      "ada@examplecorp.con",
      { ...invalid, isTypo: true, suggestedEmail: "ada@examplecorp.co" },
      [`${REASONS.typo}: did you mean ada@examplecorp.co?`, REASONS.nxdomain],
    ],
    ["an IDN domain (converted to punycode for DNS)", "ada@Bücher.de", { ...clean }, []],
    ["no MX but an A record (RFC 5321 fallback)", "ada@a-only.test", { ...clean, hasMxRecords: false }, [REASONS.implicitMx]],
    ["no MX but an AAAA record", "ada@aaaa-only.test", { ...clean, hasMxRecords: false }, [REASONS.implicitMx]],
    ["neither MX nor A/AAAA", "ada@nomail-corp.com", { ...clean, valid: false, hasMxRecords: false }, [REASONS.noMailHost]],
    ["a null MX (RFC 7505)", "ada@nullmx-corp.com", { ...clean, valid: false, hasMxRecords: false }, [REASONS.nullMx]],
    ["a domain that does not exist", "ada@nowhere-corp.com", { ...invalid }, [REASONS.nxdomain]],
    ["a typo TLD on a working domain is not second-guessed", "ada@mailer.test", { ...clean }, []],
    ["several flags at once", "ada+x@inbox.mailinator.com", { ...clean, isDisposable: true, isPlusAddressed: true }, [REASONS.disposable, REASONS.plus]],
  ])("%s", async (_what, email, expected, reasons) => {
    const res = await verify(email);
    expect(res.status).toBe(200);
    const { suggestedEmail, ...data } = res.body.data;
    const { suggestedEmail: wanted, ...rest } = expected;
    expect(data).toEqual({ email: email.trim(), ...rest, reasons });
    expect(suggestedEmail).toBe(wanted);
  });

  it.each<[string, string, string]>([
    ["no @", "ada.example.com", REASONS.noAt],
    ["inner whitespace", "ada lovelace@mailer.test", REASONS.whitespace],
    ["an empty local part", "@mailer.test", REASONS.emptyLocal],
    ["a quoted local part", '"ada lovelace"@mailer.test', REASONS.whitespace],
    ["a quoted local part without spaces", '"ada"@mailer.test', REASONS.quotedLocal],
    ["a local part over 64 characters", `${"a".repeat(65)}@mailer.test`, REASONS.localTooLong],
    ["a non-ASCII local part", "adä@mailer.test", REASONS.nonAsciiLocal],
    ["double dots", "ada..l@mailer.test", REASONS.dots],
    ["a leading dot", ".ada@mailer.test", REASONS.dots],
    ["a trailing dot", "ada.@mailer.test", REASONS.dots],
    ["two @", "ada@lovelace@mailer.test", REASONS.localChars],
    ["a forbidden character", "ada(x)@mailer.test", REASONS.localChars],
    ["an IP literal", "ada@[192.0.2.1]", REASONS.ipLiteral],
    ["a bare IP", "ada@192.0.2.1", REASONS.ipLiteral],
    ["no domain", "ada@", `${REASONS.badDomain}: domain is empty`],
    ["a bare TLD", "ada@com", `${REASONS.badDomain}: a bare top-level domain is not accepted; use a name like example.com`],
    ["double dots in the domain", "ada@mailer..test", `${REASONS.badDomain}: domain has an empty label (consecutive dots)`],
    ["a trailing dot in the domain", "ada@mailer.test.", `${REASONS.badDomain}: it ends with a dot`],
    ["a domain label over 63 characters", `ada@${"a".repeat(64)}.test`, `${REASONS.badDomain}: label "aaaaaaaaaaaaaaaaaaaa..." is longer than 63 characters`],
    ["an address over 254 characters", `${"a".repeat(64)}@${"b".repeat(63)}.${"c".repeat(63)}.${"d".repeat(58)}.test`, REASONS.addressTooLong],
  ])("invalid syntax: %s -> 200, valid false, no DNS lookup", async (_what, email, reason) => {
    const res = await verify(email);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ email: email.trim(), ...invalid, reasons: [reason] });
    expect(dns.requests).toEqual([]);
  });

  it("a failing resolver (SERVFAIL) gives a clear reason, valid false, 200", async () => {
    const res = await verify("ada@broken-corp.com");
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ ...invalid, reasons: [`${REASONS.dnsFailed} (resolver answered SERVFAIL); try again later`] });
  });

  it("a resolver that times out answers within the timeout with a clear reason, not a hang or a 500", async () => {
    const res = await verify("ada@slow-corp.com");
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ ...invalid, reasons: [`${REASONS.dnsFailed} (resolver timed out after 300 ms); try again later`] });
    // The answer came from the Worker's own timeout: the resolver never answered, the lookup was aborted by it.
    expect(dns.aborted).toEqual([{ name: "slow-corp.com", type: "MX", reason: "TimeoutError" }]);
    // Failures are not cached: the next check asks again.
    dns.heal("slow-corp.com").set("slow-corp.com", "MX", ["10 mx.slow-corp.com."]);
    expect((await verify("ada@slow-corp.com")).body.data.valid).toBe(true);
  });

  it("a resolver answering HTTP errors is reported, not a 500", async () => {
    vi.restoreAllMocks();
    vi.spyOn(globalThis, "fetch").mockImplementation(async () => new Response("oops", { status: 503 }));
    const res = await verify("ada@whatever-http.example");
    expect(res.status).toBe(200);
    expect(res.body.data.reasons).toEqual([`${REASONS.dnsFailed} (resolver answered HTTP 503); try again later`]);
  });

  it("caches per domain: a burst of checks costs one lookup per record type", async () => {
    dns.set("burst.test", "MX", ["10 mx.burst.test."]).set("burst-a.test", "A", ["192.0.2.1"]);
    for (const local of ["a", "b", "c+tag", "d", "e"]) {
      expect((await verify(`${local}@burst.test`)).body.data.valid).toBe(true);
      expect((await verify(`${local}@burst-a.test`)).body.data.valid).toBe(true);
    }
    expect(dns.count("burst.test", "MX")).toBe(1);
    expect(dns.count("burst.test", "A")).toBe(0);
    expect(dns.count("burst-a.test", "MX")).toBe(1);
    expect(dns.count("burst-a.test", "A")).toBe(1);
    // NXDOMAIN answers are cached too.
    await verify("a@gone-burst.example");
    await verify("b@gone-burst.example");
    expect(dns.count("gone-burst.example")).toBe(1);
  });

  it("validates the body: missing, empty, non-string or absurdly long email is 422", async () => {
    for (const body of [{}, { email: "" }, { email: "   " }, { email: 42 }, { email: null }, { email: ["a@b.co"] }, { email: "a".repeat(513) }]) {
      const error = expectError(await p.api.post("/v1/verify", body), 422, "VALIDATION_ERROR");
      expect(error.errors?.[0].field).toBe("email");
    }
    expectError(await p.api.post("/v1/verify", undefined, { "Content-Type": "application/json" }), 400);
  });

  it("needs a secret key", async () => {
    expectError(await p.publicApi.post("/v1/verify", { email: "ada@mailer.test" }), 403);
  });
});

describe("OpenAPI", () => {
  it("documents /domains and /v1/verify", async () => {
    const { call } = await import("../support/http");
    const doc = await call<OpenApiDoc>("GET", "/openapi.json");
    expect(doc.status).toBe(200);
    for (const path of ["/domains", "/domains/{id}", "/domains/{id}/verify", "/v1/verify"]) expect(doc.body.paths[path]).toBeDefined();
    expect(doc.body.paths["/v1/verify"].post.description).toContain("Any string in `email` gets 200");
  });
});
