import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { ProjectLimiter } from "../../src/entrypoints/project-limiter";

const MINUTE = 60_000;

describe("the rate-limit window never moves back", () => {
  it("a lease carrying an earlier minute's clock counts in the current window and does not reset it", async () => {
    const stub = env.PROJECT_LIMITER.get(env.PROJECT_LIMITER.idFromName(`l1-${crypto.randomUUID()}`));
    const minute = 29_500_000 * MINUTE;
    await runInDurableObject(stub, (limiter: ProjectLimiter) => {
      expect(limiter.leaseApi(3, minute + MINUTE + 5_000, 3)).toMatchObject({ granted: 3, remaining: 0, windowStart: minute + MINUTE });
      // A request that started in the previous minute and waited: nothing left, the window stays.
      expect(limiter.leaseApi(3, minute + 59_000, 2)).toMatchObject({ granted: 0, windowStart: minute + MINUTE });
      // And the current minute is not reset by it either.
      expect(limiter.leaseApi(3, minute + MINUTE + 6_000, 1)).toMatchObject({ granted: 0, remaining: 0 });
      // The next minute starts afresh.
      expect(limiter.leaseApi(3, minute + 2 * MINUTE, 1)).toMatchObject({ granted: 1, remaining: 2 });
    });
  });
});
