import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { getDb } from "../../src/db/client";
import { domains } from "../../src/db/schema";
import type { Env } from "../../src/env";
import worker from "../../src/index";
import { fakeDns } from "../fakes/dns";
import { call, type ErrorBody, expectError, newProject, type TestProject } from "../support/http";
import { verifiedDomain } from "../support/sending";

const DAY = 24 * 3600_000;
let seq = 0;
const uniqueDomain = () => `h${Date.now().toString(36)}${seq++}.example`;

interface DomainBody {
  id: string;
  domain: string;
  status: string;
}
interface DomainList {
  data: { items: DomainBody[]; total: number };
}
interface Campaign {
  data: { id: string; status: string };
}

let dns: ReturnType<typeof fakeDns>;
beforeEach(() => {
  dns = fakeDns();
});
afterEach(() => vi.restoreAllMocks());

async function addDomain(p: TestProject, name = uniqueDomain()) {
  const res = await p.api.post<DomainBody>("/domains", { domain: name });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}

/** The Worker's scheduled handler at `time`, as the Cron Trigger runs it. */
async function cronAt(time: number) {
  const ctx = createExecutionContext();
  await worker.scheduled(createScheduledController({ scheduledTime: new Date(time), cron: "* * * * *" }), env, ctx);
  await waitOnExecutionContext(ctx);
}

/** Moves a domain's first add `days` into the past. */
const addedDaysAgo = (id: string, days: number) =>
  getDb(env.DB)
    .update(domains)
    .set({ createdAt: new Date(Date.now() - days * DAY), status: "FAILED", nextCheckAt: null })
    .where(eq(domains.id, id));

describe("domains: squatting", () => {
  it("a name released after 7 days unverified cannot be added back by the same project for 30 days; another project can add it", async () => {
    const squatter = await newProject();
    const name = uniqueDomain();
    const held = await addDomain(squatter, name);
    await addedDaysAgo(held.id, 7.1);
    await cronAt(Date.now());
    expectError(await squatter.api.get(`/domains/${held.id}`), 404);

    const refused = expectError(await squatter.api.post("/domains", { domain: name }), 409, "CONFLICT");
    expect(refused.message).toContain("without verifying it");
    expect(refused.message).toMatch(/cannot add it again before \d{4}-/);
    expect((await squatter.api.get<DomainList>("/domains")).body.data.total).toBe(0);
    // The owner of the name can take it at once.
    const owner = await newProject();
    await addDomain(owner, name);
  });

  it("deleting and re-adding does not restart the 7 days: the hold counts from the first add", async () => {
    const squatter = await newProject();
    const name = uniqueDomain();
    const first = await addDomain(squatter, name);
    await addedDaysAgo(first.id, 5);
    expect((await squatter.api.delete(`/domains/${first.id}`)).status).toBe(204);
    // Re-adding a name deleted by mistake is fine...
    const again = await addDomain(squatter, name);
    // ...but 3 days later (8 days after the first add) the cron releases it, though this add is 3 days old.
    await cronAt(Date.now() + 3 * DAY);
    expectError(await squatter.api.get(`/domains/${again.id}`), 404);
    expectError(await squatter.api.post("/domains", { domain: name }), 409, "CONFLICT");
  });

  it("a verified domain, deleted, can be added back at once", async () => {
    const p = await newProject();
    const name = await verifiedDomain(p, dns);
    const [listed] = (await p.api.get<DomainList>("/domains")).body.data.items;
    expect((await p.api.delete(`/domains/${listed.id}`)).status).toBe(204);
    expect((await p.api.post("/domains", { domain: name })).status).toBe(201);
  });
});

describe("domains: the cap holds under concurrency", () => {
  it("QUOTA_DOMAINS=2 and 6 concurrent adds: exactly 2 are created, the rest are 403 QUOTA_EXCEEDED", async () => {
    const p = await newProject();
    const limited = { ...env, QUOTA_DOMAINS: "2" } as Env;
    const results = await Promise.all(
      Array.from({ length: 6 }, () => call("POST", "/domains", { key: p.secretKey, body: { domain: uniqueDomain() }, env: limited })),
    );
    const statuses = results.map((r) => r.status).sort();
    expect(statuses).toEqual([201, 201, 403, 403, 403, 403]);
    for (const r of results.filter((r) => r.status === 403)) expect((r.body as ErrorBody).error.message).toContain("2 sending domains");
    expect((await p.api.get<DomainList>("/domains")).body.data.total).toBe(2);
  });
});

describe("domains: deletion while a campaign sends from it", () => {
  it("a SCHEDULED campaign whose from is on the domain blocks the delete (400 INVALID_STATE naming it); once back to DRAFT the delete goes through", async () => {
    const p = await newProject();
    const name = await verifiedDomain(p, dns);
    const [domain] = (await p.api.get<DomainList>("/domains")).body.data.items;
    expect((await p.api.post("/contacts", { email: "reader@example.org" })).status).toBeLessThan(300);
    const created = await p.api.post<Campaign>("/campaigns", {
      name: "Spring news",
      subject: "Hello",
      body: "<p>Hi</p>",
      from: `news@${name}`,
      fromName: "News",
      audienceType: "ALL",
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.data.id;
    // A draft does not block (sending it later answers DOMAIN_NOT_VERIFIED)... but scheduled does.
    const scheduled = await p.api.post<Campaign>(`/campaigns/${id}/send`, { scheduledFor: new Date(Date.now() + 3600_000).toISOString() });
    expect(scheduled.body.data?.status, JSON.stringify(scheduled.body)).toBe("SCHEDULED");
    const refused = expectError(await p.api.delete(`/domains/${domain.id}`), 400, "INVALID_STATE");
    expect(refused.message).toContain('scheduled campaign "Spring news"');
    expect((await p.api.get(`/domains/${domain.id}`)).status).toBe(200);

    expect((await p.api.post<Campaign>(`/campaigns/${id}/cancel`)).body.data.status).toBe("DRAFT");
    expect((await p.api.delete(`/domains/${domain.id}`)).status).toBe(204);
  });
});
