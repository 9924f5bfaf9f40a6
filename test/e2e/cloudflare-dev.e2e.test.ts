import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import type { Server } from "node:http";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  apiClient,
  createProject,
  type DevServer,
  type FakeZone,
  freePort,
  npx,
  publishRecords,
  startFakeDoh,
  startWranglerDev,
} from "../../scripts/lib/local-server.mjs";

/**
 * EMAIL_PROVIDER=cloudflare end to end in `wrangler dev`: the real Worker, local
 * D1 and Queues, and wrangler's local simulation of the Email Service's
 * `send_email` binding (which logs each message and refuses senders outside
 * `allowed_sender_addresses`). The only fake is DNS: a DNS-over-HTTPS server
 * on localhost that serves the records the API asked for, so the sending
 * domain is verified through the API as in production.
 */
const root = resolve(__dirname, "../..");
const DOMAIN = "e2e-cloudflare.test";
const ALLOWED_SENDER = `hello@${DOMAIN}`;

let server: DevServer;
let doh: Server;
let state: string;
let configPath: string;
let secretKey: string;
const zone: FakeZone = new Map();

const api = apiClient(
  () => server.url,
  () => secretKey,
);

async function until<T>(what: string, read: () => Promise<T>, done: (value: T) => boolean, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  let value = await read();
  while (!done(value)) {
    if (Date.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(value)} after ${ms} ms\n${server.output().slice(-3000)}`);
    await new Promise((r) => setTimeout(r, 300));
    value = await read();
  }
  return value;
}

beforeAll(async () => {
  const dohPort = await freePort();
  doh = startFakeDoh(dohPort, zone);
  state = mkdtempSync(join(tmpdir(), "edge-mail-e2e-"));
  // The committed wrangler.toml with the binding restricted to one sender, beside it so its relative paths hold.
  configPath = join(root, `.wrangler-e2e-${process.pid}.toml`);
  const committed = readFileSync(join(root, "wrangler.toml"), "utf8");
  const restricted = committed.replace(/(\[\[send_email\]\]\s*\nname\s*=\s*"EMAIL"\s*\n)/, `$1allowed_sender_addresses = ["${ALLOWED_SENDER}"]\n`);
  expect(restricted, "wrangler.toml has a [[send_email]] binding named EMAIL").not.toBe(committed);
  writeFileSync(configPath, restricted);

  npx(["wrangler", "d1", "migrations", "apply", "DB", "--local", "--persist-to", state, "--config", configPath], { cwd: root });
  secretKey = createProject("e2e", state, { cwd: root }).secretKey;
  server = await startWranglerDev(
    {
      EMAIL_PROVIDER: "cloudflare",
      ENVIRONMENT: "production",
      PUBLIC_URL: "https://mail.e2e.test",
      LINK_SIGNING_SECRET: "e2e-only-link-signing-secret-0123456789abcdef",
      DKIM_ENCRYPTION_KEY: "e2e-only-dkim-encryption-key-0123456789abcdef",
      DOH_URL: `http://127.0.0.1:${dohPort}/dns-query`,
    },
    { persistTo: state, config: configPath },
  );
}, 180_000);

afterAll(async () => {
  await server?.stop();
  doh?.close();
  if (state) rmSync(state, { recursive: true, force: true });
  if (configPath) rmSync(configPath, { force: true });
});

describe("EMAIL_PROVIDER=cloudflare in wrangler dev", () => {
  it("verifies a domain, sends through the local send_email binding (SENT with its message id), and a sender outside allowed_sender_addresses is FAILED with the reason", async () => {
    const domain = await api("POST", "/domains", { domain: DOMAIN });
    expect(domain.status, JSON.stringify(domain.body)).toBe(201);
    publishRecords(zone, domain.body.records);
    const verified = await api("POST", `/domains/${domain.body.id}/verify`);
    expect(verified.body.status, JSON.stringify(verified.body)).toBe("VERIFIED");

    const sent = await api("POST", "/v1/send", {
      to: "ada@example.net",
      from: ALLOWED_SENDER,
      subject: "Hello from wrangler dev",
      body: "<p>Hi <b>Ada</b></p>",
    });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    const id = sent.body.data.emails[0].email;
    const email = await until(
      "the email",
      async () => (await api("GET", `/emails/${id}`)).body,
      (e) => e.status !== "QUEUED" && e.status !== "SENDING",
    );
    expect(email).toMatchObject({ status: "SENT", error: null });
    expect(email.providerMessageId).toMatch(new RegExp(`^<?[A-Za-z0-9]+@${DOMAIN.replace(/\./g, "\\.")}>?$`)); // the binding answers <id@domain>; stored with or without the brackets
    expect(server.output()).toContain("send_email binding called with MessageBuilder");
    expect(server.output()).toContain("Subject: Hello from wrangler dev");

    const refused = await api("POST", "/v1/send", { to: "bob@example.net", from: `other@${DOMAIN}`, subject: "Not allowed", body: "<p>x</p>" });
    expect(refused.status, JSON.stringify(refused.body)).toBe(200);
    const refusedId = refused.body.data.emails[0].email;
    const failed = await until(
      "the refused email",
      async () => (await api("GET", `/emails/${refusedId}`)).body,
      (e) => e.status === "FAILED" || e.status === "SENT",
    );
    expect(failed.status).toBe("FAILED");
    expect(failed.error).toContain(`email from other@${DOMAIN} not allowed`);
  }, 120_000);
});
