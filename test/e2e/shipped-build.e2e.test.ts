import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiClient, applyMigrations, type DevServer, npx, startWranglerDev, wranglerEnv } from "../../scripts/lib/local-server.mjs";

/**
 * The bundle `wrangler dev` builds (the same esbuild options, [alias] and minify as
 * `wrangler deploy`) against what the test suites run: the OpenAPI document, the
 * disposable-domain list read from the static assets, and MIME built by mimetext
 * with the core-js stand-ins and the real js-base64.
 */
const root = resolve(__dirname, "../..");
const DKIM_ENCRYPTION_KEY = "e2e-only-dkim-encryption-key-0123456789abcdef";
let server: DevServer;
let state: string;
let secretKey: string;

const local = { cwd: root, env: { ...wranglerEnv, DKIM_ENCRYPTION_KEY } };
const api = apiClient(
  () => server.url,
  () => secretKey,
);

const b64 = (text: string) => Buffer.from(text, "utf8").toString("base64");
const decodeWord = (word: string) => Buffer.from(/^=\?utf-8\?B\?(.*)\?=$/i.exec(word)![1], "base64").toString("utf8");

beforeAll(async () => {
  state = mkdtempSync(join(tmpdir(), "edge-mail-shipped-"));
  applyMigrations(state, local);
  // The dev project: keys, and example.com as a verified sending domain.
  npx(["tsx", "scripts/project.ts", "ensure-dev", "--persist-to", state], local);
  secretKey = JSON.parse(readFileSync(join(state, "dev-project.json"), "utf8")).secretKey;
  server = await startWranglerDev(
    {
      ENVIRONMENT: "development",
      EMAIL_PROVIDER: "capture",
      DKIM_ENCRYPTION_KEY,
      LINK_SIGNING_SECRET: "e2e-only-link-signing-secret-0123456789abcdef",
      PUBLIC_URL: "http://127.0.0.1",
      // Nothing listens here: /v1/verify reports the DNS failure; the list check does not need DNS.
      DOH_URL: "http://127.0.0.1:9/dns-query",
      DOH_TIMEOUT_MS: "500",
    },
    { persistTo: state },
  );
}, 180_000);

afterAll(async () => {
  await server?.stop();
  if (state) rmSync(state, { recursive: true, force: true });
});

describe("the bundle wrangler builds", () => {
  it("serves the same /openapi.json as createApp() in the test suites", async () => {
    const shipped = await (await fetch(`${server.url}/openapi.json`)).json();
    // Loaded through vitest (Vite), as the workerd suite loads src/; a variable path keeps
    // src/'s Workers types out of this Node-typed file.
    const appModule = resolve(root, "src/app.ts");
    const { createApp } = (await import(/* @vite-ignore */ appModule)) as { createApp: () => { request: (path: string) => Promise<Response> } };
    const tested = await (await createApp().request("/openapi.json")).json();
    expect(Object.keys((shipped as { paths: object }).paths).length).toBeGreaterThan(30);
    expect(shipped).toEqual(tested);
  });

  it("reads the disposable-domain list from the static assets on the first /v1/verify", async () => {
    const disposable = await api("POST", "/v1/verify", { email: "someone@mailinator.com" });
    expect(disposable.status, JSON.stringify(disposable.body)).toBe(200);
    expect(disposable.body.data.isDisposable).toBe(true);
    const subdomain = await api("POST", "/v1/verify", { email: "someone@inbox.mailinator.com" });
    expect(subdomain.body.data.isDisposable).toBe(true);
    const ordinary = await api("POST", "/v1/verify", { email: "someone@example.org" });
    expect(ordinary.body.data.isDisposable).toBe(false);
    // The list is an asset, not something the Worker builds: it is served as a file too.
    const asset = await fetch(`${server.url}/data/disposable-domains.json`);
    expect(asset.status).toBe(200);
    expect(((await asset.json()) as string[]).length).toBeGreaterThan(1000);
  });

  it("sends MIME with UTF-8 display names, subject and attachment name through mimetext as shipped", async () => {
    const sent = await api("POST", "/v1/send", {
      to: { name: "Ada Lovelace", email: "ada@example.net" },
      from: { name: "Zoë Café", email: "news@example.com" },
      reply: "replies@example.com",
      subject: "Grüße aus Köln",
      body: "<p>Hallo</p>",
      attachments: [{ filename: "Bericht-ü.txt", content: b64("Inhalt ü"), contentType: "text/plain" }],
    });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    const id = sent.body.data.emails[0].email;
    const deadline = Date.now() + 30_000;
    let status = "QUEUED";
    while (status === "QUEUED" || status === "SENDING") {
      if (Date.now() > deadline) throw new Error(`email still ${status}\n${server.output().slice(-3000)}`);
      await new Promise((r) => setTimeout(r, 300));
      status = (await api("GET", `/emails/${id}`)).body.status;
    }
    expect(status).toBe("SENT");

    const outbox = await (await fetch(`${server.url}/dev/outbox`)).text();
    const eml = /href="(\/dev\/outbox\/[^"]+\.eml)"/.exec(outbox)?.[1];
    expect(eml, outbox).toBeDefined();
    const raw = await (await fetch(server.url + eml)).text();
    const header = (name: string) => new RegExp(`^${name}: (.*)$`, "mi").exec(raw)?.[1];
    expect(header("From")).toBe(`=?utf-8?B?${b64("Zoë Café")}?= <news@example.com>`);
    expect(header("To")).toBe(`=?utf-8?B?${b64("Ada Lovelace")}?= <ada@example.net>`);
    expect(header("Reply-To")).toBe("<replies@example.com>");
    expect(decodeWord(header("Subject")!)).toBe("Grüße aus Köln");
    expect(raw).toContain("Content-Disposition: attachment; filename*=utf-8''Bericht-%C3%BC.txt");
    expect(raw).toContain(b64("Inhalt ü"));
  });
});
