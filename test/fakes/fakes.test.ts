/**
 * The fakes at the HTTP boundary are only as good as what they check. These
 * tests hold them to published facts (AWS's SigV4 test suite), exercise the
 * routes and resolver behaviours the Worker relies on (SES BYODKIM identities,
 * DNS CNAME chains), and show that what a fake finds wrong is reported to the
 * test instead of becoming a retryable provider error.
 */
import { AwsV4Signer } from "aws4fetch";
import { afterEach, describe, expect, it, vi } from "vitest";
import { base64ToBytes } from "../../src/lib/base64";
import { resolveDns } from "../../src/outside/dns";
import { DOH_URL, fakeDns } from "./dns";
import { fakeSes, SES_CREDENTIALS, SES_ENDPOINT } from "./ses";
import { authorization, verifySigV4 } from "./sigv4";
import { takeViolations } from "./violations";
import { sendingSetup } from "../support/sending";
import type { Domain } from "../support/api";

afterEach(() => vi.restoreAllMocks());

/**
 * AWS's SigV4 test suite (the credentials, scope and time every case uses), from
 * https://docs.aws.amazon.com/general/latest/gr/signature-v4-test-suite.html as
 * shipped in awslabs/aws-c-auth tests/aws-signing-test-suite/v4/.
 */
const SUITE = {
  accessKeyId: "AKIDEXAMPLE",
  secretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
  region: "us-east-1",
  service: "service",
  amzDate: "20150830T123600Z",
};
const SUITE_TIME = Date.UTC(2015, 7, 30, 12, 36, 0);
const scope = "AKIDEXAMPLE/20150830/us-east-1/service/aws4_request";
/** get-vanilla: `GET / HTTP/1.1`, Host example.amazonaws.com, X-Amz-Date 20150830T123600Z. */
const GET_VANILLA = `AWS4-HMAC-SHA256 Credential=${scope}, SignedHeaders=host;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31`;
/** post-vanilla: the same as a POST with no body. */
const POST_VANILLA = `AWS4-HMAC-SHA256 Credential=${scope}, SignedHeaders=host;x-amz-date, Signature=5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b`;
/** get-vanilla-query-order-key-case: `GET /?Param2=value2&Param1=value1`. */
const GET_QUERY_ORDER = `AWS4-HMAC-SHA256 Credential=${scope}, SignedHeaders=host;x-amz-date, Signature=b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500`;

