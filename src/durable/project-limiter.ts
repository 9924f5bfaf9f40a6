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

/** Transactional mail (/v1/send, test sends, TRANSACTIONAL workflow steps) or bulk mail (campaigns, MARKETING workflow steps). */
export type SendKind = "transactional" | "bulk";
/** Bulk mail's guaranteed share of the sending rate. */
export const BULK_SHARE = 0.1;
/** A kind that asked for no tokens for this long lends its bucket to the other. */
export const IDLE_MS = 2000;

export class ProjectLimiter extends DurableObject {
  private windowStart = 0;
  private count = 0;
  private tokens = -1;
  private bulkTokens = 0;
  private lastRefill = 0;
  private lastBulkAt = Number.NEGATIVE_INFINITY;
  private lastTransactionalAt = Number.NEGATIVE_INFINITY;

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
   * Sending rate, with priority (CONTRACT.md "Sending priority"): the
   * project's `ratePerSecond` is split into two token buckets, each holding at
   * most one second of its refill:
   * - the main bucket, refilled at (1 - BULK_SHARE) of the rate, serves
   *   transactional mail first: transactional takes any token in it, bulk
   *   only the tokens above a reserve (half of it), so a transactional send
   *   arriving while a campaign drains finds tokens waiting;
   * - the bulk bucket, refilled at BULK_SHARE of the rate, is bulk mail's
   *   guaranteed share: bulk is never starved by a stream of transactional mail.
   * A kind that has not asked for tokens for IDLE_MS lends its bucket to the
   * other, so either kind alone gets the whole rate. Tokens granted never
   * exceed the rate, whatever the mix.
   */
  takeSendTokens(requested: number, ratePerSecond: number, now = Date.now(), kind: SendKind = "transactional"): SendTokens {
    const mainCapacity = Math.max(1, ratePerSecond * (1 - BULK_SHARE));
    const bulkCapacity = Math.max(1, ratePerSecond * BULK_SHARE);
    if (this.tokens < 0) {
      this.tokens = mainCapacity;
      this.bulkTokens = bulkCapacity;
      this.lastRefill = now;
    }
    const elapsed = Math.max(0, now - this.lastRefill) / 1000;
    this.tokens = Math.min(mainCapacity, this.tokens + elapsed * ratePerSecond * (1 - BULK_SHARE));
    this.bulkTokens = Math.min(bulkCapacity, this.bulkTokens + elapsed * ratePerSecond * BULK_SHARE);
    this.lastRefill = Math.max(this.lastRefill, now);
    const otherIdle = now - (kind === "bulk" ? this.lastTransactionalAt : this.lastBulkAt) > IDLE_MS;
    if (kind === "bulk") this.lastBulkAt = now;
    else this.lastTransactionalAt = now;

    // Bulk: its own bucket, then the main bucket above the transactional reserve.
    // The reserve stays even while no transactional mail is asking, so a
    // password reset never waits for a refill; bulk still gets the whole rate
    // then, as the main bucket's refill above the reserve.
    const reserve = Math.min(mainCapacity, Math.ceil(mainCapacity / 2));
    const fromMain = kind === "bulk" ? Math.max(0, this.tokens - reserve) : this.tokens;
    const fromBulk = kind === "bulk" || otherIdle ? this.bulkTokens : 0;
    const available = fromMain + fromBulk;
    // A tiny epsilon so fractions that add up to a whole token (0.7 + 0.3) count as one.
    const granted = Math.max(0, Math.min(requested, Math.floor(available + 1e-9)));
    // Each kind spends from its own bucket first.
    let left = granted;
    const spend = (take: number, from: "tokens" | "bulkTokens") => {
      const used = Math.min(left, take);
      this[from] -= used;
      left -= used;
    };
    if (kind === "bulk") {
      spend(this.bulkTokens, "bulkTokens");
      spend(fromMain, "tokens");
    } else {
      spend(this.tokens, "tokens");
      if (fromBulk > 0) spend(this.bulkTokens, "bulkTokens");
    }
    const missing = requested - granted;
    // When the rest could go: at the rate this kind gets now (all of it while the other kind is idle).
    const rateNow = otherIdle ? ratePerSecond : ratePerSecond * (kind === "bulk" ? BULK_SHARE : 1 - BULK_SHARE);
    const remaining = Math.max(0, available - granted);
    const retryAfterMs = missing > 0 ? Math.ceil(((missing - remaining) / rateNow) * 1000) : 0;
    return { granted, retryAfterMs };
  }

}
