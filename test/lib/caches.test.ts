import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { getDb } from "../../src/db/client";
import { domains } from "../../src/db/schema";
import { VERIFIED_DOMAIN_CACHE_TTL_MS } from "../../src/services/domains";
import { call, expectError, newProject } from "../support/http";
import { insertVerifiedDomain } from "../support/sending";

/** A VERIFIED sending domain written straight to D1 (as a passed DNS check leaves it). */
const verifiedDomainOf = (projectId: string) => insertVerifiedDomain(projectId, "clock");

describe("the app's caches run on the app's clock", () => {
  it("a sending domain that fails its re-check still sends for VERIFIED_DOMAIN_CACHE_TTL_MS on the app's clock, then /v1/send answers 403", async () => {
    const p = await newProject();
    const name = await verifiedDomainOf(p.id);
    const clock = { now: Date.now() };
    const app = createApp({ now: () => clock.now });
    const send = () =>
      call<{ success: boolean }>("POST", "/v1/send", {
        key: p.secretKey,
        body: { to: "a@example.com", from: `hi@${name}`, subject: "Hi", body: "<p>Hi</p>" },
        handler: app.fetch,
      });
    expect((await send()).status).toBe(200);
    await getDb(env.DB).update(domains).set({ status: "FAILED" }).where(eq(domains.name, name));
    clock.now += VERIFIED_DOMAIN_CACHE_TTL_MS;
    expect((await send()).status).toBe(200);
    clock.now += 1;
    expectError(await send(), 403, "DOMAIN_NOT_VERIFIED");
  });

  it("each app has caches of its own: a fresh app sees the domain's current status at once", async () => {
    const p = await newProject();
    const name = await verifiedDomainOf(p.id);
    const body = { to: "a@example.com", from: `hi@${name}`, subject: "Hi", body: "<p>Hi</p>" };
    const warm = createApp();
    expect((await call("POST", "/v1/send", { key: p.secretKey, body, handler: warm.fetch })).status).toBe(200);
    await getDb(env.DB).update(domains).set({ status: "FAILED" }).where(eq(domains.name, name));
    expectError(await call("POST", "/v1/send", { key: p.secretKey, body, handler: createApp().fetch }), 403, "DOMAIN_NOT_VERIFIED");
  });
});
