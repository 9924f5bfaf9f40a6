import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { ProjectLimiter } from "../../src/durable/project-limiter";
import { readConfig } from "../../src/lib/config";

const MINUTE = 60_000;

describe("L1: the rate-limit window never moves back", () => {
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

describe("L5: EMAIL_PROVIDER=capture outside development is a configuration error", () => {
  it.each([["production"], ["test"], ["staging"], [undefined]])("ENVIRONMENT=%s with capture is refused with a message naming the setting", (environment) => {
    expect(() => readConfig({ ENVIRONMENT: environment, EMAIL_PROVIDER: "capture" })).toThrow(/EMAIL_PROVIDER=capture.*ENVIRONMENT=development/);
  });

  it("development with capture, and every environment with ses, are accepted", () => {
    expect(readConfig({ ENVIRONMENT: "development", EMAIL_PROVIDER: "capture" }).EMAIL_PROVIDER).toBe("capture");
    expect(readConfig({ ENVIRONMENT: "production", EMAIL_PROVIDER: "ses" }).EMAIL_PROVIDER).toBe("ses");
  });
});
