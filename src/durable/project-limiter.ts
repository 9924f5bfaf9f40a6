import { DurableObject } from "cloudflare:workers";

export interface RateLimitResult {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until the current window ends. */
  resetSeconds: number;
}

/**
 * Per-project rate counters. One instance per project (named by project id), so
 * one project's traffic never limits another's. A Durable Object runs one
 * request at a time, so the counter is exact under concurrent requests.
 *
 * The API limit is a fixed one-minute window: the (limit+1)-th request in a
 * window is refused. Counters live in memory: an evicted object forgets at most
 * one window, which only ever errs towards allowing requests.
 */
export class ProjectLimiter extends DurableObject {
  private windowStart = 0;
  private count = 0;

  hitApi(limit: number, now = Date.now()): RateLimitResult {
    const windowMs = 60_000;
    const start = now - (now % windowMs);
    if (start !== this.windowStart) {
      this.windowStart = start;
      this.count = 0;
    }
    const resetSeconds = Math.max(1, Math.ceil((start + windowMs - now) / 1000));
    if (this.count >= limit) return { allowed: false, limit, remaining: 0, resetSeconds };
    this.count++;
    return { allowed: true, limit, remaining: limit - this.count, resetSeconds };
  }
}
