import { DurableObject } from "cloudflare:workers";

export interface RateLimitResult {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until the current window ends. */
  resetSeconds: number;
}

/** A lease of API requests (leaseApi). */
export interface ApiLease {
  granted: number;
  limit: number;
  remaining: number;
  resetSeconds: number;
  /** Start of the window the slots belong to (ms); they expire with it. */
  windowStart: number;
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
  private bulkCredit = 0;
  private lastRefill = 0;
  private lastBulkAt = Number.NEGATIVE_INFINITY;
  private lastTransactionalAt = Number.NEGATIVE_INFINITY;

  hitApi(limit: number, now = Date.now()): RateLimitResult {
    const { granted, remaining, resetSeconds } = this.leaseApi(limit, now, 1);
    return { allowed: granted > 0, limit, remaining, resetSeconds };
  }

  /**
   * Up to `want` requests of the current window at once, for an isolate that
   * serves them from its own lease (src/middleware/rate-limit.ts): granted
   * slots are counted here when leased, so the window never admits more than
   * `limit` however the leases are spent. `remaining` is what is left after
   * this lease.
   */
  leaseApi(limit: number, now = Date.now(), want = 1): ApiLease {
    const windowMs = 60_000;
    // The window only moves forward: a request that waited and still carries an
    // earlier minute's `now` counts in the current window instead of resetting it.
    const start = Math.max(now - (now % windowMs), this.windowStart);
    if (start !== this.windowStart) {
      this.windowStart = start;
      this.count = 0;
    }
    const resetSeconds = Math.min(60, Math.max(1, Math.ceil((start + windowMs - now) / 1000)));
    const granted = Math.max(0, Math.min(Math.floor(want), limit - this.count));
    this.count += granted;
    return { granted, limit, remaining: Math.max(0, limit - this.count), resetSeconds, windowStart: start };
  }

  /**
   * Sending rate, with priority (CONTRACT.md "Sending priority"): one token
   * bucket per project, refilled at `ratePerSecond` and holding at most one
   * second's worth, shared by every consumer invocation of both queues.
   * - Transactional mail takes any token, except the bulk credit while bulk
   *   mail is waiting.
   * - Bulk mail takes only the tokens above a reserve (half of the
   *   transactional share), so a transactional send arriving while a campaign
   *   drains finds tokens waiting, plus its credit.
   * - The bulk credit accrues at BULK_SHARE of the rate (at most one second of
   *   it, and never more than the bucket holds): bulk mail's guaranteed share,
   *   so a stream of transactional mail never starves a campaign.
   * A kind that has not asked for IDLE_MS leaves the other the whole rate:
   * transactional mail alone sees exactly the plain bucket; a campaign alone
   * gets the whole rate as the refill above the reserve. Tokens granted never
   * exceed the rate, whatever the mix.
   */
  takeSendTokens(requested: number, ratePerSecond: number, now = Date.now(), kind: SendKind = "transactional"): SendTokens {
    const creditCap = Math.max(1, ratePerSecond * BULK_SHARE);
    if (this.tokens < 0) {
      this.tokens = ratePerSecond;
      this.bulkCredit = creditCap;
      this.lastRefill = now;
    }
    const elapsed = Math.max(0, now - this.lastRefill) / 1000;
    this.tokens = Math.min(ratePerSecond, this.tokens + elapsed * ratePerSecond);
    this.bulkCredit = Math.min(creditCap, this.tokens, this.bulkCredit + elapsed * ratePerSecond * BULK_SHARE);
    this.lastRefill = Math.max(this.lastRefill, now);
    const otherActive = now - (kind === "bulk" ? this.lastTransactionalAt : this.lastBulkAt) <= IDLE_MS;
    if (kind === "bulk") this.lastBulkAt = now;
    else this.lastTransactionalAt = now;

    const reserve = Math.ceil((ratePerSecond * (1 - BULK_SHARE)) / 2);
    const available = kind === "bulk" ? Math.max(this.bulkCredit, this.tokens - reserve) : otherActive ? this.tokens - this.bulkCredit : this.tokens;
    // A tiny epsilon so fractions that add up to a whole token count as one.
    const granted = Math.max(0, Math.min(requested, Math.floor(Math.max(0, available) + 1e-9)));
    this.tokens = Math.max(0, this.tokens - granted);
    this.bulkCredit = kind === "bulk" ? Math.max(0, this.bulkCredit - granted) : this.bulkCredit;
    this.bulkCredit = Math.min(this.bulkCredit, this.tokens);
    const missing = requested - granted;
    // When the rest could go: at the rate this kind gets now (all of it while the other kind is idle).
    const rateNow = otherActive ? ratePerSecond * (kind === "bulk" ? BULK_SHARE : 1 - BULK_SHARE) : ratePerSecond;
    const remaining = Math.max(0, available - granted);
    const retryAfterMs = missing > 0 ? Math.ceil(((missing - remaining) / rateNow) * 1000) : 0;
    return { granted, retryAfterMs };
  }
}
