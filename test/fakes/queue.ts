import type { SendEmailMessage } from "../../src/env";

/** Stands in for the queue producer so a test decides when the consumer runs. */
export function recordingQueue() {
  const messages: { body: SendEmailMessage; delaySeconds?: number }[] = [];
  let failures = 0;
  const fail = () => {
    if (failures <= 0) return;
    failures--;
    throw new Error("Queue send failed: the queue is unavailable (test)");
  };
  return {
    messages,
    async send(body: SendEmailMessage, options?: { delaySeconds?: number }) {
      fail();
      messages.push({ body, delaySeconds: options?.delaySeconds });
    },
    async sendBatch(batch: { body: SendEmailMessage; delaySeconds?: number }[]) {
      fail();
      messages.push(...batch);
    },
    /** The next `n` send/sendBatch calls throw, as a queue outage does. */
    failNext(n = 1) {
      failures += n;
    },
    take() {
      return messages.splice(0, messages.length);
    },
  };
}
