import type { AfterCommit } from "./after-commit";

/**
 * What a queue consumer sees and answers. Consumers (one per queue, see
 * src/queue.ts) get the messages' ids, bodies and attempt numbers and return
 * one verdict per message, in order; src/queue.ts alone acks or retries.
 */
export interface QueuedMessage<Body> {
  readonly id: string;
  readonly body: Body;
  /** 1 on the first delivery. */
  readonly attempts: number;
}

/** Done with the message (handled, or nothing left to do), or deliver it again after a delay. */
export type Verdict = { readonly ack: true } | { readonly retryAfterSeconds: number };

export const ACK: Verdict = { ack: true };
export const retryAfter = (seconds: number): Verdict => ({ retryAfterSeconds: Math.max(0, Math.round(seconds)) });

/** A consumer: the batch's messages, the bindings, and the batch's door out (what its writes recorded leaves after the batch). */
export type QueueConsumer<Body = unknown, E = unknown> = (messages: readonly QueuedMessage<Body>[], env: E, afterCommit: AfterCommit) => Promise<Verdict[]>;

/** Exponential back-off with jitter for provider throttling and outages: ~5 s, 10 s, 20 s ... capped at 15 min. */
export function backoffSeconds(attempt: number): number {
  const base = Math.min(900, 5 * 2 ** Math.max(0, attempt - 1));
  return Math.round(base + Math.random() * base * 0.5);
}
