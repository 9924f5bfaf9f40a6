import { createExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import worker from "../../src/index";
import { BASE, newProject } from "../helpers";

const LIMIT = 3;

/** One request through the Worker with a small per-minute limit. */
async function hit(key: string, path: string, body?: unknown) {
  const request = new Request(BASE + path, {
    method: body === undefined ? "GET" : "POST",
    headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const response = await worker.fetch(request, { ...env, RATE_LIMIT_PER_MINUTE: String(LIMIT) }, createExecutionContext());
  await response.body?.cancel();
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
