import { describe, expect, it } from "vitest";
import { awaitShared } from "../../src/lib/shared-wait";

/** A promise settled from outside, as another request's lookup or lease settles. */
function deferred<T>() {
  let resolve!: (value: T) => void;
  let reject!: (err: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

describe("awaitShared: waiting on work another request started", () => {
  it("answers with the shared work's value when it settles", async () => {
    const work = deferred<string>();
    setTimeout(() => work.resolve("owner"), 20);
    expect(await awaitShared(work.promise, 5_000)).toEqual({ settled: true, value: "owner" });
  });

  it("keeps waiting past its one-second timer ticks while the work is under way", async () => {
    const work = deferred<number>();
    setTimeout(() => work.resolve(42), 1_300);
    const started = Date.now();
    expect(await awaitShared(work.promise, 5_000)).toEqual({ settled: true, value: 42 });
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_250);
  });

  it("gives up after timeoutMs when the work never settles (its request was cancelled), so the caller does it itself", async () => {
    const never = new Promise<number>(() => {});
    const started = Date.now();
    expect(await awaitShared(never, 60)).toEqual({ settled: false });
    expect(Date.now() - started).toBeGreaterThanOrEqual(50);
  });

  it("passes the shared work's failure on", async () => {
    const work = deferred<number>();
    setTimeout(() => work.reject(new Error("D1 is unavailable")), 10);
    await expect(awaitShared(work.promise, 5_000)).rejects.toThrow("D1 is unavailable");
  });
});
