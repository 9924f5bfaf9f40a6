/** Milliseconds since the epoch; the app's clock, injectable so tests move it instead of waiting. */
export type Clock = () => number;

/** Date.now read at each call (not captured), so a test that replaces Date.now is seen. */
export const systemClock: Clock = () => Date.now();

/**
 * The in-isolate caches of one app, all on the app's clock. A cache is named
 * by the function that builds it from the clock (e.g. `verifiedDomainCache`)
 * and built on its first use, so a fresh app starts with empty caches.
 */
export class Caches {
  private readonly built = new Map<(now: Clock) => unknown, unknown>();

  constructor(readonly now: Clock = systemClock) {}

  get<T>(build: (now: Clock) => T): T {
    if (!this.built.has(build)) this.built.set(build, build(this.now));
    return this.built.get(build) as T;
  }
}