describe("SigV4: known answers from AWS's published test suite", () => {
  const input = (method: string, url: string) => ({
    ...SUITE,
    method,
    url,
    headers: { host: "example.amazonaws.com", "x-amz-date": SUITE.amzDate },
    signedHeaders: ["host", "x-amz-date"],
    body: "",
  });

  it("the fakes' own signer gives AWS's signatures for get-vanilla, post-vanilla and get-vanilla-query-order-key-case", async () => {
    expect(await authorization(input("GET", "https://example.amazonaws.com/"))).toBe(GET_VANILLA);
    expect(await authorization(input("POST", "https://example.amazonaws.com/"))).toBe(POST_VANILLA);
    expect(await authorization(input("GET", "https://example.amazonaws.com/?Param2=value2&Param1=value1"))).toBe(GET_QUERY_ORDER);
  });

  it("aws4fetch, the Worker's signer, gives AWS's get-vanilla and post-vanilla Authorization for the same input", async () => {
    for (const [method, expected] of [
      ["GET", GET_VANILLA],
      ["POST", POST_VANILLA],
    ] as const) {
      const signer = new AwsV4Signer({
        method,
        url: "https://example.amazonaws.com/",
        accessKeyId: SUITE.accessKeyId,
        secretAccessKey: SUITE.secretAccessKey,
        region: SUITE.region,
        service: SUITE.service,
        datetime: SUITE.amzDate,
      });
      const signed = await signer.sign();
      expect(signed.headers.get("authorization")).toBe(expected);
      expect(signed.headers.get("x-amz-date")).toBe(SUITE.amzDate);
      // What the fakes check on every request accepts exactly this, at the suite's moment.
      const verdict = await verifySigV4(
        { method, url: signed.url.toString(), headers: signed.headers, body: "" },
        { accessKeyId: SUITE.accessKeyId, secretAccessKey: SUITE.secretAccessKey, region: SUITE.region, service: SUITE.service },
        SUITE_TIME,
      );
      expect(verdict).toBeNull();
    }
  });

  it("the check refuses a clock more than 5 minutes off, unsigned x-amz-* headers, a changed body, another key and another scope", async () => {
    const credentials = { accessKeyId: SUITE.accessKeyId, secretAccessKey: SUITE.secretAccessKey, region: SUITE.region, service: SUITE.service };
    const signed = async (init: { body?: string; headers?: Record<string, string>; datetime?: string; secret?: string; region?: string }) => {
      const r = await new AwsV4Signer({
        method: "POST",
        url: "https://example.amazonaws.com/",
        headers: init.headers,
        body: init.body ?? "{}",
        accessKeyId: SUITE.accessKeyId,
        secretAccessKey: init.secret ?? SUITE.secretAccessKey,
        region: init.region ?? SUITE.region,
        service: SUITE.service,
        datetime: init.datetime ?? SUITE.amzDate,
      }).sign();
      return { method: "POST", url: r.url.toString(), headers: r.headers, body: init.body ?? "{}" };
    };
    expect(await verifySigV4(await signed({}), credentials, SUITE_TIME)).toBeNull();
    expect(await verifySigV4(await signed({}), credentials, SUITE_TIME + 4 * 60_000)).toBeNull();
    expect(await verifySigV4(await signed({}), credentials, SUITE_TIME + 6 * 60_000)).toMatch(/more than 5 minutes/);
    expect(await verifySigV4(await signed({}), credentials, SUITE_TIME - 6 * 60_000)).toMatch(/more than 5 minutes/);
    const tampered = await signed({});
    expect(await verifySigV4({ ...tampered, body: '{"x":1}' }, credentials, SUITE_TIME)).toMatch(/signature/);
    const extra = await signed({});
    extra.headers.set("x-amz-target", "added-after-signing");
    expect(await verifySigV4(extra, credentials, SUITE_TIME)).toMatch(/leaves out x-amz-target/);
    expect(await verifySigV4(await signed({ secret: "other" }), credentials, SUITE_TIME)).toMatch(/signature/);
    expect(await verifySigV4(await signed({ region: "eu-west-1" }), credentials, SUITE_TIME)).toMatch(/scope/);
  });
});

