import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../browser/dev-server";

/**
 * `npm run dev` (scripts/dev.mjs) as a reader runs it, with its own state dir
 * and port: wrangler dev never fires a Cron Trigger by itself, so the script's
 * loop does. A campaign scheduled a few seconds ahead must reach SENT with
 * nothing but that loop (the test only reads). DEV_CRON_INTERVAL_MS shortens
 * the loop from a minute to a second so the test does not wait a whole minute.
 */
const root = resolve(__dirname, "../..");
let child: ChildProcess;
let log = "";
let state: string;
let base: string;
let secretKey: string;

async function api(method: string, path: string, body?: unknown) {
  const res = await fetch(base + path, {
    method,
    headers: { Authorization: `Bearer ${secretKey}`, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as any };
}

beforeAll(async () => {
  state = mkdtempSync(join(tmpdir(), "edge-mail-dev-cron-"));
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  child = spawn("node", ["scripts/dev.mjs", "--persist-to", state, "--show-interactive-dev-session=false"], {
    cwd: root,
    env: { ...process.env, PORT: String(port), DEV_CRON_INTERVAL_MS: "1000", NO_COLOR: "1" },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  child.stdout!.on("data", (d) => (log += d));
  child.stderr!.on("data", (d) => (log += d));
  const deadline = Date.now() + 150_000;
  for (;;) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`npm run dev did not come up on ${base}:\n${log}`);
    try {
      if ((await fetch(`${base}/health`)).ok) break;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 300));
  }
  const keys = join(state, "dev-project.json");
  expect(existsSync(keys), "npm run dev writes the dev project's keys beside its state").toBe(true);
  secretKey = JSON.parse(readFileSync(keys, "utf8")).secretKey;
}, 180_000);

afterAll(async () => {
  if (child?.pid && child.exitCode === null) {
    const exited = new Promise((r) => child.once("exit", r));
    try {
      process.kill(-child.pid, "SIGTERM"); // node, npx, wrangler and its workerd
    } catch {
      // already gone
    }
    await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
    try {
      process.kill(-child.pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
  if (state) rmSync(state, { recursive: true, force: true });
});

describe("npm run dev runs the Cron Trigger", () => {
  it("a campaign scheduled a few seconds ahead is started and finished by the dev cron loop alone (SENT, every recipient sent)", async () => {
    for (const email of ["ada@example.net", "bob@example.net"]) {
      const contact = await api("POST", "/contacts", { email, data: { firstName: email.split("@")[0] } });
      expect(contact.status, JSON.stringify(contact.body)).toBe(201);
    }
    const campaign = await api("POST", "/campaigns", {
      name: "Scheduled in dev",
      subject: "Hello {{firstName}}",
      body: "<p>Hi {{firstName}}</p>",
      from: "news@example.com", // the dev project's seeded, verified domain
      audienceType: "ALL",
    });
    expect(campaign.status, JSON.stringify(campaign.body)).toBe(201);
    const id = campaign.body.data.id;

    const scheduledFor = new Date(Date.now() + 4000).toISOString();
    const scheduled = await api("POST", `/campaigns/${id}/send`, { scheduledFor });
    expect(scheduled.status, JSON.stringify(scheduled.body)).toBe(200);
    expect(scheduled.body.data.status).toBe("SCHEDULED");

    const deadline = Date.now() + 45_000;
    let status = "SCHEDULED";
    while (status !== "SENT") {
      if (Date.now() > deadline) throw new Error(`campaign still ${status} after 45 s\n${log.slice(-3000)}`);
      await new Promise((r) => setTimeout(r, 500));
      status = (await api("GET", `/campaigns/${id}`)).body.data.status;
      // Nothing but the clock moves it: it must not start before its time.
      if (Date.now() < Date.parse(scheduledFor)) expect(status).toBe("SCHEDULED");
    }
    const stats = (await api("GET", `/campaigns/${id}/stats`)).body.data;
    expect(stats).toMatchObject({ totalRecipients: 2, sentCount: 2, failedCount: 0 });
    expect(log).toContain("GET /__scheduled");
  }, 90_000);
});
