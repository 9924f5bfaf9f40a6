import { describe, expect, it } from "vitest";
import { TtlCache } from "../../src/lib/ttl-cache";

describe("TtlCache", () => {
  it("keeps an entry for ttlMs after it was set and forgets it after, by the injected clock", () => {
    const clock = { now: 1_000 };
    const cache = new TtlCache<string, number>({ max: 10, ttlMs: 5_000, now: () => clock.now });
    cache.set("a", 1);
    clock.now += 5_000;
    expect(cache.get("a")).toBe(1);
    clock.now += 1;
    expect(cache.get("a")).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  it("holds at most max entries and drops the least recently used first", () => {
    const cache = new TtlCache<string, number>({ max: 3, ttlMs: 60_000 });
    cache.set("a", 1);
    cache.set("b", 2);
    cache.set("c", 3);
    expect(cache.get("a")).toBe(1); // a is now the most recently used
    cache.set("d", 4); // drops b
    expect(cache.get("b")).toBeUndefined();
    expect([cache.get("a"), cache.get("c"), cache.get("d")]).toEqual([1, 3, 4]);
    cache.set("c", 30); // replacing does not grow it
    expect(cache.size).toBe(3);
    cache.delete("a");
    expect(cache.get("a")).toBeUndefined();
    expect(cache.size).toBe(2);
  });

  it("gives one entry a TTL of its own when set with one", () => {
    const clock = { now: 0 };
    const cache = new TtlCache<string, number>({ max: 10, ttlMs: 1_000, now: () => clock.now });
    cache.set("short", 1);
    cache.set("long", 2, 60_000);
    clock.now = 2_000;
    expect([cache.get("short"), cache.get("long")]).toEqual([undefined, 2]);
  });

  it("with a size function holds at most maxSize of weight, drops the least recently used first, and never keeps an entry heavier than maxSize", () => {
    const cache = new TtlCache<string, string>({ max: 100, ttlMs: 60_000, maxSize: 10, size: (v) => v.length });
    cache.set("a", "aaaa");
    cache.set("b", "bbbb");
    expect(cache.get("a")).toBe("aaaa"); // b is now the least recently used
    cache.set("c", "cccc"); // 12 > 10: drops b
    expect([cache.get("a"), cache.get("b"), cache.get("c")]).toEqual(["aaaa", undefined, "cccc"]);
    cache.set("huge", "x".repeat(11));
    expect(cache.get("huge")).toBeUndefined();
    expect(cache.size).toBe(2);
    cache.set("a", "aaaaaa"); // replacing reweighs: 6 + 4 = 10
    expect([cache.get("a"), cache.get("c")]).toEqual(["aaaaaa", "cccc"]);
  });
});
