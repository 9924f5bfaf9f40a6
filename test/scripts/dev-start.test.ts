import { readFileSync } from "node:fs";
import { join } from "node:path";
import PostalMime from "postal-mime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiClient, freeInspectorPort, freePort, type LocalServer, repoCopy, sleep, startLocalServer } from "../../scripts/lib/local-server.mjs";

/**
 * `npm run dev` (scripts/dev.mjs) from a fresh clone, in a throwaway copy of the working tree so
 * the checkout's .dev.vars, .dev/ and .wrangler/state are never touched:
 * - the first start is short: one line per D1 migration batch, the bindings table in one line
 *   (fewer than 40 lines before wrangler's "Ready on");
 * - PORT moves PUBLIC_URL: the links in captured mail (tracking, unsubscribe) carry that port,
 *   unless PUBLIC_URL is set (the second start sets it in the environment);
 * - stopping the script alone (SIGTERM to its pid) stops wrangler and workerd with it;
 * - a DNS lookup that fails (DOH_URL on a name that never resolves, as offline) is one line, not
 *   workerd's internal error with its native stack.
 */
let copy: ReturnType<typeof repoCopy>;
let server: LocalServer | undefined;
let secretKey = "";
const api = apiClient(
  () => server?.url ?? "",
  () => secretKey,
);

async function startDev(port: number, env: Record<string, string> = {}) {
  const inspectorPort = await freeInspectorPort();
  return startLocalServer(
    [
      "node",
      "scripts/dev.mjs",
      "--inspector-port",
      String(inspectorPort),
      "--show-interactive-dev-session=false",
      "--var",
      "DOH_URL:https://doh.invalid/dns-query",
    ],
    {
      url: `http://127.0.0.1:${port}`,
      cwd: copy.dir,
      env: { ...process.env, PORT: String(port), NO_COLOR: "1", DEV_CRON_INTERVAL_MS: "0", ...env },
      timeoutMs: 150_000,
      pollMs: 300,
    },
  );
}

/** Sends one mail with a link and the unsubscribe URL; the captured message, parsed. */
async function sendAndCapture(to: string) {
  const sent = await api("POST", "/v1/send", {
    to,
    from: "hello@example.com",
    subject: "Links",
    body: '<p><a href="https://example.org/pricing">pricing</a> <a href="{{unsubscribeUrl}}">unsubscribe</a></p>',
  });
  expect(sent.status, JSON.stringify(sent.body)).toBe(200);
  const base = server?.url ?? "";
  for (let tries = 0; tries < 100; tries++) {
    const outbox = await (await fetch(`${base}/dev/outbox`)).text();
    const row = new RegExp(`<td>${to.replace(/[.+]/g, "\\$&")}</td>[\\s\\S]*?href="/dev/outbox/([^"]+\\.eml)"`).exec(outbox);
    if (row) return PostalMime.parse(await (await fetch(`${base}/dev/outbox/${row[1]}`)).text());
    await sleep(200);
  }
  throw new Error(`no captured mail to ${to}\n${server?.output().slice(-3000)}`);
}

/** The http(s) URLs in a message's HTML (links and the open pixel). */
const urls = (html: string | undefined) => [...(html ?? "").matchAll(/(?:href|src)="(https?:[^"]+)"/g)].map((m) => m[1].replace(/&amp;/g, "&"));

beforeAll(() => {
  copy = repoCopy({ prefix: "edge-mail-dev-start-" });
});

afterAll(async () => {
  await server?.stop();
  copy?.remove();
});

describe("npm run dev: a short first start, PUBLIC_URL on PORT, one line per DNS failure", () => {
  it("the first start prints under 40 lines before Ready, one per migration batch; mail links carry PORT; a failed DNS lookup is one line", async () => {
    const port = await freePort();
    server = await startDev(port);
    secretKey = JSON.parse(readFileSync(join(copy.dir, ".dev/project.json"), "utf8")).secretKey;

    const output = server.output();
    const beforeReady = output.slice(0, output.indexOf("Ready on")).split("\n");
    expect(beforeReady.length, output).toBeLessThan(40);
    expect(output).toMatch(/^D1 DB: \d+ migrations applied$/m);
    expect(output, "wrangler's migration tables are not shown").not.toMatch(/[┌│└]/);
    expect(output).toContain(`links in mail: http://127.0.0.1:${port}`);

    const mail = await sendAndCapture("ada@example.org");
    const links = urls(mail.html);
    expect(links.length, mail.html).toBeGreaterThanOrEqual(2);
    for (const link of links) expect(link.startsWith(`http://127.0.0.1:${port}/`), `${link} in\n${mail.html}`).toBe(true);
    expect(mail.html).not.toContain(":8787");

    // DNS-over-HTTPS on a name that never resolves: what an offline machine sees for every lookup.
    const verified = await api("POST", "/v1/verify", { email: "ada@example.net" });
    expect(verified.status).toBe(200);
    expect(verified.body.data.reasons.join(" ")).toContain("DNS lookup failed");
    for (let tries = 0; tries < 50 && !/\[dns\] lookup of doh\.invalid failed/.test(server.output()); tries++) await sleep(100);
    const after = server.output();
    expect(after.match(/^\[dns\] lookup of doh\.invalid failed.*$/gm) ?? [], after.slice(-3000)).toHaveLength(1);
    expect(after, "no workerd internal error or native stack").not.toMatch(/kj\/async-io|^\s*stack: /m);
    await server.stop();
    server = undefined;
  }, 240_000);

  it("a second start says the database is up to date; PUBLIC_URL set in the environment wins over PORT", async () => {
    const port = await freePort();
    server = await startDev(port, { PUBLIC_URL: "http://mail.example.test" });
    const output = server.output();
    expect(output).toMatch(/^D1 DB: up to date$/m);
    expect(output).toContain("links in mail: http://mail.example.test");
    const mail = await sendAndCapture("bob@example.org");
    const links = urls(mail.html);
    expect(links.length, mail.html).toBeGreaterThanOrEqual(2);
    for (const link of links) expect(link.startsWith("http://mail.example.test/"), `${link} in\n${mail.html}`).toBe(true);

    // SIGTERM to the script alone (not its process group) stops wrangler and workerd too: the port is free again.
    process.kill(server.child.pid as number, "SIGTERM");
    let answering = true;
    for (let tries = 0; tries < 75 && answering; tries++) {
      await sleep(200);
      answering = await fetch(`${server.url}/health`).then(
        () => true,
        () => false,
      );
    }
    expect(answering, "the service still answers after the script was stopped").toBe(false);
  }, 240_000);
});
