import { createMiddleware } from "hono/factory";
import type { ApiLease, RateLimitResult } from "../entrypoints/project-limiter";
import { projectLimiter } from "../lib/project-limiters";
import type { AppBindings } from "../lib/context";
import { type Clock, systemClock } from "../lib/caches";
import { readConfig } from "../lib/config";
import { ApiError } from "../lib/errors";

const WINDOW_MS = 60_000;
/** Largest lease: a fiftieth of the limit (20 of the default 1000), at most 1000. */
const leaseCap = (limit: number) => Math.max(1, Math.min(1000, Math.floor(limit / 50)));
/** Buckets kept in memory before ended windows are dropped. */
const MAX_BUCKETS = 10_000;
/**
 * Rounds of waiting for a lease before asking the object for one slot alone.
 * Each lease either hands out slots or finds the window used up, so a request
 * waits at most as many rounds as there are requests ahead of it; the bound
 * only keeps a request that keeps losing the race from waiting forever.
 */
const MAX_ROUNDS = 1000;
/**
 * How long a request waits for another request's lease before leasing itself.
 * Kept short: waiting on another request's I/O is a Workers pitfall (that
 * request may be cancelled), and a lease of its own costs one object call.
 */
export const LEASE_WAIT_MS = 100;

interface Bucket {
  limit: number;
  windowStart: number;
  /** Slots leased and not yet used by this isolate. */
  tokens: number;
  /** The window's count left in the Durable Object after the last lease. */
  remaining: number;
  /** The object granted nothing: the window is used up for every isolate. */
  exhausted: boolean;
  /** Size of the next lease (doubles while the isolate keeps using them). */
  next: number;
  /** Requests waiting for a slot. */
  waiting: number;
  /** The lease on its way (another request's, for those that wait on it). */
  pending?: Promise<void>;
}

