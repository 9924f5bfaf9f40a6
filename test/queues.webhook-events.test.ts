import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { Env, WebhookQueueMessage } from "../src/env";
import type { WebhookWithSecret } from "./support/api";
import { call, newProject } from "./support/http";

/** A webhook queue producer whose every call takes `ms`, as a queue call over the network does. */
function slowQueue(ms: number) {
  const messages: WebhookQueueMessage[] = [];
  let calls = 0;
  const queue = {
    async send(body: WebhookQueueMessage) {
      calls++;
      await new Promise((r) => setTimeout(r, ms));
      messages.push(body);
    },
    async sendBatch(batch: { body: WebhookQueueMessage }[]) {
      calls++;
      await new Promise((r) => setTimeout(r, ms));
      messages.push(...batch.map((m) => m.body));
    },
  };
  return { messages, calls: () => calls, queue: queue as unknown as Queue<WebhookQueueMessage> };
}

describe("handing recorded events to the webhook queue", () => {
  it("concurrent writes hand over every event once, in fewer queue calls than requests, and none waits for another's call", async () => {
    const q = slowQueue(50);
    // Development: the endpoint's host needs no public DNS (it is never called here).
    const testEnv = { ...(env as Env), ENVIRONMENT: "development", WEBHOOK_QUEUE: q.queue } as Env;
    const project = await newProject("handover");
    const api = <T>(method: string, path: string, body?: unknown) => call<T>(method, path, { key: project.secretKey, body, env: testEnv });
    const hook = await api<WebhookWithSecret>("POST", "/webhooks", { url: "http://127.0.0.1:9/in", events: ["contact.created"] });
    expect(hook.status, JSON.stringify(hook.body)).toBe(201);

    const writes = await Promise.all(Array.from({ length: 12 }, (_, i) => api<{ id: string }>("POST", "/contacts", { email: `h${i}@example.com` })));
    expect(writes.map((w) => w.status)).toEqual(Array(12).fill(201));

    // Every contact.created once (each call above waited for its own background work)...
    expect(q.messages).toHaveLength(12);
    expect(new Set(q.messages.map((m) => (m.kind === "event" ? m.eventId : ""))).size).toBe(12);
    expect(q.messages.every((m) => m.kind === "event" && m.projectId === project.id)).toBe(true);
    // ...in fewer queue calls: the writes that arrived while one call was in flight went in the next.
    expect(q.calls()).toBeLessThan(12);
  });
});
