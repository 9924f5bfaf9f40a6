import { env } from "cloudflare:workers";
import { expect } from "vitest";
import type { Env, WebhookQueueMessage } from "../../src/env";
import { fakeDns } from "../fakes/dns";
import { call, newProject } from "./http";
import { heldQueue as heldQueueOf } from "./queues";
import { WEBHOOK_QUEUE_NAME } from "../../src/messages";
import type { DeliveryList, WebhookWithSecret } from "./api";

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
export const heldQueue = (base?: Env) => heldQueueOf<WebhookQueueMessage>("WEBHOOK_QUEUE", WEBHOOK_QUEUE_NAME, base);

/**
 * The types of the webhook events recorded for a project (webhook_events), oldest first. An event is
 * written in the batch of the change it reports, so once that change is done, "no other event" is read here.
 */
export async function recordedEvents(projectId: string, types?: readonly string[]): Promise<string[]> {
  const { results } = await env.DB.prepare("SELECT type FROM webhook_events WHERE project_id = ? ORDER BY id").bind(projectId).all<{ type: string }>();
  return results.map((r) => r.type).filter((type) => !types || types.includes(type));
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
