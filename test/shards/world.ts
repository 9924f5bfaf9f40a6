import { env } from "cloudflare:workers";
import { expect } from "vitest";
import { createApp } from "../../src/app";
import type { Env } from "../../src/env";
import { IMPORT_QUEUE, type ImportChunkMessage } from "../../src/messages";
import { recordingQueue } from "../fakes/queue";
import { decodeWords } from "../fakes/ses";
import { notification, sesEvent, sign, snsHandler } from "../fakes/sns";
import type { CampaignResponse, Email, Execution, ImportJob, SendResponse, Template, Webhook, WebhookDelivery } from "../support/api";
import { BULK_QUEUE, campaignSetup, SEND_QUEUE } from "../support/campaigns";
import { call, newProject } from "../support/http";
import { runConsumer } from "../support/queues";
import { verifiedDomain } from "../support/sending";
import { eventually } from "../support/wait";
import { move, shard } from "./support";

/** The shard a project is on, as the control database says (no project_shards row: 0). */
export async function shardOf(projectId: string): Promise<number> {
  return ((await env.DB.prepare("SELECT shard FROM project_shards WHERE project_id = ?1").bind(projectId).first<number>("shard")) ?? 0) as number;
}

/**
 * Two projects on the two shards of the tests, sharing one fake SES, one fake DNS and SNS,
 * a webhook receiver and recording send, bulk and import queues (the webhook and workflow
 * queues are the real ones). Each project: its key, its verified domain and a request helper.
 */
export async function twoShards() {
  const imports = recordingQueue();
  const s = await campaignSetup({ IMPORT_QUEUE: imports as unknown as Queue<ImportChunkMessage> });
  s.serve(snsHandler);
  const hooks: { url: string; body: string }[] = [];
  s.dns.set("hooks.example.net", "A", ["93.184.216.34"]);
  s.serve(async (request) => {
    if (!request.url.startsWith("https://hooks.example.net/")) return undefined;
    hooks.push({ url: request.url, body: await request.text() });
    return new Response("ok");
  });

  const other = await newProject("second");
  const otherDomain = await verifiedDomain(other, s.dns);
  const tenant = (project: { id: string; secretKey: string }, from: string) => ({
    id: project.id,
    key: project.secretKey,
    from,
    request: <T = unknown>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
      call<T>(method, path, {
        key: project.secretKey,
        body,
        headers: { "Content-Type": "application/json", ...headers },
        env: s.env,
        // A fresh app each call (no key cache): a move in these tests skips its waits for the isolates' caches.
        handler: createApp().fetch,
        waitForBackground: false,
      }),
    upload: <T = ImportJob>(csv: string) =>
      call<T>("POST", "/contacts/imports?subscribed=true", {
        key: project.secretKey,
        rawBody: csv,
        headers: { "Content-Type": "text/csv" },
        env: s.env,
        // A fresh app each call (no key cache): a move in these tests skips its waits for the isolates' caches.
        handler: createApp().fetch,
        waitForBackground: false,
      }),
  });
  const a = tenant(s.project, s.from);
  const b = tenant(other, `hello@${otherDomain}`);
  // One project on each shard: where placement put them, or moved there while still empty.
  const [first, second] = (await shardOf(a.id)) === 1 ? [b, a] : [a, b];
  for (const [p, n] of [
    [first, 0],
    [second, 1],
  ] as const) {
    if ((await shardOf(p.id)) !== n) expect(await move(p.id, n)).toMatchObject({ status: "complete" });
  }

  /** Runs the send, bulk and import consumers on whatever they have queued (redelivering retries) until all are empty. */
  async function pump() {
    for (let round = 0; round < 50; round++) {
      const work = [
        [SEND_QUEUE, s.queue.take()],
        [BULK_QUEUE, s.bulk.take()],
        [IMPORT_QUEUE, imports.take()],
      ] as const;
      if (work.every(([, list]) => list.length === 0)) return;
      for (const [queue, list] of work) {
        if (list.length === 0) continue;
        const { retriedBodies } = await runConsumer(queue, s.env, list, { attempts: round + 1 });
        const back = queue === SEND_QUEUE ? s.queue : queue === BULK_QUEUE ? s.bulk : imports;
        for (const body of retriedBodies) back.messages.push({ body: body as never });
      }
    }
    throw new Error("the queues did not drain");
  }

  return { s, shards: [first, second] as const, hooks, pump, imports };
}

export type Tenant = Awaited<ReturnType<typeof twoShards>>["shards"][number];

/**
 * Everything a tenant does, through the HTTP API and the real consumers: a webhook endpoint, a
 * workflow, contacts from an import, an event that starts the workflow (which sends), a
 * transactional send, a campaign to every contact, a click on the unsubscribe link of the
 * campaign's mail, and an SES bounce for the transactional email. Answers what a user would keep.
 */
