import { env } from "cloudflare:workers";
import { Webhook } from "standardwebhooks";
import { afterEach, describe, expect, it, vi } from "vitest";
import { call, expectError } from "../support/http";
import { heldQueue, receiver, webhookProject } from "../support/webhooks";
import type { DeliveryList, Webhook as WebhookView, WebhookDelivery, WebhookList, WebhookWithSecret } from "../support/api";

afterEach(() => vi.restoreAllMocks());

const URL_ = "https://hooks.example.net/in";

describe("the /webhooks resource", () => {
  it("create answers the secret once; get, list and patch never show it", async () => {
    receiver();
    const p = await webhookProject();
    const created = await p.call<WebhookWithSecret>("POST", "/webhooks", {
      url: URL_,
      events: ["email.bounced", "email.delivered", "email.bounced"],
      description: "ops",
    });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      id: expect.any(String),
      url: URL_,
      events: ["email.bounced", "email.delivered"],
      description: "ops",
      enabled: true,
      disabledReason: null,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/),
    });
    const id = created.body.id;
    const secret = created.body.secret;
    const got = await p.call<WebhookView>("GET", `/webhooks/${id}`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(Object.fromEntries(Object.entries(created.body).filter(([k]) => k !== "secret")));
    const list = await p.call<WebhookList>("GET", "/webhooks");
    expect(list.body).toMatchObject({ success: true, data: { hasMore: false, nextCursor: null, total: 1 } });
    expect(list.body.data.items[0]).not.toHaveProperty("secret");
    const patched = await p.call("PATCH", `/webhooks/${id}`, { events: [], enabled: false, description: null });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ id, events: [], enabled: false, description: null, url: URL_ });
    expect(patched.body).not.toHaveProperty("secret");
    for (const res of [got, list, patched]) expect(JSON.stringify(res.body)).not.toContain(secret.slice(6, 20));
    expect((await p.call("DELETE", `/webhooks/${id}`)).status).toBe(204);
    expectError(await p.call("GET", `/webhooks/${id}`), 404, "NOT_FOUND");
  });

  it("an unknown event type is a 422 naming events.<i>; bad bodies change nothing", async () => {
    const p = await webhookProject();
    const bad = expectError(await p.call("POST", "/webhooks", { url: URL_, events: ["email.sent", "email.exploded"] }), 422, "VALIDATION_ERROR");
    expect(bad.errors?.map((e) => e.field)).toEqual(["events.1"]);
    expectError(await p.call("POST", "/webhooks", { url: URL_, secret: "mine" }), 422);
    expectError(await p.call("POST", "/webhooks", { events: [] }), 422);
    expectError(await p.call("POST", "/webhooks", { url: `https://hooks.example.net/${"a".repeat(2100)}` }), 422);
    expect((await p.call<WebhookList>("GET", "/webhooks")).body.data.total).toBe(0);
  });

  it("needs a secret key; a public key is refused", async () => {
    const p = await webhookProject();
    expectError(await p.publicApi.get("/webhooks"), 403);
    expectError(await p.publicApi.post("/webhooks", { url: URL_ }), 403);
    expectError(await call("GET", "/webhooks"), 401);
    expectError(await call("POST", "/webhooks/some-id/test"), 401);
  });

  it("another project's endpoints and deliveries are 404, never shown", async () => {
    receiver();
    const a = await webhookProject("a");
    const b = await webhookProject("b");
    const hook = await a.createWebhook({ url: URL_ });
    const q = heldQueue();
    const test = await a.call<WebhookDelivery>("POST", `/webhooks/${hook.id}/test`, undefined, q.env);
    const deliveryId = test.body.id;
    for (const [method, path, body] of [
      ["GET", `/webhooks/${hook.id}`],
      ["PATCH", `/webhooks/${hook.id}`, { enabled: false }],
      ["DELETE", `/webhooks/${hook.id}`],
      ["POST", `/webhooks/${hook.id}/rotate-secret`],
      ["POST", `/webhooks/${hook.id}/test`],
      ["GET", `/webhooks/${hook.id}/deliveries`],
      ["POST", `/webhooks/${hook.id}/deliveries/${deliveryId}/retry`],
    ] as const) {
      expectError(await b.call(method, path, body), 404, "NOT_FOUND");
    }
    expect((await b.call<WebhookList>("GET", "/webhooks")).body.data).toMatchObject({ items: [], total: 0 });
    // Nothing changed for the owner, and b's own endpoint cannot reach a's delivery.
    expect((await a.call("GET", `/webhooks/${hook.id}`)).body).toMatchObject({ enabled: true });
    const own = await b.createWebhook({ url: URL_ });
    expectError(await b.call("POST", `/webhooks/${own.id}/deliveries/${deliveryId}/retry`), 404);
    expect(q.messages).toHaveLength(1);
  });

  it("a project may have 20 endpoints; the 21st is 403 QUOTA_EXCEEDED", async () => {
    const p = await webhookProject();
    for (let i = 0; i < 20; i++) await p.createWebhook({ url: `${URL_}/${i}` });
    expectError(await p.call("POST", "/webhooks", { url: URL_ }), 403, "QUOTA_EXCEEDED");
    expect((await p.call<WebhookList>("GET", "/webhooks?limit=100")).body.data.total).toBe(20);
  });

  it("one endpoint per URL: a second one on the same normalised URL is 409 naming the first, at create and at update", async () => {
    const p = await webhookProject();
    const other = await webhookProject("other");
    const first = await p.createWebhook({ url: URL_, events: ["email.sent"] });
    for (const twin of [URL_, "https://HOOKS.example.net:443/in", "https://hooks.example.net./in#frag", ` ${URL_} `]) {
      const res = expectError(await p.call("POST", "/webhooks", { url: twin, events: ["email.bounced"] }), 409, "CONFLICT");
      expect(res.message).toContain(first.id);
      expect(res.errors).toEqual([{ field: "url", message: `Webhook ${first.id} has this URL`, code: "duplicate_url" }]);
    }
    // Another path or query is another URL; another project may use the same one.
    const second = await p.createWebhook({ url: `${URL_}?kind=bounces` });
    await other.createWebhook({ url: URL_ });
    expectError(await p.call("PATCH", `/webhooks/${second.id}`, { url: "https://hooks.example.net/in" }), 409, "CONFLICT");
    expect((await p.call<WebhookView>("GET", `/webhooks/${second.id}`)).body.url).toBe(`${URL_}?kind=bounces`);
    // Its own URL again, or other fields, are fine.
    expect((await p.call("PATCH", `/webhooks/${first.id}`, { url: URL_, description: "same" })).status).toBe(200);
    expect((await p.call<WebhookList>("GET", "/webhooks")).body.data.total).toBe(2);
    // Concurrent creates of one URL: the unique index lets one through.
    const url = "https://hooks.example.net/race";
    const answers = await Promise.all([0, 1, 2, 3].map(() => p.call("POST", "/webhooks", { url })));
    expect(answers.map((a) => a.status).sort()).toEqual([201, 409, 409, 409]);
    // Deleting the first frees its URL.
    expect((await p.call("DELETE", `/webhooks/${first.id}`)).status).toBe(204);
    expect((await p.call("PATCH", `/webhooks/${second.id}`, { url: URL_ })).status).toBe(200);
  });

  it("/openapi.json documents the 409 of create and update", async () => {
    const doc = await call<{ paths: Record<string, Record<string, { responses: Record<string, { description: string }>; description?: string }>> }>(
      "GET",
      "/openapi.json",
    );
    expect(doc.body.paths["/webhooks"].post.responses["409"].description).toContain("CONFLICT");
    expect(doc.body.paths["/webhooks/{id}"].patch.responses["409"].description).toContain("CONFLICT");
    expect(doc.body.paths["/webhooks"].post.description).toContain("One endpoint per URL");
  });

  it("lists deliveries newest first with cursor pages and a status filter", async () => {
    receiver();
    const p = await webhookProject();
    const hook = await p.createWebhook({ url: URL_ });
    const q = heldQueue();
    for (let i = 0; i < 3; i++) await p.call("POST", `/webhooks/${hook.id}/test`, undefined, q.env);
    await q.deliver(q.take().slice(0, 1));
    const first = await p.call<DeliveryList>("GET", `/webhooks/${hook.id}/deliveries?limit=2`);
    expect(first.body.data).toMatchObject({ hasMore: true, total: 3 });
    const second = await p.call<DeliveryList>("GET", `/webhooks/${hook.id}/deliveries?limit=2&cursor=${first.body.data.nextCursor}`);
    const all = [...first.body.data.items, ...second.body.data.items];
    expect(all.map((d) => d.id)).toEqual([...all.map((d) => d.id)].sort().reverse());
    expect((await p.deliveries(hook.id, "?status=SUCCEEDED")).map((d) => d.id)).toEqual([all[2].id]);
    expect(await p.deliveries(hook.id, "?status=PENDING")).toHaveLength(2);
    expectError(await p.call("GET", `/webhooks/${hook.id}/deliveries?status=LOST`), 422);
  });
});

