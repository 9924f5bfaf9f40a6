import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { call, newProject } from "../support/http";

const LIMIT = 3;
/** A fixed instant 10 s into a minute of the app's clock: the requests below share one window, whatever the wall clock says. */
const app = createApp({ now: () => 29_150_000 * 60_000 + 10_000 });

/** One request through the app with a small per-minute limit. */
async function hit(key: string, path: string, body?: unknown) {
  const response = await call(body === undefined ? "GET" : "POST", path, {
    key,
    body,
    headers: { "Content-Type": "application/json" },
    handler: (r, e, ctx) => app.fetch(r, e, ctx),
    env: { ...env, RATE_LIMIT_PER_MINUTE: String(LIMIT) },
    waitForBackground: false,
  });
  return { status: response.status, remaining: response.headers.get("RateLimit-Remaining") };
}

describe("rate limit buckets per key kind", () => {
  it("a public key spending its whole budget leaves the secret key's budget untouched", async () => {
    const p = await newProject();
    const track = { email: "visitor@example.com", event: "page-view" };
    const publicHits = [];
    for (let i = 0; i <= LIMIT; i++) publicHits.push(await hit(p.publicKey, "/v1/track", track));
    expect(publicHits.map((r) => r.status)).toEqual([200, 200, 200, 429]);

    const secret = await hit(p.secretKey, "/contacts?limit=1");
    expect(secret.status).toBe(200);
    expect(secret.remaining).toBe(String(LIMIT - 1));
    // Server-side tracking with the secret key still works too.
    expect((await hit(p.secretKey, "/v1/track", track)).status).toBe(200);
  });
});
