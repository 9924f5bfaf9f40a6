import { DurableObject } from "cloudflare:workers";

export interface RateLimitResult {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until the current window ends. */
  resetSeconds: number;
}

/**
 * Per-project rate counters. One instance per project and purpose (named
 * "<projectId>" for the API limit, "send:<projectId>" for the sending rate), so
 * one project's traffic never limits another's. A Durable Object runs one
 * request at a time, so the counter is exact under concurrent requests.
 *
 * The API limit is a fixed one-minute window: the (limit+1)-th request in a
 * window is refused. Counters live in memory: an evicted object forgets at most
 * one window, which only ever errs towards allowing requests.
 */
export interface SendTokens {
  /** How many of the requested sends may go now. */
  granted: number;
  /** When the rest could go, in milliseconds (0 when all were granted). */
  retryAfterMs: number;
}

export class ProjectLimiter extends DurableObject {
  private windowStart = 0;
  private count = 0;
  private tokens = -1;
  private lastRefill = 0;

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

  /**
   * Sending rate: a token bucket refilled at `ratePerSecond` holding at most one
   * second's worth, shared by every queue consumer invocation of the project.
   */
  takeSendTokens(requested: number, ratePerSecond: number, now = Date.now()): SendTokens {
    if (this.tokens < 0) {
      this.tokens = ratePerSecond;
      this.lastRefill = now;
    }
    this.tokens = Math.min(ratePerSecond, this.tokens + ((now - this.lastRefill) / 1000) * ratePerSecond);
    this.lastRefill = now;
    const granted = Math.max(0, Math.min(requested, Math.floor(this.tokens)));
    this.tokens -= granted;
    const missing = requested - granted;
    const retryAfterMs = missing > 0 ? Math.ceil(((missing - this.tokens) / ratePerSecond) * 1000) : 0;
    return { granted, retryAfterMs };
  }
}
