/**
 * Polls until `check` passes (or throws its last failure after `timeoutMs`): for what a test waits to
 * happen. That something did not happen is read on the record after draining the queue, never waited for.
 */
export async function eventually<T>(check: () => Promise<T>, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}
