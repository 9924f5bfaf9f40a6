import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { getDb } from "../../src/db/client";
import worker from "../../src/index";
import { decryptPrivateKey } from "../../src/services/domains/dkim";
import { base64ToBytes } from "../../src/lib/base64";
import { fakeDns } from "../fakes/dns";
import { expectError, newProject, type TestProject } from "../support/http";
import type { z } from "@hono/zod-openapi";
import type { DomainListResponseSchema, DomainSchema } from "../../src/schemas/domains";
import type { Template } from "../support/api";

type DomainList = z.infer<typeof DomainListResponseSchema>;
type Domain = z.infer<typeof DomainSchema>;

const MIN = 60_000;
const HOUR = 60 * MIN;
let seq = 0;
/** A fresh domain per test: storage and the fake zone are per file. */
const uniqueDomain = (label = "d") => `${label}${Date.now().toString(36)}${seq++}.example`;

let dns: ReturnType<typeof fakeDns>;
beforeEach(() => {
  dns = fakeDns();
});
afterEach(() => {
  vi.restoreAllMocks();
});

type DomainBody = {
  id: string;
  domain: string;
  status: string;
  dkimSelector: string;
  records: {
    purpose: string;
    type: string;
    name: string;
    value: string;
    priority?: number;
    required: boolean;
    status: string;
    detail?: string;
    failingSince?: string;
  }[];
  createdAt: string;
  updatedAt: string;
  lastCheckedAt: string | null;
  verifiedAt: string | null;
  nextCheckAt: string | null;
};

const rec = (d: DomainBody, purpose: string) => d.records.find((r) => r.purpose === purpose)!;

async function addDomain(p: TestProject, name = uniqueDomain()) {
  const res = await p.api.post<DomainBody>("/domains", { domain: name });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}

/** One tick of the Worker's real scheduled handler, as the Cron Trigger runs it, at `time`. */
async function cronTick(time: number) {
  const controller = createScheduledController({ scheduledTime: new Date(time), cron: "* * * * *" });
  const ctx = createExecutionContext();
  await worker.scheduled(controller, env, ctx);
  await waitOnExecutionContext(ctx);
}

/**
 * Ticks at `time` until nothing is due: domains left PENDING by other tests of
 * this file are due too, and one tick checks at most 8 domains (5 lookups each).
 */
async function cronAt(time: number) {
  for (let i = 0; i < 20; i++) {
    const before = dns.requests.length;
    await cronTick(time);
    const lookups = dns.requests.length - before;
    expect(lookups).toBeLessThanOrEqual(8 * 5);
    if (lookups === 0) return;
  }
  throw new Error("cron never went idle");
}