/** Whether `work` settles (either way) within `ms`; the timer keeps this request alive meanwhile. */
async function settlesWithin(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(resolve, ms, false);
  });
  try {
    const settled = work.then(
      () => true,
      () => true,
    );
    return await Promise.race([settled, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

type Limiter = { leaseApi(limit: number, now: number, want: number): Promise<ApiLease> | ApiLease };

/**
 * The API rate limit without a Durable Object call per request: the isolate
 * leases slots of the project's current window from its ProjectLimiter a few
 * at a time (1, then doubling while they are used, up to leaseCap) and spends
 * them locally. Slots are counted by the object when leased, so a window never
 * admits more than the limit across all isolates; what the bound costs is the
 * other way: slots leased by an isolate that then gets no more traffic are
 * lost until the window ends, so with several isolates a project may be
 * refused up to leaseCap requests per isolate early. With one isolate the
 * limit and RateLimit-Remaining are exact.
 */
export class ApiRateLeases {
  private buckets = new Map<string, Bucket>();

  async take(key: string, limiter: () => Limiter, limit: number, now: number): Promise<RateLimitResult> {
    const windowStart = now - (now % WINDOW_MS);
    const resetSeconds = Math.max(1, Math.ceil((windowStart + WINDOW_MS - now) / 1000));
    for (let round = 0; round < MAX_ROUNDS; round++) {
      const bucket = this.bucket(key, limit, windowStart);
      if (bucket.tokens > 0) {
        bucket.tokens--;
        return { allowed: true, limit, remaining: bucket.remaining + bucket.tokens, resetSeconds };
      }
      if (bucket.exhausted) return { allowed: false, limit, remaining: 0, resetSeconds };
      bucket.waiting++;
      try {
        const shared = bucket.pending;
        // Another request's lease, briefly, on a timer of this request's own; then a lease of its own.
        if (shared && (await settlesWithin(shared, LEASE_WAIT_MS))) continue;
        // Cleared when settled, unless a request that gave up on it has started another since.
        const lease: Promise<void> = this.lease(bucket, limiter(), now).finally(() => {
          if (bucket.pending === lease) bucket.pending = undefined;
        });
        bucket.pending = lease;
        await lease;
      } finally {
        bucket.waiting--;
      }
    }
    // Still no slot after several leases went to other requests: ask for one of our own.
    const { granted, remaining } = await limiter().leaseApi(limit, now, 1);
    return { allowed: granted > 0, limit, remaining, resetSeconds };
  }

  /** Whether this isolate already knows the window of `key` is used up (no slot left here, the object granted none). */
  knownExhausted(key: string, limit: number, now: number): boolean {
    const bucket = this.buckets.get(key);
    return bucket !== undefined && bucket.limit === limit && bucket.windowStart === now - (now % WINDOW_MS) && bucket.tokens === 0 && bucket.exhausted;
  }

  private async lease(bucket: Bucket, limiter: Limiter, now: number) {
    const want = Math.min(leaseCap(bucket.limit), Math.max(bucket.next, bucket.waiting));
    const lease = await limiter.leaseApi(bucket.limit, now, want);
    if (lease.windowStart !== bucket.windowStart) return; // the object's window moved on: these slots are not this bucket's
    bucket.tokens += lease.granted;
    bucket.remaining = lease.remaining;
    bucket.exhausted = lease.granted === 0;
    bucket.next = Math.min(leaseCap(bucket.limit), want * 2);
  }

  private bucket(key: string, limit: number, windowStart: number): Bucket {
    let bucket = this.buckets.get(key);
    // A request still holding an earlier minute never replaces a newer window's bucket.
    if (!bucket || bucket.limit !== limit || bucket.windowStart < windowStart) {
      if (!bucket && this.buckets.size >= MAX_BUCKETS) {
        for (const [k, b] of this.buckets) if (b.windowStart < windowStart) this.buckets.delete(k);
        if (this.buckets.size >= MAX_BUCKETS) this.buckets.delete(this.buckets.keys().next().value as string);
      }
      // Leases keep their size from one window to the next while the limit stays the same.
      const next = bucket && bucket.limit === limit ? bucket.next : 1;
      bucket = { limit, windowStart, tokens: 0, remaining: limit, exhausted: false, next, waiting: 0 };
      this.buckets.set(key, bucket);
    }
    return bucket;
  }
}

/**
 * 1000 API requests per minute per project (RATE_LIMIT_PER_MINUTE), counted in
 * the project's Durable Object and spent from leases held by the isolate
 * (ApiRateLeases; pass one per app so every route shares them).
 * Public (pk_) keys count in a bucket of their own: the key sits in browser
 * JavaScript, so anyone can spend it, and that must never use up the budget of
 * the project's server-side (sk_) calls.
 * `now` is read here and passed to the object, so the window a request counts in is decided by the app's clock.
 * `deferred` (POST /v1/send): the handler runs while a lease is fetched and
 * must await `c.var.rateLimitAllowed()` before it writes anything. A request
 * is still refused before its body is read when the window is known to be used
 * up, and the limiter is awaited first for a body over DEFERRED_BODY_BYTES.
 */
/** Bodies above this size (or of unknown size) are read only once the rate limiter allowed the request. */
export const DEFERRED_BODY_BYTES = 64 * 1024;
const largeBody = (contentLength: string | undefined) => !(Number(contentLength ?? Number.NaN) <= DEFERRED_BODY_BYTES);

export const rateLimit = (now: Clock = systemClock, options: { deferred?: boolean; leases?: ApiRateLeases } = {}) => {
  const leases = options.leases ?? new ApiRateLeases();
  return createMiddleware<AppBindings>(async (c, next) => {
    const { projectId, keyKind } = c.get("auth");
    const limit = readConfig(c.env).RATE_LIMIT_PER_MINUTE;
    const purpose = keyKind === "public" ? "public" : "api";
    const key = `${purpose}:${projectId}`;
    const at = now();
    // Deferred, but a refusal known already or a large body: the limiter answers before the body is read.
    const deferred = options.deferred && !leases.knownExhausted(key, limit, at) && !largeBody(c.req.header("Content-Length"));
    const answer = leases
      .take(key, () => projectLimiter(c.env, purpose, projectId), limit, at)
      .then((result) => {
        const headers = {
          "RateLimit-Limit": String(result.limit),
          "RateLimit-Remaining": String(result.remaining),
          "RateLimit-Reset": String(result.resetSeconds),
        };
        const refusal = result.allowed
          ? null
          : new ApiError("RATE_LIMITED", `Rate limit of ${result.limit} requests per minute exceeded`, {
              headers: { ...headers, "Retry-After": String(result.resetSeconds) },
              suggestion: `Retry after ${result.resetSeconds} seconds.`,
            });
        return { headers, refusal };
      });
    if (deferred) {
      // The handler reads while the limiter answers and awaits rateLimitAllowed()
      // before its first write, so a refused request still writes nothing.
      answer.catch(() => {}); // awaited below; never an unhandled rejection meanwhile
      c.set("rateLimitAllowed", async () => {
        const { refusal } = await answer;
        if (refusal) throw refusal;
      });
    } else {
      const { refusal } = await answer;
      if (refusal) throw refusal;
    }
    await next();
    const { headers, refusal } = await answer;
    // Deferred: a refused request is a 429 whatever the handler answered (a 422 found while reading, say).
    if (refusal) throw refusal;
    for (const [name, value] of Object.entries(headers)) c.header(name, value);
  });
};