describe("SSRF: outside development", () => {
  const refused = [
    "http://hooks.example.net/in",
    "https://127.0.0.1/",
    "https://2130706433/",
    "https://0x7f.1/",
    "https://0177.0.0.1/",
    "https://127.1/",
    "https://[::1]/",
    "https://[::ffff:127.0.0.1]/",
    "https://[::ffff:7f00:1]/",
    "https://[::127.0.0.1]/",
    "https://[64:ff9b::7f00:1]/",
    "https://[2002:7f00:1::]/",
    "https://[fe80::1]/",
    "https://[fd00::1]/",
    "https://[::]/",
    "https://0.0.0.0/",
    "https://10.1.2.3/",
    "https://172.16.0.1/",
    "https://192.168.1.1/",
    "https://169.254.169.254/latest/meta-data",
    "https://100.64.0.1/",
    "https://localhost/",
    "https://LOCALHOST./",
    "https://db.internal/",
    "https://intranet/",
    "https://hooks.example.net:22/",
    "https://user:pass@hooks.example.net/",
    "ftp://hooks.example.net/",
  ];
  it.each(refused)("%s is refused at create and update with a 422 on url", async (url) => {
    const p = await webhookProject();
    const err = expectError(await p.call("POST", "/webhooks", { url }), 422, "VALIDATION_ERROR");
    expect(err.errors?.[0].field).toBe("url");
    receiver();
    const hook = await p.createWebhook({ url: URL_ });
    expectError(await p.call("PATCH", `/webhooks/${hook.id}`, { url }), 422);
    expect((await p.call<WebhookView>("GET", `/webhooks/${hook.id}`)).body.url).toBe(URL_);
  });

  for (const [type, address] of [
    ["A", "10.0.0.5"],
    ["A", "127.0.0.1"],
    ["A", "169.254.169.254"],
    ["AAAA", "::1"],
    ["AAAA", "fd00::1"],
    ["AAAA", "::ffff:127.0.0.1"],
    ["AAAA", "64:ff9b::a00:1"],
  ] as const) {
    it(`at call time, a name resolving to ${address} (${type}) is refused without a request`, async () => {
      const { calls, dns } = receiver();
      const p = await webhookProject();
      const hook = await p.createWebhook({ url: "https://sneaky.example.net/hook" });
      dns.set("sneaky.example.net", "A", type === "A" ? [address] : ["93.184.216.34"]);
      if (type === "AAAA") dns.set("sneaky.example.net", "AAAA", [address]);
      const q = heldQueue();
      await p.call("POST", `/webhooks/${hook.id}/test`, undefined, q.env);
      await q.deliver(q.take());
      const [d] = await p.deliveries(hook.id);
      expect(d.lastError).toBe(`Refused: sneaky.example.net resolves to ${address}, a private, loopback, link-local or otherwise internal address`);
      expect(d).toMatchObject({ status: "PENDING", attempts: 1, lastStatusCode: null });
      expect(calls).toHaveLength(0);
    });
  }
});

