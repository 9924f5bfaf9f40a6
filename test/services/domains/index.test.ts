import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { getDb } from "../../../src/db/client";
import type { Env } from "../../../src/env";
import { ApiError } from "../../../src/lib/errors";
import { buildDevSeed } from "../../../src/services/dev-seed";
import { createDomain, findSendingDomain, senderDomain, verifiedDomainCache } from "../../../src/services/domains";
import { decryptPrivateKey } from "../../../src/services/domains/dkim";
import { base64ToBytes } from "../../../src/lib/base64";
import { registerDomainWithSes } from "../../../src/services/domains/ses";
import { applyCheck, backoffMs } from "../../../src/services/domains/dns-check";
import { createProject } from "../../../src/services/projects";
import { fakeDns } from "../../fakes/dns";

afterEach(() => {
  vi.restoreAllMocks();
});

const db = () => getDb(env.DB);
let seq = 0;
const uniqueDomain = () => `s${Date.now().toString(36)}${seq++}.example`;

async function rejection(promise: Promise<unknown>): Promise<ApiError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApiError);
  return err as ApiError;
}

describe("senderDomain", () => {
  it("passes only a VERIFIED domain of the same project, case-insensitively and for IDN", async () => {
    const dns = fakeDns();
    const a = await createProject(db(), "A");
    const b = await createProject(db(), "B");
    const name = uniqueDomain();
    const domain = await createDomain(db(), env, a.id, name);

    // PENDING: 403 DOMAIN_NOT_VERIFIED with a useful message.
    let err = await rejection(senderDomain(db(), a.id, `hello@${name}`));
    expect([err.status, err.code]).toEqual([403, "DOMAIN_NOT_VERIFIED"]);
    expect(err.message).toContain("not verified yet");

    dns.publish(domain.records);
    const { verifyDomainNow } = await import("../../../src/services/domains");
    expect((await verifyDomainNow(db(), env, a.id, domain.id)).status).toBe("VERIFIED");

    expect(await senderDomain(db(), a.id, `Hello@${name.toUpperCase()}`)).toBe(domain.name);
    // Another project, a subdomain, an unknown domain, garbage: all refused.
    for (const [project, address] of [
      [b.id, `hello@${name}`],
      [a.id, `hello@news.${name}`],
      [a.id, "hello@unknown.example"],
      [a.id, "not an address"],
    ]) {
      err = await rejection(senderDomain(db(), project, address));
      expect([err.status, err.code]).toEqual([403, "DOMAIN_NOT_VERIFIED"]);
    }

    // IDN: the unicode spelling of a punycode domain matches.
    const tag = `${Date.now().toString(36)}${seq++}`;
    const idn = await createDomain(db(), env, a.id, `bücher${tag}.example`);
    dns.publish(idn.records);
    await verifyDomainNow(db(), env, a.id, idn.id);
    expect(await senderDomain(db(), a.id, `ada@Bücher${tag}.example`)).toBe(idn.name);
  });
  it("judges a row the caller already read, and once it saw the domain VERIFIED answers from the cache", async () => {
    const dns = fakeDns();
    const a = await createProject(db(), "sender cache");
    const name = uniqueDomain();
    const domain = await createDomain(db(), env, a.id, name);
    // A row read in the caller's own batch is judged as it is: nothing is read again.
    expect(await senderDomain(db(), a.id, `hi@${name}`, { read: { domain: { ...domain, status: "VERIFIED" } } })).toBe(name);
    expect((await rejection(senderDomain(db(), a.id, `hi@${name}`, { read: { domain: undefined } }))).message).toContain("not a verified sending domain");

    const cache = verifiedDomainCache(() => 0);
    expect((await rejection(senderDomain(db(), a.id, `hi@${name}`, { cache }))).message).toContain("not verified yet");
    expect(cache.get(a.id, `hi@${name}`)).toBeUndefined(); // only VERIFIED answers are remembered
    dns.publish(domain.records);
    const { verifyDomainNow } = await import("../../../src/services/domains");
    await verifyDomainNow(db(), env, a.id, domain.id);
    expect(await senderDomain(db(), a.id, `hi@${name}`, { cache })).toBe(name);
    // Gone from D1, still answered by the cache within its TTL (the clock does not move here).
    await env.DB.prepare("DELETE FROM domains WHERE id = ?1").bind(domain.id).run();
    expect(await senderDomain(db(), a.id, `Hi@${name.toUpperCase()}`, { cache })).toBe(name);
    expect((await rejection(senderDomain(db(), a.id, `hi@${name}`))).code).toBe("DOMAIN_NOT_VERIFIED");
  });
});

