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
});
