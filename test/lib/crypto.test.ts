import { describe, expect, it } from "vitest";
import { openSecret, sealSecret } from "../../src/lib/crypto";

const KEY = "a-test-key-of-at-least-32-bytes-long!";
const CONTEXT = "webhook-endpoint:01900000-0000-7000-8000-000000000001";

describe("sealed secrets", () => {
  it("open with the key and context they were sealed for, and with nothing else", async () => {
    const sealed = await sealSecret(KEY, CONTEXT, "whsec_abc");
    expect(sealed).not.toContain("whsec_abc");
    expect(await openSecret(KEY, CONTEXT, sealed)).toBe("whsec_abc");
    await expect(openSecret(KEY, "webhook-endpoint:another", sealed)).rejects.toThrow();
    await expect(openSecret(`${KEY}x`, CONTEXT, sealed)).rejects.toThrow();
  });

  it("a value sealed before the move to lib/crypto.ts (domains/dkim.ts encryptPrivateKey at f6e71fa) still opens", async () => {
    const stored = "AQIDBAUGBwgJCgsM.X83hP8OdWowXEH78xFsbnqZFOoyzSFpNR1UuhcIbsRtsXG+jxqcTFyl36DGGGyqnLtz/RIU4";
    expect(await openSecret(KEY, CONTEXT, stored)).toBe("whsec_c2VhbGVkIGJlZm9yZSB0aGUgbW92ZQ==");
  });
});