export async function liveALife(w: Awaited<ReturnType<typeof twoShards>>, p: Tenant, tag: string) {
  const ok = (res: { status: number; body: unknown }, status = 200) => expect(res.status, JSON.stringify(res.body)).toBe(status);

  const hook = await p.request<Webhook>("POST", "/webhooks", { url: `https://hooks.example.net/${tag}`, events: [] });
  ok(hook, 201);
  const template = await p.request<Template>("POST", "/templates", {
    name: "Welcome",
    subject: `Welcome ${tag}`,
    body: "<p>Hi</p>",
    type: "TRANSACTIONAL",
    from: p.from,
  });
  ok(template, 201);
  const workflow = await p.request<{ id: string }>("POST", "/workflows", {
    name: "welcome",
    enabled: true,
    eventName: "signup",
    steps: [{ id: "mail", type: "SEND_EMAIL", config: { templateId: template.body.id } }],
  });
  ok(workflow, 201);

  // Import: contacts from a CSV (the file in R2, its chunks through the import queue).
  const ann = `ann-${tag}@example.org`;
  const bob = `bob-${tag}@example.org`;
  const upload = await p.upload(`email,plan\n${ann},pro\n${bob},free\n`);
  expect(upload.status, JSON.stringify(upload.body)).toBeLessThan(300);
  await w.pump();
  const job = await p.request<ImportJob>("GET", `/contacts/imports/${upload.body.id}`);
  expect(job.body).toMatchObject({ status: "COMPLETED", created: 2, failed: 0 });

  // Track: an event that starts the workflow, whose execution sends through the real queues.
  ok(await p.request("POST", "/v1/track", { email: ann, event: "signup" }));
  const execution = await eventually(async () => {
    const list = await p.request<{ data: { items: Execution[] } }>("GET", `/workflows/${workflow.body.id}/executions`);
    expect(list.body.data.items.map((e) => e.status)).toEqual(["COMPLETED"]);
    return list.body.data.items[0];
  });

  // Send: a transactional email, sent by the send consumer through the fake SES.
  const sent = await p.request<SendResponse>("POST", "/v1/send", { to: bob, from: p.from, subject: `Hello ${tag}`, body: "<p>Hello</p>" });
  ok(sent);
  const transactional = sent.body.data.emails[0].email;
  await w.pump();
  expect((await p.request<Email>("GET", `/emails/${transactional}`)).body.status).toBe("SENT");

  // Campaign: to every contact (marketing mail, with an unsubscribe link).
  const campaign = await p.request<CampaignResponse>("POST", "/campaigns", {
    name: "News",
    subject: `News ${tag}`,
    body: "<p>News</p>",
    from: p.from,
    audienceType: "ALL",
  });
  ok(campaign, 201);
  ok(await p.request("POST", `/campaigns/${campaign.body.data.id}/send`, {}));
  await w.pump();
  const news = w.s.ses.calls.filter((c) => decodeWords(c.mime.headers.subject) === `News ${tag}`);
  expect(news.map((c) => c.to[0]).sort()).toEqual([ann, bob]);

  // Unsubscribe: the link in Bob's campaign mail (one click, RFC 8058), no key.
  const link = /<(https?:\/\/[^>]*\/unsubscribe\/[^>]+)>/.exec(news.find((c) => c.to[0] === bob)!.mime.headers["list-unsubscribe"])?.[1];
  expect(link).toBeDefined();
  const unsubscribed = await call("POST", link!, {
    env: w.s.env,
    rawBody: "List-Unsubscribe=One-Click",
    headers: { "Content-Type": "application/x-www-form-urlencoded" },
  });
  expect(unsubscribed.status).toBe(200);

  // SES feedback: a permanent bounce of the transactional email, routed by the tags it was sent with.
  const sesCall = w.s.ses.calls.find((c) => decodeWords(c.mime.headers.subject) === `Hello ${tag}`)!;
  const bounce = await sign(notification(sesEvent("Bounce", sesCall)));
  const fed = await call("POST", "/webhooks/ses", { env: w.s.env, rawBody: JSON.stringify(bounce), headers: { "Content-Type": "text/plain" } });
  expect(fed.status, JSON.stringify(fed.body)).toBe(200);
  expect((await p.request<Email>("GET", `/emails/${transactional}`)).body.status, `${tag}: ${JSON.stringify(fed.body)}`).toBe("BOUNCED");

  // Webhooks: the endpoint got this project's events (through the real webhook queue).
  await eventually(async () => expect(w.hooks.filter((h) => h.url.endsWith(`/${tag}`)).length).toBeGreaterThan(3));
  const deliveries = await p.request<{ data: { items: WebhookDelivery[] } }>("GET", `/webhooks/${hook.body.id}/deliveries`);
  expect(deliveries.body.data.items.length).toBeGreaterThan(3);

  const contacts = await p.request<{ contacts: { id: string; email: string; subscribed: boolean }[] }>("GET", "/contacts");
  expect(contacts.body.contacts.find((c) => c.email === bob)?.subscribed).toBe(false);
  return { hook: hook.body.id, workflow: workflow.body.id, execution: execution.id, transactional, campaign: campaign.body.data.id, ann, bob };
}

export type { CampaignResponse, Email, Execution, SendResponse, WebhookDelivery };
export { eventually, notification, sesEvent, sign, shard, env as testEnv };
export type { Env };
