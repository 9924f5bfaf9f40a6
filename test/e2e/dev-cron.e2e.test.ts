import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiClient, freeInspectorPort, freePort, type LocalServer, startLocalServer } from "../../scripts/lib/local-server.mjs";

/**
 * `npm run dev` (scripts/dev.mjs) as a reader runs it, with its own state dir
 * and port: wrangler dev never fires a Cron Trigger by itself, so the script's
 * loop does. A campaign scheduled a few seconds ahead must reach SENT with
 * nothing but that loop (the test only reads). DEV_CRON_INTERVAL_MS shortens
 * the loop from a minute to a second so the test does not wait a whole minute.
 */
const root = resolve(__dirname, "../..");
let server: LocalServer;
let state: string;
let secretKey: string;
const api = apiClient(
  () => server.url,
  () => secretKey,
);
const log = () => server.output();

beforeAll(async () => {
  state = mkdtempSync(join(tmpdir(), "edge-mail-dev-cron-"));
  const port = await freePort();
  const inspectorPort = await freeInspectorPort();
  const args = ["--persist-to", state, "--inspector-port", String(inspectorPort), "--show-interactive-dev-session=false"];
  server = await startLocalServer(["node", "scripts/dev.mjs", ...args], {
    url: `http://127.0.0.1:${port}`,
    cwd: root,
    env: { ...process.env, PORT: String(port), DEV_CRON_INTERVAL_MS: "1000", NO_COLOR: "1" },
    timeoutMs: 150_000,
    pollMs: 300,
  });
  const keys = join(state, "dev-project.json");
  expect(existsSync(keys), "npm run dev writes the dev project's keys beside its state").toBe(true);
  secretKey = JSON.parse(readFileSync(keys, "utf8")).secretKey;
}, 180_000);

afterAll(async () => {
  await server?.stop(); // node, npx, wrangler and its workerd
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
      if (Date.now() > deadline) throw new Error(`campaign still ${status} after 45 s\n${log().slice(-3000)}`);
      await new Promise((r) => setTimeout(r, 500));
      status = (await api("GET", `/campaigns/${id}`)).body.data.status;
      // Nothing but the clock moves it: it must not start before its time.
      if (Date.now() < Date.parse(scheduledFor)) expect(status).toBe("SCHEDULED");
    }
    const stats = (await api("GET", `/campaigns/${id}/stats`)).body.data;
    expect(stats).toMatchObject({ totalRecipients: 2, sentCount: 2, failedCount: 0 });
    expect(log()).toContain("GET /__scheduled");
  }, 90_000);
});
