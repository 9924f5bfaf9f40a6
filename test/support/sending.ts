import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { expect } from "vitest";
import { getDb } from "../../src/db/client";
import { domains } from "../../src/db/schema";
import worker from "../../src/index";
import type { Env, SendEmailMessage } from "../../src/env";
import { call, newProject, type TestProject } from "./http";
import { fakeDns } from "../fakes/dns";
import { recordingQueue } from "../fakes/queue";
import { fakeSes, SES_CREDENTIALS, SES_ENDPOINT } from "../fakes/ses";
import { runConsumer } from "./queues";
import type { Domain, SendResponse } from "./api";
import { SEND_QUEUE } from "../../src/messages";

let domainCounter = 0;

/**
 * Adds a fresh sending domain to the project through the API, publishes its
 * records in the fake DNS and verifies it; returns the domain name.
 */
export async function verifiedDomain(project: TestProject, dns: ReturnType<typeof fakeDns>): Promise<string> {
  const domain = `send${++domainCounter}-${crypto.randomUUID().slice(0, 8)}.test`;
  const created = await project.api.post<Domain>("/domains", { domain });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  dns.publish(created.body.records);
  const verified = await project.api.post<Domain>(`/domains/${created.body.id}/verify`);
  expect(verified.body.status, JSON.stringify(verified.body)).toBe("VERIFIED");
  return domain;
}

/**
 * A VERIFIED sending domain written straight to D1 (no DNS, no DKIM key: neither the capture
 * provider nor a send path's cache test needs one); returns its name.
 */
export async function insertVerifiedDomain(projectId: string, prefix = "d"): Promise<string> {
  const name = `${prefix}-${crypto.randomUUID().slice(0, 8)}.test`;
  await getDb(env.DB).insert(domains).values({
    id: crypto.randomUUID(),
    projectId,
    name,
    status: "VERIFIED",
    dkimSelector: prefix,
    dkimPublicKey: "",
    dkimPrivateKeyEncrypted: "",
    records: [],
  });
  return name;
}

/**
 * A project with a VERIFIED sending domain (verified through the API against
 * the fake DNS), the fake SES at the HTTP boundary, and the Worker wired to
 * them with a recording queue. `send` posts to /v1/send; `deliver` runs the
 * real queue consumer on recorded messages.
 */
export async function sendingSetup(overrides: Partial<Env> = {}, options: { shard?: number } = {}) {
  const ses = fakeSes();
  /** More of the outside world (e.g. the fake SNS), added with `serve`. */
  const others: ((request: Request) => Response | undefined | Promise<Response | undefined>)[] = [];
  const dns = fakeDns(async (request) => {
    if (request.url.startsWith(SES_ENDPOINT)) return ses.handle(request);
    for (const handler of others) {
      const response = await handler(request);
      if (response) return response;
    }
    return new Response("no", { status: 599 });
  });
  const queue = recordingQueue();
  const testEnv = {
    ...env,
    EMAIL_PROVIDER: "ses",
    SES_ENDPOINT,
    ...SES_CREDENTIALS,
    EMAIL_QUEUE: queue as unknown as Queue<SendEmailMessage>,
    ...overrides,
  } as Env;

  const project = await newProject("sender", { shard: options.shard });
  const domain = await verifiedDomain(project, dns);

  const request = <T = unknown>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
    call<T>(method, path, { key: project.secretKey, body, headers: { "Content-Type": "application/json", ...headers }, env: testEnv });

  /** Runs the consumer on the given messages (default: everything queued so far) with their delivery attempt number. */
  async function deliver(messages = queue.take().map((m) => m.body), attempts = 1) {
    return runConsumer(
      SEND_QUEUE,
      testEnv,
      messages.map((body) => ({ body })),
      { attempts },
    );
  }

  /** Runs the Worker's real scheduled handler (every cron job) as the Cron Trigger would at `at`. */
  async function tick(at: Date) {
    const ctx = createExecutionContext();
    await worker.scheduled!(createScheduledController({ scheduledTime: at.getTime(), cron: "* * * * *" }), testEnv, ctx);
    await waitOnExecutionContext(ctx);
  }

  return {
    project,
    domain,
    tick,
    /** Answers outgoing requests the handler knows (it returns undefined for others). */
    serve(handler: (request: Request) => Response | undefined | Promise<Response | undefined>) {
      others.push(handler);
    },
    from: `hello@${domain}`,
    ses,
    dns,
    queue,
    env: testEnv,
    /** POST /v1/send; the body typed as the success response (errors go through expectError). */
    send: (body: unknown, headers?: Record<string, string>) => request<SendResponse>("POST", "/v1/send", body, headers),
    get: <T = unknown>(path: string) => request<T>("GET", path),
    /** Any API call through the Worker with this setup's env (e.g. EMAIL_PROVIDER=ses for POST /domains). */
    post: <T = unknown>(path: string, body?: unknown) => request<T>("POST", path, body),
    request,
    deliver,
    ctx: () => createExecutionContext(),
  };
}
