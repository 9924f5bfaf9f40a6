import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import worker from "../../src/index";
import type { Env } from "../../src/env";

/** A message as a test hands it to a consumer; `id` and `attempts` default to a fresh id and `attempts` of the run. */
export interface Delivered<B = unknown> {
  body: B;
  id?: string;
  attempts?: number;
}

/** What getQueueResult tells of the batch, and what it does not. */
export interface ConsumerRun<B> {
  outcome: string;
  ackAll: boolean;
  /** Ids of the messages acked one by one. */
  explicitAcks: string[];
  /** The messages retried one by one. */
  retryMessages: { msgId: string }[];
  /** The retried messages' delays, in the order the consumer asked (getQueueResult does not report them). */
  retryDelays: (number | undefined)[];
  /** The bodies of the retried messages, in batch order. */
  retriedBodies: B[];
  /** What the handler threw (only with `mayThrow`; otherwise it is thrown). */
  thrown?: unknown;
}

/**
 * The one way tests run a queue consumer: the Worker's real queue handler
 * (src/index.ts, then src/queue.ts) on one batch of `queue` with these messages
 * and this env, as Cloudflare Queues would deliver it.
 */
export async function runConsumer<B>(
  queue: string,
  env: Env,
  messages: Delivered<B>[],
  options: { attempts?: number; mayThrow?: boolean } = {},
): Promise<ConsumerRun<B>> {
  const batch = createMessageBatch<B>(
    queue,
    messages.map((m, i) => ({
      id: m.id ?? `m${i}-${crypto.randomUUID()}`,
      timestamp: new Date(),
      attempts: m.attempts ?? options.attempts ?? 1,
      body: m.body,
    })),
  );
  const retryDelays: (number | undefined)[] = [];
  for (const message of batch.messages) {
    const retry = message.retry.bind(message);
    Object.defineProperty(message, "retry", {
      value: (retryOptions?: QueueRetryOptions) => {
        retryDelays.push(retryOptions?.delaySeconds);
        retry(retryOptions);
      },
    });
  }
  const ctx = createExecutionContext();
  let thrown: unknown;
  try {
    await worker.queue!(batch as MessageBatch<unknown>, env, ctx);
  } catch (err) {
    if (!options.mayThrow) throw err;
    thrown = err;
  }
  const result = await getQueueResult(batch, ctx);
  const retried = new Set(result.retryMessages.map((r: { msgId: string }) => r.msgId));
  return {
    ...result,
    retryDelays,
    retriedBodies: batch.messages.filter((m) => retried.has(m.id)).map((m) => m.body),
    thrown,
  };
}

/**
 * Stands in for one queue binding's producer (`binding` of `base`): what the Worker sends is held
 * here, and the test runs the real consumer on it when it chooses. Absence is then proved by
 * draining and counting rows, never by waiting for a consumer that might still come.
 */
export function heldQueue<B = unknown>(binding: keyof Env, queueName: string, base: Env = env as Env) {
  const messages: { body: B; delaySeconds?: number }[] = [];
  const queue = {
    async send(body: B, options?: { delaySeconds?: number }) {
      messages.push({ body, delaySeconds: options?.delaySeconds });
    },
    async sendBatch(batch: { body: B; delaySeconds?: number }[]) {
      messages.push(...batch.map((m) => ({ body: m.body, delaySeconds: m.delaySeconds })));
    },
  };
  const heldEnv = { ...base, [binding]: queue } as Env;
  let n = 0;
  return {
    messages,
    env: heldEnv,
    take() {
      return messages.splice(0, messages.length);
    },
    /** Runs the Worker's queue handler on these messages with this env (follow-up messages are held here again). */
    async deliver(batchMessages: { body: B }[], options: { env?: Env; attempts?: number } = {}) {
      return runConsumer(
        queueName,
        options.env ?? heldEnv,
        batchMessages.map((m) => ({ id: `m${++n}`, body: m.body })),
        options,
      );
    },
    /** Delivers whatever is held until nothing is (bounded). */
    async drain(rounds = 20) {
      for (let i = 0; i < rounds && messages.length > 0; i++) await this.deliver(this.take());
    },
  };
}