describe("the fake SES", () => {
  /** A request as the Worker's SES client makes it, signed now with the fake's credentials. */
  async function sesRequest(method: string, path: string, body: unknown, options: { datetime?: string } = {}): Promise<Request> {
    const signed = await new AwsV4Signer({
      method,
      url: `${SES_ENDPOINT}${path}`,
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
      accessKeyId: SES_CREDENTIALS.SES_ACCESS_KEY_ID,
      secretAccessKey: SES_CREDENTIALS.SES_SECRET_ACCESS_KEY,
      region: SES_CREDENTIALS.SES_REGION,
      service: "ses",
      datetime: options.datetime,
    }).sign();
    return new Request(signed.url, { method: signed.method, headers: signed.headers, body: JSON.stringify(body) });
  }
  const raw = (from: string, to: string) => btoa(`From: ${from}\r\nTo: ${to}\r\nSubject: x\r\nContent-Type: text/plain\r\n\r\nhello\r\n`);

  it("reports what it refuses to the test: a skewed clock, From or Destination not matching the MIME, an unknown route, an unreadable message", async () => {
    const ses = fakeSes();
    const send = (payload: unknown, options?: { datetime?: string }) => sesRequest("POST", "/v2/email/outbound-emails", payload, options).then(ses.handle);
    const ok = await send({
      FromEmailAddress: "a@x.test",
      Destination: { ToAddresses: ["b@y.test"] },
      Content: { Raw: { Data: raw("A <a@x.test>", "b@y.test") } },
    });
    expect(ok.status).toBe(200);
    expect(takeViolations()).toEqual([]);

    const old = new Date(Date.now() - 6 * 60_000).toISOString().replace(/[:-]|\.\d{3}/g, "");
    expect((await send({}, { datetime: old })).status).toBe(403);
    expect(takeViolations()).toEqual([expect.stringMatching(/more than 5 minutes/)]);

    expect(
      (await send({ FromEmailAddress: "other@x.test", Destination: { ToAddresses: ["b@y.test"] }, Content: { Raw: { Data: raw("a@x.test", "b@y.test") } } }))
        .status,
    ).toBe(400);
    expect(takeViolations()).toEqual([expect.stringMatching(/FromEmailAddress other@x.test is not the message's From/)]);

    expect(
      (await send({ FromEmailAddress: "a@x.test", Destination: { ToAddresses: ["c@y.test"] }, Content: { Raw: { Data: raw("a@x.test", "b@y.test") } } }))
        .status,
    ).toBe(400);
    expect(takeViolations()).toEqual([expect.stringMatching(/Destination .* is not the message's To/)]);

    expect((await sesRequest("PATCH", "/v2/email/identities/x.test", {}).then(ses.handle)).status).toBe(404);
    expect(takeViolations()).toEqual([expect.stringMatching(/No route PATCH/)]);

    // An assertion failing inside the fake (no header/body separator) is a finding, not a thrown error the Worker retries.
    expect((await send({ FromEmailAddress: "a@x.test", Destination: { ToAddresses: ["b@y.test"] }, Content: { Raw: { Data: btoa("garbage") } } })).status).toBe(
      400,
    );
    expect(takeViolations()).toEqual([expect.stringMatching(/could not read the request/)]);
    expect(ses.calls).toHaveLength(1);
  });

  it("a Worker whose SES secret is wrong: the fake's finding reaches the test (and the email is not silently retried forever)", async () => {
    const s = await sendingSetup({ SES_SECRET_ACCESS_KEY: "not-the-secret" });
    const res = await s.send({ to: "ada@example.com", from: s.from, subject: "s", body: "b" });
    await s.deliver();
    expect(takeViolations()).toEqual([expect.stringMatching(/signature we calculated does not match/)]);
    expect((await s.get(`/emails/${res.body.data.emails[0].email}`)).body).toMatchObject({ status: "FAILED", error: expect.stringContaining("SES 403") });
  });

  it("BYODKIM: adding a domain with EMAIL_PROVIDER=ses registers its selector and the private key of its DKIM record; deleting it removes the identity", async () => {
    const s = await sendingSetup();
    const identityCalls = () => s.ses.requests.filter((r) => r.path.startsWith("/v2/email/identities")).map((r) => [r.method, r.path, r.status]);
    const name = `byodkim-${crypto.randomUUID().slice(0, 8)}.test`;
    const created = await s.post<Domain>("/domains", { domain: name });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(identityCalls()).toEqual([["POST", "/v2/email/identities", 200]]);
    const identity = s.ses.identities.get(name)!;
    expect(identity.via).toBe("create");
    const dkim = created.body.records.find((r) => r.purpose === "DKIM");
    expect(dkim!.name).toBe(`${identity.selector}._domainkey.${name}`);
    await expectKeyPair(identity.privateKey, dkim!.value);

    const deleted = await s.request("DELETE", `/domains/${created.body.id}`);
    expect(deleted.status).toBe(204);
    expect(identityCalls().at(-1)).toEqual(["DELETE", `/v2/email/identities/${name}`, 200]);
    expect(s.ses.identities.has(name)).toBe(false);

    // An identity someone set up in the shared SES account is never touched: 409, its key unchanged.
    const theirs = `byodkim-theirs-${crypto.randomUUID().slice(0, 8)}.test`;
    s.ses.identities.set(theirs, { selector: "theirs", privateKey: "their-key", via: "elsewhere" });
    const refused = await s.post("/domains", { domain: theirs });
    expect(refused.status, JSON.stringify(refused.body)).toBe(409);
    expect(identityCalls().at(-1)).toEqual(["POST", "/v2/email/identities", 409]);
    expect(s.ses.identities.get(theirs)).toEqual({ selector: "theirs", privateKey: "their-key", via: "elsewhere" });
  });
});

/** The private key SES got signs what the DKIM record's public key (p=) verifies. */
async function expectKeyPair(privateKeyPkcs8Base64: string, dkimRecord: string) {
  const algorithm = { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" };
  const privateKey = await crypto.subtle.importKey("pkcs8", base64ToBytes(privateKeyPkcs8Base64), algorithm, false, ["sign"]);
  const p = /(?:^|;)\s*p=([^;]+)/.exec(dkimRecord)![1].replace(/\s+/g, "");
  const publicKey = await crypto.subtle.importKey("spki", base64ToBytes(p), algorithm, false, ["verify"]);
  const data = new TextEncoder().encode("dkim key pair check");
  const signature = await crypto.subtle.sign(algorithm, privateKey, data);
  expect(await crypto.subtle.verify(algorithm, publicKey, signature, data)).toBe(true);
}

describe("the fake DNS-over-HTTPS resolver: CNAME chains", () => {
  it("answers a TXT query through a CNAME chain as resolvers do, and the Worker keeps only the TXT answers", async () => {
    const dns = fakeDns();
    dns.cname("alias.chain.test", "hop.chain.test").cname("hop.chain.test", "end.chain.test").set("end.chain.test", "TXT", ["v=spf1 -all", "other"]);
    const raw = (await (await fetch(`${DOH_URL}?name=alias.chain.test&type=TXT`, { headers: { accept: "application/dns-json" } })).json()) as {
      Answer: { type: number }[];
    };
    expect(raw.Answer.map((a) => a.type)).toEqual([5, 5, 16, 16]);
    const result = await resolveDns({ url: DOH_URL, timeoutMs: 1000 }, "alias.chain.test", "TXT");
    expect(result.outcome).toBe("ok");
    expect(result.answers.map((a) => [a.type, a.data])).toEqual([
      [16, '"v=spf1 -all"'],
      [16, '"other"'],
    ]);
    // A chain that ends nowhere is NXDOMAIN; an MX query through the chain gets only the chain: no MX.
    dns.cname("dangling.chain.test", "nowhere.chain.test");
    expect((await resolveDns({ url: DOH_URL, timeoutMs: 1000 }, "dangling.chain.test", "TXT")).outcome).toBe("nxdomain");
    expect(await resolveDns({ url: DOH_URL, timeoutMs: 1000 }, "alias.chain.test", "MX")).toEqual({ outcome: "ok", answers: [] });
  });

  it("a domain whose DKIM and return-path records sit behind CNAME chains is VERIFIED through the API", async () => {
    const s = await sendingSetup();
    const name = `cname-${crypto.randomUUID().slice(0, 8)}.test`;
    const created = await s.project.api.post<Domain>("/domains", { domain: name });
    expect(created.status).toBe(201);
    const records = created.body.records as { purpose: string; type: string; name: string; value: string; priority?: number }[];
    // DKIM and SPF at the end of two-hop chains, as providers that host records for you publish them.
    for (const [i, r] of records.filter((r) => r.type === "TXT" && r.purpose !== "DMARC").entries()) {
      s.dns.cname(r.name, `hop${i}.${name}.provider.test`).cname(`hop${i}.${name}.provider.test`, `end${i}.${name}.provider.test`);
      s.dns.set(`end${i}.${name}.provider.test`, "TXT", [r.value]);
    }
    s.dns.publish(records.filter((r) => r.type === "MX"));
    const verified = await s.project.api.post<Domain>(`/domains/${created.body.id}/verify`);
    expect(verified.body.status, JSON.stringify(verified.body.records)).toBe("VERIFIED");
  });
});