describe("secret rotation", () => {
  it("signs with both secrets for 24 hours (two v1 signatures), then only with the new one", async () => {
    const { calls } = receiver();
    const p = await webhookProject();
    const hook = await p.createWebhook({ url: URL_ });
    const rotated = await p.call<WebhookWithSecret>("POST", `/webhooks/${hook.id}/rotate-secret`);
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).toMatch(/^whsec_/);
    expect(rotated.body.secret).not.toBe(hook.secret);
    const q = heldQueue();
    await p.call("POST", `/webhooks/${hook.id}/test`, undefined, q.env);
    await q.deliver(q.take());
    const during = calls[0];
    expect(during.headers["webhook-signature"]).toMatch(/^v1,[A-Za-z0-9+/=]+ v1,[A-Za-z0-9+/=]+$/);
    expect(() => new Webhook(rotated.body.secret).verify(during.body, during.headers)).not.toThrow();
    expect(() => new Webhook(hook.secret).verify(during.body, during.headers)).not.toThrow();

    // 24 hours later (the overlap's end, set in D1 as the clock would) only the new secret signs.
    await env.DB.prepare("UPDATE webhook_endpoints SET previous_secret_expires_at = ?1 WHERE id = ?2")
      .bind(Date.now() - 1, hook.id)
      .run();
    await p.call("POST", `/webhooks/${hook.id}/test`, undefined, q.env);
    await q.deliver(q.take());
    const after = calls[1];
    expect(after.headers["webhook-signature"].split(" ")).toHaveLength(1);
    expect(() => new Webhook(rotated.body.secret).verify(after.body, after.headers)).not.toThrow();
    expect(() => new Webhook(hook.secret).verify(after.body, after.headers)).toThrow();
  });
});

