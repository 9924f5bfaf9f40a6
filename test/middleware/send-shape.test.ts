import { createExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import type { Env } from "../../src/env";
import { DEFERRED_BODY_BYTES } from "../../src/middleware/rate-limit";
import { MAX_CUSTOM_HEADER_BYTES, MAX_CUSTOM_HEADERS, MAX_SEND_JSON_CHARS_OUTSIDE_ATTACHMENTS } from "../../src/schemas/send";
import { BASE, call, expectError, newProject } from "../support/http";
import { sendingSetup } from "../support/sending";

const MINUTE = 60_000;
/** A minute far from today's wall clock and from rate-limit.test.ts's, different for each test. */
let minuteCounter = 29_300_000;

/**
 * POST /v1/send through a fresh app (its own rate-limit leases) with the
 * limiter's clock fixed inside one minute. Answers the response and whether
 * the Worker read the request's body (Content-Length is set, so nothing
 * reads it on the way in but the handler).
 */
function sendApp(limit: number) {
  const at = ++minuteCounter * MINUTE + 1_000;
  const app = createApp({ now: () => at });
  const testEnv = { ...env, RATE_LIMIT_PER_MINUTE: String(limit) } as Env;
  return async (key: string, text: string) => {
    const request = new Request(`${BASE}/v1/send`, {
      method: "POST",
      headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json", "Content-Length": String(new TextEncoder().encode(text).length) },
      body: text,
    });
    const response = await app.fetch(request, testEnv, createExecutionContext());
    const body = await response.json();
    return { status: response.status, headers: response.headers, body: body as any, bodyRead: request.bodyUsed };
  };
}

const small = (to = "ada@example.com") => JSON.stringify({ to, from: "hi@unverified.test", subject: "Hi", body: "<p>Hi</p>" });

describe("a /v1/send over the rate limit is refused before its body is read", () => {
  it("once this isolate knows the window is used up, the next request is a 429 without reading the body", async () => {
    const project = await newProject();
    const send = sendApp(1);
    expect((await send(project.secretKey, small())).status).not.toBe(429); // the one slot
    expectError(await send(project.secretKey, small()), 429, "RATE_LIMITED"); // the object says no: now known here
    const refused = await send(project.secretKey, small());
    expectError(refused, 429, "RATE_LIMITED");
    expect(refused.headers.get("Retry-After")).toBe("59");
    expect(refused.bodyRead).toBe(false);
  });

  it(`a body over ${DEFERRED_BODY_BYTES} bytes waits for the limiter's answer: 429 without reading it`, async () => {
    const project = await newProject();
    expect((await sendApp(1)(project.secretKey, small())).status).not.toBe(429);
    // Another isolate's leases (a fresh app) in the same minute: it does not know the window is used up.
    minuteCounter--;
    const elsewhere = sendApp(1);
    const large = JSON.stringify({ to: "ada@example.com", from: "hi@unverified.test", subject: "Hi", body: `<p>${"x".repeat(100_000)}</p>` });
    const refused = await elsewhere(project.secretKey, large);
    expectError(refused, 429, "RATE_LIMITED");
    expect(refused.bodyRead).toBe(false);
  });

  it("a small body under the limit is still read while the limiter answers, and gets its ordinary answer", async () => {
    const project = await newProject();
    const answered = await sendApp(10)(project.secretKey, small());
    expectError(answered, 403); // the sender's domain is not verified
    expect(answered.bodyRead).toBe(true);
  });
});

describe("/v1/send bounds its JSON shape before parsing it", () => {
  it(`more than ${MAX_CUSTOM_HEADERS} custom headers, or more than ${MAX_CUSTOM_HEADER_BYTES} bytes of them, is one 422 naming headers; nothing queued`, async () => {
    const s = await sendingSetup();
    const base = { to: "ada@example.com", from: s.from, subject: "Hi", body: "<p>Hi</p>" };
    const many = Object.fromEntries(Array.from({ length: 500 }, (_, i) => [`X-Custom-${i}`, "v".repeat(500)]));
    const tooMany = expectError(await s.send({ ...base, headers: many }), 422, "VALIDATION_ERROR");
    expect(tooMany.errors).toEqual([expect.objectContaining({ field: "headers" })]);
    expect(tooMany.errors![0].message).toContain(String(MAX_CUSTOM_HEADERS));

    const big = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`X-Custom-${i}`, "v".repeat(500)]));
    const tooBig = expectError(await s.send({ ...base, headers: big }), 422, "VALIDATION_ERROR");
    expect(tooBig.errors!.map((e) => e.field)).toEqual(["headers"]);
    expect(tooBig.errors![0].message).toContain(String(MAX_CUSTOM_HEADER_BYTES));
    expect(s.queue.messages).toHaveLength(0);

    const atCap = Object.fromEntries(Array.from({ length: MAX_CUSTOM_HEADERS }, (_, i) => [`X-C-${i}`, "v".repeat(100)]));
    const sent = await s.send({ ...base, headers: atCap });
    expect(sent.status, JSON.stringify(sent.body).slice(0, 300)).toBe(200);
  });

  it(`a body over ${MAX_SEND_JSON_CHARS_OUTSIDE_ATTACHMENTS} characters outside attachments' content is a 413; a large attachment is not`, async () => {
    const s = await sendingSetup();
    const entries = Array.from({ length: 150_000 }, (_, i) => `"h${i}":""`).join(",");
    const text = `{"to":"ada@example.com","from":"${s.from}","subject":"Hi","body":"<p>Hi</p>","headers":{${entries}}}`;
    const refused = await call("POST", "/v1/send", { key: s.project.secretKey, rawBody: text, headers: { "Content-Type": "application/json" }, env: s.env });
    const error = expectError(refused, 413, "PAYLOAD_TOO_LARGE");
    expect(error.message).toContain(String(MAX_SEND_JSON_CHARS_OUTSIDE_ATTACHMENTS));
    expect(s.queue.messages).toHaveLength(0);

    // 3 MB of attachment content and a 400 KB body: accepted.
    const content = "A".repeat(3 * 1024 * 1024);
    const sent = await s.send({
      to: "ada@example.com",
      from: s.from,
      subject: "Report",
      body: `<p>${"y".repeat(400_000)}</p>`,
      attachments: [{ filename: "a.bin", content, contentType: "application/octet-stream" }],
    });
    expect(sent.status, JSON.stringify(sent.body).slice(0, 300)).toBe(200);
  });
});
