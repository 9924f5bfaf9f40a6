/**
 * Waiting on work another request started (a key lookup, a rate-limit lease
 * that concurrent requests of an isolate share).
 *
 * workerd cancels a request as hung ("would never generate a response", a
 * 500) when it waits with nothing of its own pending: it cannot tell that
 * another request's I/O will settle the promise. Under sustained load in a
 * hot-reloaded wrangler dev that happened in 5 of 6 runs of about 16 s, and in
 * none of 4 with this wait (README "What a request costs"). So the wait
 * keeps a timer of the waiting request's own, and gives up after `timeoutMs`
 * (the other request may have been cancelled, its promise then never
 * settles): the caller then does the work itself.
 */
export type SharedOutcome<T> = { settled: true; value: T } | { settled: false };

const TICK_MS = 1_000;
const TICK = Symbol("tick");

export async function awaitShared<T>(shared: Promise<T>, timeoutMs: number): Promise<SharedOutcome<T>> {
  for (let waited = 0; waited < timeoutMs; waited += TICK_MS) {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const tick = new Promise<typeof TICK>((resolve) => {
      timer = setTimeout(resolve, Math.min(TICK_MS, timeoutMs - waited), TICK);
    });
    try {
      const result = await Promise.race([shared, tick]);
      if (result !== TICK) return { settled: true, value: result as T };
    } finally {
      clearTimeout(timer);
    }
  }
  return { settled: false };
}