describe("DKIM_ENCRYPTION_KEY", () => {
  it("missing or too short: domain creation fails with an error naming the secret, nothing saved", async () => {
    fakeDns();
    const project = await createProject(db(), "no key");
    for (const key of [undefined, "", "short"]) {
      const name = uniqueDomain();
      const err = await rejection(createDomain(db(), { ...env, DKIM_ENCRYPTION_KEY: key } as Env, project.id, name));
      expect(err.status).toBe(500);
      expect(err.message).toContain("DKIM_ENCRYPTION_KEY");
      expect(err.details.suggestion).toContain("wrangler secret put DKIM_ENCRYPTION_KEY");
      expect(await db().query.domains.findFirst({ where: (t, { eq }) => eq(t.name, name) })).toBeUndefined();
    }
  });
});

describe("SES BYODKIM", () => {
  const sesEnv = {
    SES_ENDPOINT: "https://ses.test",
    SES_REGION: "eu-west-1",
    SES_ACCESS_KEY_ID: "AKIDEXAMPLE",
    SES_SECRET_ACCESS_KEY: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
  };

  it("registers the key with CreateEmailIdentity, signed with SigV4", async () => {
    const calls: { method: string; path: string; auth: string | null; body: any }[] = [];
    vi.spyOn(globalThis, "fetch").mockImplementation(async (input: RequestInfo | URL, init?: RequestInit) => {
      const request = new Request(input as RequestInfo, init);
      calls.push({
        method: request.method,
        path: new URL(request.url).pathname,
        auth: request.headers.get("authorization"),
        body: await request.json(),
      });
      return Response.json({ IdentityType: "DOMAIN", VerifiedForSendingStatus: false });
    });
    await registerDomainWithSes(sesEnv, "example.org", "em202607", "UFJJVkFURQ==");
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({
      method: "POST",
      path: "/v2/email/identities",
      body: {
        EmailIdentity: "example.org",
        DkimSigningAttributes: { DomainSigningSelector: "em202607", DomainSigningPrivateKey: "UFJJVkFURQ==" },
      },
    });
    expect(calls[0].auth).toMatch(/^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/eu-west-1\/ses\/aws4_request, SignedHeaders=.*, Signature=[0-9a-f]{64}$/);
  });

  it("an identity that already exists in the SES account is refused, never given a new key", async () => {
    const paths: string[] = [];
    vi.spyOn(globalThis, "fetch").mockImplementation(async (input: RequestInfo | URL, init?: RequestInit) => {
      const request = new Request(input as RequestInfo, init);
      paths.push(`${request.method} ${new URL(request.url).pathname}`);
      return Response.json({ message: "exists" }, { status: 409, headers: { "x-amzn-ErrorType": "AlreadyExistsException" } });
    });
    const err = await registerDomainWithSes(sesEnv, "example.org", "em1", "S0VZ").then(
      () => null,
      (e: unknown) => e as { alreadyExists?: boolean },
    );
    expect(err?.alreadyExists).toBe(true);
    expect(paths).toEqual(["POST /v2/email/identities"]);
  });

  it("createDomain registers the decryptable key when EMAIL_PROVIDER=ses; an SES error saves nothing", async () => {
    let registered: any;
    let sesStatus = 200;
    const dns = fakeDns(async (request) => {
      registered = await request.json();
      return Response.json(sesStatus === 200 ? {} : { message: "Access denied" }, { status: sesStatus });
    });
    const project = await createProject(db(), "ses");
    const name = uniqueDomain();
    const sesProjectEnv = { ...env, ...sesEnv, EMAIL_PROVIDER: "ses" } as Env;
    const domain = await createDomain(db(), sesProjectEnv, project.id, name);
    expect(registered.EmailIdentity).toBe(name);
    expect(registered.DkimSigningAttributes.DomainSigningSelector).toBe(domain.dkimSelector);
    const stored = await decryptPrivateKey(env.DKIM_ENCRYPTION_KEY!, name, domain.dkimPrivateKeyEncrypted);
    expect(registered.DkimSigningAttributes.DomainSigningPrivateKey).toBe(stored);
    expect(dns.requests.length).toBe(5);

    sesStatus = 403;
    const other = uniqueDomain();
    const err = await rejection(createDomain(db(), sesProjectEnv, project.id, other));
    expect(err.message).toContain("Access denied");
    expect(await db().query.domains.findFirst({ where: (t, { eq }) => eq(t.name, other) })).toBeUndefined();
  });
});

