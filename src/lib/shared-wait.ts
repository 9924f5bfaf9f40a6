/**
 * Waiting on work another request started (a key lookup, a rate-limit lease
 * that concurrent requests of an isolate share).
 *
 * workerd cancels a request that waits only on another request's I/O (a
 * 500, "would never generate a response"); the wait keeps a timer of its own
 * and gives up after `timeoutMs`, and the caller then does the work itself.
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
