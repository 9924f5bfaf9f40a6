import { env } from "cloudflare:workers";
import { expect } from "vitest";
import type { Env, WebhookQueueMessage } from "../../src/env";
import { fakeDns } from "../fakes/dns";
import { call, newProject } from "./http";
import { runConsumer } from "./queues";
import { WEBHOOK_QUEUE_NAME } from "../../src/messages";
import type { DeliveryList, WebhookWithSecret } from "./api";

/** Polls until `check` passes (or throws its last failure after `timeoutMs`). */
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

export interface ReceivedCall {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: string;
}

/**
 * A webhook receiver at the HTTP boundary (every outbound fetch that is not
 * DNS-over-HTTPS), answering with `status()`; and the public host
 * hooks.example.net resolving to a public address through the fake DNS.
 */
export function receiver(status: (call: ReceivedCall) => number | Response = () => 200) {
  const calls: ReceivedCall[] = [];
  const dns = fakeDns(async (request) => {
    const received = { url: request.url, method: request.method, headers: Object.fromEntries(request.headers), body: await request.text() };
    calls.push(received);
    const answer = status(received);
    if (answer instanceof Response) return answer;
    return new Response([101, 204, 205, 304].includes(answer) ? null : "ok", { status: answer });
  });
  dns.set("hooks.example.net", "A", ["93.184.216.34"]);
  dns.set("other.example.net", "A", ["93.184.216.35"]);
  return { calls, dns };
}

/** Stands in for the webhook queue's producer: the test decides when the consumer runs. */
export function heldQueue() {
  const messages: { body: WebhookQueueMessage; delaySeconds?: number }[] = [];
  const queue = {
    async send(body: WebhookQueueMessage, options?: { delaySeconds?: number }) {
      messages.push({ body, delaySeconds: options?.delaySeconds });
    },
    async sendBatch(batch: { body: WebhookQueueMessage; delaySeconds?: number }[]) {
      messages.push(...batch.map((m) => ({ body: m.body, delaySeconds: m.delaySeconds })));
    },
  };
  const heldEnv = { ...(env as Env), WEBHOOK_QUEUE: queue as unknown as Queue<WebhookQueueMessage> } as Env;
  let n = 0;
  return {
    messages,
    env: heldEnv,
    take() {
      return messages.splice(0, messages.length);
    },
    /**
     * Runs the Worker's queue handler (the real consumer) on these messages with
     * this env (follow-up messages are held here again); returns the batch's acks and retries.
     */
    async deliver(batchMessages: { body: WebhookQueueMessage }[], options: { env?: Env; attempts?: number } = {}) {
      return runConsumer(
        WEBHOOK_QUEUE_NAME,
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

/** A project with helpers for its webhooks (API calls may go through another env, e.g. a held queue). */
export async function webhookProject(name = "webhooks") {
  const project = await newProject(name);
  const api = <T = unknown>(method: string, path: string, body?: unknown, callEnv?: Env) =>
    call<T>(method, path, { key: project.secretKey, body, ...(callEnv ? { env: callEnv } : {}) });
  async function createWebhook(body: Record<string, unknown>) {
    const res = await api<WebhookWithSecret>("POST", "/webhooks", body);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body;
  }
  async function deliveries(webhookId: string, query = "") {
    const res = await api<DeliveryList>("GET", `/webhooks/${webhookId}/deliveries${query}`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.data.items;
  }
  return { ...project, call: api, createWebhook, deliveries };
}
