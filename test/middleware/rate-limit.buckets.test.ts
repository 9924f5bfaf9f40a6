import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { call, newProject } from "../support/http";

const LIMIT = 3;

/** One request through the Worker with a small per-minute limit. */
async function hit(key: string, path: string, body?: unknown) {
  const response = await call(body === undefined ? "GET" : "POST", path, {
    key,
    body,
    headers: { "Content-Type": "application/json" },
    env: { ...env, RATE_LIMIT_PER_MINUTE: String(LIMIT) },
    waitForBackground: false,
  });
  return { status: response.status, remaining: response.headers.get("RateLimit-Remaining") };
}

describe("rate limit buckets per key kind", () => {
  it("a public key spending its whole budget leaves the secret key's budget untouched", async () => {
    // Fixed one-minute windows: do not straddle a boundary.
    const left = 60_000 - (Date.now() % 60_000);
    if (left < 5_000) await new Promise((resolve) => setTimeout(resolve, left + 250));
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
