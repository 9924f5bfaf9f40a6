import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import worker from "../src/index";
import { deadLetterQueue, SEND_QUEUE } from "../src/messages";

describe("queue dispatch", () => {
  it("a batch from a queue no consumer is registered for throws, naming the queue, and acks nothing", async () => {
    const batch = createMessageBatch<unknown>("edge-mail-sned", [{ id: "x1", timestamp: new Date(), attempts: 1, body: { emailId: "e", projectId: "p" } }]);
    const ctx = createExecutionContext();
    await expect(worker.queue!(batch as MessageBatch<unknown>, env, ctx)).rejects.toThrow(/No consumer for queue "edge-mail-sned"/);
    const result = await getQueueResult(batch, ctx);
    expect(result.explicitAcks).toEqual([]);
    expect(result.retryMessages).toEqual([]);
  });

  it("a consumer that throws has its whole batch retried with back-off, not dropped", async () => {
    // The dead-letter consumer writes to D1; a D1 that fails every statement makes it throw.
    const brokenDb = new Proxy(env.DB, {
      get(target, prop) {
        if (prop === "prepare" || prop === "batch")
          return () => {
            throw new Error("D1 unavailable (test)");
          };
        return Reflect.get(target, prop, target);
      },
    });
    const batch = createMessageBatch<unknown>(deadLetterQueue(SEND_QUEUE), [
      { id: "d1", timestamp: new Date(), attempts: 2, body: { emailId: "e1", projectId: "p" } },
      { id: "d2", timestamp: new Date(), attempts: 2, body: { emailId: "e2", projectId: "p" } },
    ]);
    // getQueueResult does not report retry delays, so record them.
    const delays: (number | undefined)[] = [];
    for (const message of batch.messages) {
      const retry = message.retry.bind(message);
      Object.defineProperty(message, "retry", {
        value: (options?: QueueRetryOptions) => {
          delays.push(options?.delaySeconds);
          retry(options);
        },
      });
    }
    const ctx = createExecutionContext();
    await worker.queue!(batch as MessageBatch<unknown>, { ...env, DB: brokenDb }, ctx);
    const result = await getQueueResult(batch, ctx);
    expect(result.explicitAcks).toEqual([]);
    expect(result.retryMessages.map((r: { msgId: string }) => r.msgId).sort()).toEqual(["d1", "d2"]);
    expect(delays).toHaveLength(2);
    expect(delays.every((d) => (d ?? 0) >= 5)).toBe(true);
  });
});