describe("an endpoint failing for 5 days", () => {
  it("is disabled with its reason; its pending deliveries end FAILED; enabling it again clears the reason", async () => {
    const { calls } = receiver(() => 500);
    const p = await webhookProject();
    const hook = await p.createWebhook({ url: URL_ });
    const q = heldQueue();
    await p.call("POST", `/webhooks/${hook.id}/test`, undefined, q.env);
    await p.call("POST", `/webhooks/${hook.id}/test`, undefined, q.env);
    const [one, two] = q.take();
    await q.deliver([one]);
    expect((await p.call("GET", `/webhooks/${hook.id}`)).body).toMatchObject({ enabled: true, disabledReason: null });
    // The streak began 5 days ago (as the clock would have it after 5 days of failures).
    await env.DB.prepare("UPDATE webhook_endpoints SET failing_since = ?1 WHERE id = ?2")
      .bind(Date.now() - 5 * 86_400_000 - 1000, hook.id)
      .run();
    await q.deliver(q.take());
    const disabled = (await p.call<WebhookView>("GET", `/webhooks/${hook.id}`)).body;
    expect(disabled).toMatchObject({ enabled: false, disabledReason: expect.stringContaining("failed for 5 days") });
    const callsBefore = calls.length;
    await q.deliver([two]);
    expect(calls).toHaveLength(callsBefore);
    const failed = await p.deliveries(hook.id, "?status=FAILED");
    expect(failed.map((d) => d.lastError)).toContain(`The webhook is disabled: ${disabled.disabledReason}`);
    expectError(await p.call("POST", `/webhooks/${hook.id}/test`), 400, "INVALID_STATE");
    const enabled = await p.call("PATCH", `/webhooks/${hook.id}`, { enabled: true });
    expect(enabled.body).toMatchObject({ enabled: true, disabledReason: null });
  });

  it("a success ends the failure streak", async () => {
    let answer = 500;
    receiver(() => answer);
    const p = await webhookProject();
    const hook = await p.createWebhook({ url: URL_ });
    const q = heldQueue();
    await p.call("POST", `/webhooks/${hook.id}/test`, undefined, q.env);
    await q.deliver(q.take());
    const streak = await env.DB.prepare("SELECT failing_since FROM webhook_endpoints WHERE id = ?1").bind(hook.id).first<{ failing_since: number }>();
    expect(streak?.failing_since).toBeGreaterThan(0);
    answer = 200;
    await q.deliver(q.take());
    const after = await env.DB.prepare("SELECT failing_since FROM webhook_endpoints WHERE id = ?1").bind(hook.id).first<{ failing_since: number | null }>();
    expect(after?.failing_since).toBeNull();
  });
});