describe("dev seed", () => {
  it("gives the local dev project a VERIFIED example.com with a real key under the local secret", async () => {
    const project = await createProject(db(), "Local dev");
    const seed = await buildDevSeed(db(), project.id, env.DKIM_ENCRYPTION_KEY!);
    expect(seed.info).toEqual({ domain: "example.com", from: "hello@example.com" });
    for (const query of seed.queries) await (query as unknown as Promise<unknown>);
    expect(await senderDomain(db(), project.id, "hello@example.com")).toBe("example.com");
    const [domain] = await findSendingDomain(db(), project.id, "hello@example.com")!;
    expect(domain.nextCheckAt).toBeNull(); // never re-checked against the real example.com
    const pkcs8 = await decryptPrivateKey(env.DKIM_ENCRYPTION_KEY!, "example.com", domain.dkimPrivateKeyEncrypted);
    const algorithm = { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" };
    const key = await crypto.subtle.importKey("pkcs8", base64ToBytes(pkcs8), algorithm, false, ["sign"]);
    const publicKey = await crypto.subtle.importKey("spki", base64ToBytes(domain.dkimPublicKey), algorithm, false, ["verify"]);
    const data = new TextEncoder().encode("hello");
    expect(await crypto.subtle.verify(algorithm, publicKey, await crypto.subtle.sign(algorithm, key, data), data)).toBe(true);

    // Seeding again for a new dev project moves the domain instead of failing on the unique name.
    const next = await createProject(db(), "Local dev 2");
    for (const query of (await buildDevSeed(db(), next.id, env.DKIM_ENCRYPTION_KEY!)).queries) {
      await (query as unknown as Promise<unknown>);
    }
    expect(await senderDomain(db(), next.id, "hello@example.com")).toBe("example.com");
    await expect(senderDomain(db(), project.id, "hello@example.com")).rejects.toThrow(/not a verified sending domain/);
  });
});

describe("back-off", () => {
  it("waits 1, 2, 5, 10, 30, then 60 minutes between unsuccessful checks", () => {
    expect([1, 2, 3, 4, 5, 6, 7, 50].map((n) => backoffMs(n) / 60_000)).toEqual([1, 2, 5, 10, 30, 60, 60, 60]);
  });

  it("a PENDING domain's next check never lands after its 72-hour deadline", () => {
    const created = new Date("2026-01-01T00:00:00Z");
    const domain = {
      status: "PENDING",
      createdAt: created,
      checkAttempts: 10,
      verifiedAt: null,
      records: [{ purpose: "DKIM", type: "TXT", name: "x", value: "y", required: true, status: "PENDING" }],
    } as any;
    const now = new Date(created.getTime() + 72 * 3600_000 - 10 * 60_000);
    const update = applyCheck(domain, [{ verdict: "missing", detail: "" }], now);
    expect(update.status).toBe("PENDING");
    expect(update.nextCheckAt!.getTime()).toBe(created.getTime() + 72 * 3600_000);
  });
});