describe("POST /domains", () => {
  it("creates a PENDING domain with the DKIM, SPF, return-path and DMARC records to publish, checked once", async () => {
    const p = await newProject();
    const name = uniqueDomain();
    const before = Date.now();
    const d = await addDomain(p, name);
    expect(d).toMatchObject({ domain: name, status: "PENDING", verifiedAt: null });
    expect(d.dkimSelector).toMatch(/^em\d{6}$/);
    expect(d.records.map((r) => [r.purpose, r.type, r.name, r.required, r.status])).toEqual([
      ["DKIM", "TXT", `${d.dkimSelector}._domainkey.${name}`, true, "PENDING"],
      ["SPF", "TXT", name, true, "PENDING"],
      ["RETURN_PATH_MX", "MX", `mail.${name}`, false, "PENDING"],
      ["RETURN_PATH_SPF", "TXT", `mail.${name}`, false, "PENDING"],
      ["DMARC", "TXT", `_dmarc.${name}`, false, "PENDING"],
    ]);
    expect(rec(d, "DKIM").value).toMatch(/^v=DKIM1; k=rsa; p=MIIB[A-Za-z0-9+/]+=*$/);
    expect(rec(d, "SPF").value).toBe("v=spf1 include:amazonses.com ~all");
    expect(rec(d, "RETURN_PATH_MX")).toMatchObject({ value: "feedback-smtp.us-east-1.amazonses.com", priority: 10 });
    expect(rec(d, "DMARC").value).toBe("v=DMARC1; p=none;");
    expect(rec(d, "SPF").detail).toContain("NXDOMAIN");
    // The first check ran on create: 5 lookups, and the next one is due in a minute.
    expect(dns.requests.length).toBe(5);
    expect(Date.parse(d.lastCheckedAt!)).toBeGreaterThanOrEqual(before - 1000);
    expect(Date.parse(d.nextCheckAt!) - Date.parse(d.lastCheckedAt!)).toBe(MIN);

    const got = await p.api.get<DomainBody>(`/domains/${d.id}`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(d);
  });

  it("is VERIFIED at once when the records are already published (a 2048-bit key split over TXT strings)", async () => {
    const p = await newProject();
    const first = await addDomain(p);
    // Same records for a second name are not known in advance, so publish and check now:
    dns.publish(first.records);
    const checked = await p.api.post<DomainBody>(`/domains/${first.id}/verify`);
    expect(checked.body.status).toBe("VERIFIED");
    expect(checked.body.records.every((r) => r.status === "VERIFIED")).toBe(true);
  });

  it("normalises the name: lower-case, IDN to punycode, trailing dot dropped", async () => {
    const p = await newProject();
    const tag = `${Date.now().toString(36)}${seq++}`;
    const idn = await p.api.post<DomainBody>("/domains", { domain: `  Bücher${tag}.DE. ` });
    expect(idn.status).toBe(201);
    expect(idn.body.domain).toBe(new URL(`http://bücher${tag}.de`).hostname);
    expect(idn.body.domain).toMatch(/^xn--/);
    const jp = await p.api.post<DomainBody>("/domains", { domain: `例え${tag}.テスト` });
    expect(jp.status).toBe(201);
    expect(jp.body.domain).toMatch(/^xn--.*\.xn--zckzah$/);
  });

  it.each([
    ["an IPv4 address", "192.0.2.1"],
    ["an IPv4 address in hex", "0x7f.1"],
    ["an IPv6 literal", "[::1]"],
    ["a bare TLD", "com"],
    ["whitespace", "exa mple.com"],
    ["consecutive dots", "a..example.com"],
    ["a leading hyphen", "-a.example.com"],
    ["a URL", "https://example.com/"],
    ["an email address", "ada@example.com"],
    ["an underscore", "a_b.example.com"],
    ["a 64-character label", `${"a".repeat(64)}.com`],
    ["a name over 253 characters", `${"abcdefghi.".repeat(26)}com`],
    ["a numeric TLD", "example.123"],
    ["an empty string", ""],
  ])("refuses %s with 422", async (_what, domain) => {
    const p = await newProject();
    const error = expectError(await p.api.post<Domain>("/domains", { domain }), 422, "VALIDATION_ERROR");
    expect(error.errors?.[0].field).toBe("domain");
  });

  it("refuses a missing or non-string domain with 422, and malformed JSON with 400", async () => {
    const p = await newProject();
    expectError(await p.api.post<Domain>("/domains", {}), 422, "VALIDATION_ERROR");
    expectError(await p.api.post<Domain>("/domains", { domain: 42 }), 422, "VALIDATION_ERROR");
    expectError(await p.api.post<Domain>("/domains", undefined, { "Content-Type": "application/json" }), 400);
  });

  it("needs a secret key", async () => {
    const p = await newProject();
    expectError(await p.publicApi.post("/domains", { domain: uniqueDomain() }), 403);
    expectError(await p.publicApi.get("/domains"), 403);
  });
});

describe("verification by DNS", () => {
  it("goes PENDING -> VERIFIED on check-now once DKIM and SPF appear; other records are reported separately", async () => {
    const p = await newProject();
    const d = await addDomain(p);
    const dkim = rec(d, "DKIM");
    // Only DKIM: still pending.
    dns.publish([dkim]);
    let res = await p.api.post<DomainBody>(`/domains/${d.id}/verify`);
    expect(res.status).toBe(200);
    expect(res.body.status).toBe("PENDING");
    expect(rec(res.body, "DKIM").status).toBe("VERIFIED");
    expect(rec(res.body, "SPF").status).toBe("PENDING");
    // An existing SPF record without our include is not enough.
    dns.set(d.domain, "TXT", ["v=spf1 include:_spf.google.com ~all", "google-site-verification=abc"]);
    res = await p.api.post<DomainBody>(`/domains/${d.id}/verify`);
    expect(res.body.status).toBe("PENDING");
    expect(rec(res.body, "SPF").detail).toContain("lacks include:amazonses.com");
    // Two SPF records are an error, even if one is right.
    dns.set(d.domain, "TXT", ["v=spf1 include:_spf.google.com ~all", "v=spf1 include:amazonses.com ~all"]);
    res = await p.api.post<DomainBody>(`/domains/${d.id}/verify`);
    expect(res.body.status).toBe("PENDING");
    expect(rec(res.body, "SPF").detail).toContain("2 SPF records");
    // The merged record verifies it.
    dns.set(d.domain, "TXT", ["v=spf1 include:_spf.google.com include:amazonses.com ~all"]);
    res = await p.api.post<DomainBody>(`/domains/${d.id}/verify`);
    expect(res.body.status).toBe("VERIFIED");
    expect(res.body.verifiedAt).not.toBeNull();
    expect(res.body.records.map((r) => [r.purpose, r.status])).toEqual([
      ["DKIM", "VERIFIED"],
      ["SPF", "VERIFIED"],
      ["RETURN_PATH_MX", "PENDING"],
      ["RETURN_PATH_SPF", "PENDING"],
      ["DMARC", "PENDING"],
    ]);
    // A verified domain is re-checked in 6 hours.
    expect(Date.parse(res.body.nextCheckAt!) - Date.parse(res.body.lastCheckedAt!)).toBe(6 * HOUR);
    // The recommended records verify too once published.
    dns.publish(res.body.records.filter((r) => !r.required));
    res = await p.api.post<DomainBody>(`/domains/${d.id}/verify`);
    expect(res.body.records.every((r) => r.status === "VERIFIED")).toBe(true);
  });

  it("stays PENDING with a wrong DKIM value (another key, or a truncated one)", async () => {
    const p = await newProject();
    const d = await addDomain(p);
    const other = await addDomain(p);
    dns.publish([rec(d, "SPF")]);
    dns.set(rec(d, "DKIM").name, "TXT", [rec(other, "DKIM").value]);
    let res = await p.api.post<DomainBody>(`/domains/${d.id}/verify`);
    expect(res.body.status).toBe("PENDING");
    expect(rec(res.body, "DKIM")).toMatchObject({ status: "PENDING" });
    expect(rec(res.body, "DKIM").detail).toContain("does not match");
    expect(rec(res.body, "SPF").status).toBe("VERIFIED");

    dns.set(rec(d, "DKIM").name, "TXT", [rec(d, "DKIM").value.slice(0, -10)]);
    res = await p.api.post<DomainBody>(`/domains/${d.id}/verify`);
    expect(res.body.status).toBe("PENDING");

    // Spaces inside p= (as some DNS panels insert) are fine.
    const spaced = rec(d, "DKIM").value.replace(/p=(.{40})/, "p=$1 ");
    dns.set(rec(d, "DKIM").name, "TXT", [spaced]);
    res = await p.api.post<DomainBody>(`/domains/${d.id}/verify`);
    expect(res.body.status).toBe("VERIFIED");
  });

  it("a resolver failure (SERVFAIL, timeout) on check-now answers 200 and changes no status", async () => {
    const p = await newProject();
    const d = await addDomain(p);
    dns.servfail(d.domain);
    let res = await p.api.post<DomainBody>(`/domains/${d.id}/verify`);
    expect(res.status).toBe(200);
    expect(res.body.status).toBe("PENDING");
    expect(rec(res.body, "SPF").detail).toContain("SERVFAIL");

    dns.heal(d.domain).publish(d.records);
    dns.slow(rec(d, "DKIM").name);
    res = await p.api.post<DomainBody>(`/domains/${d.id}/verify`);
    expect(res.status).toBe(200);
    // Answered because the Worker's timeout aborted the lookup, not because the resolver answered.
    expect(dns.aborted).toEqual([{ name: rec(d, "DKIM").name, type: "TXT", reason: "TimeoutError" }]);
    expect(res.body.status).toBe("PENDING");
    expect(rec(res.body, "DKIM").detail).toContain("timed out");
    expect(rec(res.body, "SPF").status).toBe("VERIFIED");

    dns.heal(rec(d, "DKIM").name);
    res = await p.api.post<DomainBody>(`/domains/${d.id}/verify`);
    expect(res.body.status).toBe("VERIFIED");
  });
});

describe("the cron path", () => {
  it("checks due PENDING domains with back-off and verifies them when the records appear", async () => {
    const p = await newProject();
    const d = await addDomain(p);
    const t0 = Date.parse(d.lastCheckedAt!);
    const lookups = () => dns.count(d.domain, "TXT");
    const start = lookups();

    // Not due yet: nothing happens.
    await cronAt(t0 + 30_000);
    expect(lookups()).toBe(start);

    // Due checks, each one pushing the next further out: 1, 2, 5, 10 minutes after the check.
    const gaps: number[] = [];
    let at = Date.parse(d.nextCheckAt!);
    for (let i = 0; i < 4; i++) {
      await cronAt(at);
      const now = (await p.api.get<DomainBody>(`/domains/${d.id}`)).body;
      expect(now.lastCheckedAt).toBe(new Date(at).toISOString());
      gaps.push((Date.parse(now.nextCheckAt!) - at) / MIN);
      at = Date.parse(now.nextCheckAt!);
    }
    expect(gaps).toEqual([2, 5, 10, 30]);
    expect(lookups()).toBe(start + 4);

    dns.publish(d.records);
    await cronAt(at);
    const verified = (await p.api.get<DomainBody>(`/domains/${d.id}`)).body;
    expect(verified.status).toBe("VERIFIED");
    expect(verified.verifiedAt).toBe(new Date(at).toISOString());
  });

  it("bounds the work of one tick: at most 8 domains (40 lookups), oldest due first, the rest on the next ticks", async () => {
    const p = await newProject();
    const added: DomainBody[] = [];
    for (let i = 0; i < 10; i++) added.push(await addDomain(p));
    const at = Date.parse(added[9].nextCheckAt!) + MIN;
    const before = dns.requests.length;
    await cronTick(at);
    expect(dns.requests.length - before).toBe(40);
    await cronAt(at);
    for (const d of added) {
      expect((await p.api.get<DomainBody>(`/domains/${d.id}`)).body.lastCheckedAt).toBe(new Date(at).toISOString());
    }
  });

  it("marks a domain FAILED 72 hours after creation without its records, then stops checking it", async () => {
    const p = await newProject();
    const d = await addDomain(p);
    const created = Date.parse(d.createdAt);
    // Just before the deadline: still pending.
    await cronAt(created + 71 * HOUR);
    expect((await p.api.get<DomainBody>(`/domains/${d.id}`)).body.status).toBe("PENDING");
    // SPF alone is not enough.
    dns.publish([rec(d, "SPF")]);
    await cronAt(created + 73 * HOUR);
    const failed = (await p.api.get<DomainBody>(`/domains/${d.id}`)).body;
    expect(failed.status).toBe("FAILED");
    expect(failed.nextCheckAt).toBeNull();
    expect(rec(failed, "DKIM").status).toBe("FAILED");
    expect(rec(failed, "SPF").status).toBe("VERIFIED");

    const lookups = dns.count(d.domain);
    await cronAt(created + 80 * HOUR);
    expect(dns.count(d.domain)).toBe(lookups);

    // Check-now still works on a FAILED domain and recovers it once the records are right.
    dns.publish(d.records);
    const res = await p.api.post<DomainBody>(`/domains/${d.id}/verify`);
    expect(res.body.status).toBe("VERIFIED");
  });

  it("re-checks VERIFIED domains every 6 hours; vanished records are reported, and FAILED after 72 hours missing", async () => {
    const p = await newProject();
    const d = await addDomain(p);
    dns.publish(d.records);
    const verified = (await p.api.post<DomainBody>(`/domains/${d.id}/verify`)).body;
    expect(verified.status).toBe("VERIFIED");

    dns.remove(rec(d, "DKIM").name);
    const t1 = Date.parse(verified.nextCheckAt!);
    await cronAt(t1);
    let now = (await p.api.get<DomainBody>(`/domains/${d.id}`)).body;
    expect(now.status).toBe("VERIFIED"); // sending continues while the owner fixes DNS
    expect(now.lastCheckedAt).toBe(new Date(t1).toISOString());
    expect(rec(now, "DKIM")).toMatchObject({ status: "FAILED", failingSince: new Date(t1).toISOString() });
    expect(Date.parse(now.nextCheckAt!) - t1).toBe(MIN);

    await cronAt(t1 + 73 * HOUR);
    now = (await p.api.get<DomainBody>(`/domains/${d.id}`)).body;
    expect(now.status).toBe("FAILED");
    expect(rec(now, "DKIM").failingSince).toBe(new Date(t1).toISOString());
  });

  it("a record that comes back clears its failure", async () => {
    const p = await newProject();
    const d = await addDomain(p);
    dns.publish(d.records);
    const verified = (await p.api.post<DomainBody>(`/domains/${d.id}/verify`)).body;
    dns.remove(d.domain, "TXT");
    await cronAt(Date.parse(verified.nextCheckAt!));
    expect(rec((await p.api.get<DomainBody>(`/domains/${d.id}`)).body, "SPF").status).toBe("FAILED");
    dns.publish([rec(d, "SPF")]);
    const back = (await p.api.post<DomainBody>(`/domains/${d.id}/verify`)).body;
    expect(back.status).toBe("VERIFIED");
    expect(rec(back, "SPF").status).toBe("VERIFIED");
    expect(rec(back, "SPF").failingSince).toBeUndefined();
    expect(back.verifiedAt).toBe(verified.verifiedAt);
  });
});

describe("projects and domains", () => {
  it("isolates projects: another project's domain is 404, and a claimed name is 409 for everyone else", async () => {
    const a = await newProject("A");
    const b = await newProject("B");
    const d = await addDomain(a);
    expectError(await b.api.get<Domain>(`/domains/${d.id}`), 404, "NOT_FOUND");
    expectError(await b.api.post<Domain>(`/domains/${d.id}/verify`), 404, "NOT_FOUND");
    expectError(await b.api.delete(`/domains/${d.id}`), 404, "NOT_FOUND");
    const taken = expectError(await b.api.post<Domain>("/domains", { domain: d.domain.toUpperCase() }), 409, "CONFLICT");
    expect(taken.message).toContain("another project");
    const again = expectError(await a.api.post<Domain>("/domains", { domain: d.domain }), 409, "CONFLICT");
    expect(again.message).toContain("this project");
    const listB = await b.api.get<DomainList>("/domains");
    expect(listB.body.data.total).toBe(0);
    // A's domain is still A's.
    expect((await a.api.get<Domain>(`/domains/${d.id}`)).status).toBe(200);
  });

  it("lists domains newest first with the general list shape, cursor pages and a status filter", async () => {
    const p = await newProject();
    const d1 = await addDomain(p);
    const d2 = await addDomain(p);
    const d3 = await addDomain(p);
    dns.publish(d2.records);
    await p.api.post<Domain>(`/domains/${d2.id}/verify`);
    const page1 = await p.api.get<DomainList>("/domains?limit=2");
    expect(page1.status).toBe(200);
    expect(page1.body.success).toBe(true);
    expect(page1.body.data).toMatchObject({ hasMore: true, total: 3 });
    expect(page1.body.data.items.map((d: DomainBody) => d.id)).toEqual([d3.id, d2.id]);
    const page2 = await p.api.get<DomainList>(`/domains?limit=2&cursor=${page1.body.data.nextCursor}`);
    expect(page2.body.data).toMatchObject({ hasMore: false, nextCursor: null, total: 3 });
    expect(page2.body.data.items.map((d: DomainBody) => d.id)).toEqual([d1.id]);
    const verified = await p.api.get<DomainList>("/domains?status=VERIFIED");
    expect(verified.body.data.items.map((d: DomainBody) => d.id)).toEqual([d2.id]);
    expectError(await p.api.get<DomainList>("/domains?status=NOPE"), 422);
    expectError(await p.api.get<DomainList>("/domains?cursor=garbage"), 422);
  });

  it("refuses to delete a domain a template sends from (400), then deletes it (204)", async () => {
    const p = await newProject();
    const d = await addDomain(p);
    const template = await p.api.post<Template>("/templates", {
      name: "Welcome",
      subject: "Hi",
      body: "<p>Hi</p>",
      type: "TRANSACTIONAL",
      from: `news@${d.domain}`,
    });
    expect(template.status).toBe(201);
    const error = expectError(await p.api.delete(`/domains/${d.id}`), 400, "INVALID_STATE");
    expect(error.message).toContain("Welcome");
    // A template on another domain that merely ends with the same text does not block.
    await p.api.patch(`/templates/${template.body.id}`, { from: `news@not${d.domain}` });
    expect((await p.api.delete(`/domains/${d.id}`)).status).toBe(204);
    expectError(await p.api.get<Domain>(`/domains/${d.id}`), 404);
    // The name is free again.
    expect((await p.api.post<Domain>("/domains", { domain: d.domain })).status).toBe(201);
  });
});

describe("DKIM key", () => {
  it("the published public key verifies a signature made with the stored (decrypted) private key", async () => {
    const p = await newProject();
    const d = await addDomain(p);
    const row = await getDb(env.DB).query.domains.findFirst({ where: (t, { eq }) => eq(t.id, d.id) });
    expect(row!.dkimPrivateKeyEncrypted).not.toContain("MII"); // not stored in the clear
    const pkcs8 = await decryptPrivateKey(env.DKIM_ENCRYPTION_KEY!, d.domain, row!.dkimPrivateKeyEncrypted);
    const algorithm = { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" };
    const privateKey = await crypto.subtle.importKey("pkcs8", base64ToBytes(pkcs8), algorithm, false, ["sign"]);
    const p64 = /p=([A-Za-z0-9+/=]+)/.exec(rec(d, "DKIM").value)![1];
    const publicKey = await crypto.subtle.importKey("spki", base64ToBytes(p64), algorithm, true, ["verify"]);
    expect((publicKey.algorithm as { modulusLength: number }).modulusLength).toBe(2048);
    const message = new TextEncoder().encode("from:ada@example.com\r\nsubject:hello\r\n");
    const signature = await crypto.subtle.sign(algorithm, privateKey, message);
    expect(await crypto.subtle.verify(algorithm, publicKey, signature, message)).toBe(true);
    expect(await crypto.subtle.verify(algorithm, publicKey, signature, new TextEncoder().encode("tampered"))).toBe(false);
    // Bound to its domain and to the secret.
    await expect(decryptPrivateKey(env.DKIM_ENCRYPTION_KEY!, `x${d.domain}`, row!.dkimPrivateKeyEncrypted)).rejects.toThrow();
    await expect(decryptPrivateKey("another-secret-another-secret-1234", d.domain, row!.dkimPrivateKeyEncrypted)).rejects.toThrow();
    // Each domain gets its own key.
    const other = await addDomain(p);
    expect(rec(other, "DKIM").value).not.toBe(rec(d, "DKIM").value);
  });
});
