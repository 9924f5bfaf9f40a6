import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { BULK_SHARE, type ProjectLimiter } from "../../src/entrypoints/project-limiter";

/** A fresh per-project sending bucket, driven with an injected clock. */
async function withBucket(name: string, run: (limiter: ProjectLimiter) => void) {
  await runInDurableObject(env.PROJECT_LIMITER.get(env.PROJECT_LIMITER.idFromName(`send:${name}`)), run);
}

const T = 1_800_000_000_000;

describe("the sending-rate bucket serves transactional mail first", () => {
  it("bulk alone gets the whole rate over time, but never the transactional reserve", async () => {
    await withBucket("bulk-alone", (limiter) => {
      // Start: a full second's worth, of which bulk may take all but the reserve (half the main bucket).
      const first = limiter.takeSendTokens(100, 14, T, "bulk");
      expect(first.granted).toBe(Math.floor(14 - Math.ceil((14 * (1 - BULK_SHARE)) / 2)));
      // Then, asking every 100 ms for 60 s, bulk gets the full 14 per second.
      let granted = 0;
      for (let ms = 100; ms <= 60_000; ms += 100) granted += limiter.takeSendTokens(100, 14, T + ms, "bulk").granted;
      expect(granted).toBeGreaterThanOrEqual(14 * 60 - 2);
      expect(granted).toBeLessThanOrEqual(14 * 60);
      // A transactional send right after finds the reserve waiting.
      expect(limiter.takeSendTokens(5, 14, T + 60_001, "transactional")).toEqual({ granted: 5, retryAfterMs: 0 });
    });
  });

  it("a transactional burst during a draining campaign goes at once, up to the reserve", async () => {
    await withBucket("burst", (limiter) => {
      for (let ms = 0; ms <= 5_000; ms += 50) limiter.takeSendTokens(100, 14, T + ms, "bulk");
      expect(limiter.takeSendTokens(100, 14, T + 5_001, "bulk").granted).toBe(0);
      const burst = limiter.takeSendTokens(7, 14, T + 5_002, "transactional");
      expect(burst).toEqual({ granted: 7, retryAfterMs: 0 });
    });
  });

  it("a stream of transactional mail never starves bulk: bulk keeps its share, and the total stays at the rate", async () => {
    await withBucket("share", (limiter) => {
      let bulk = 0;
      let transactional = 0;
      for (let ms = 0; ms <= 60_000; ms += 100) {
        transactional += limiter.takeSendTokens(100, 14, T + ms, "transactional").granted;
        bulk += limiter.takeSendTokens(100, 14, T + ms, "bulk").granted;
      }
      // Both buckets start full (14), then refill at 14/s for 60 s.
      expect(bulk + transactional).toBeLessThanOrEqual(14 + 14 * 60);
      expect(bulk).toBeGreaterThanOrEqual(Math.floor(14 * BULK_SHARE * 60));
      expect(transactional).toBeGreaterThanOrEqual(Math.floor(14 * (1 - BULK_SHARE) * 60));
    });
  });

  it("transactional mail alone gets the whole rate (bulk's idle share is lent to it)", async () => {
    await withBucket("transactional-alone", (limiter) => {
      let granted = 0;
      for (let ms = 0; ms <= 10_000; ms += 100) granted += limiter.takeSendTokens(100, 14, T + ms, "transactional").granted;
      expect(granted).toBeGreaterThanOrEqual(14 * 10);
      expect(granted).toBeLessThanOrEqual(14 + 14 * 10);
    });
  });
});
