// Event webhooks benchmark (issue 26), against a `wrangler dev` this script starts
// on a throwaway local database (.wrangler/bench-webhooks-state), with a local
// Node receiver standing in for the users' endpoints:
// 1. throughput of POST /v1/track and POST /contacts (each a new contact, so each
//    records contact.created) for a project with two subscribed endpoints and one
//    with none, measured in turns (windows alternate so both see the same machine);
//    the deliveries the windows cause are drained between windows;
// 2. 10,000 events (POST /contacts) to one subscribed endpoint: deliveries per
//    second from the first change to the last delivery, and the delay from each
//    change (the event's `timestamp`) to its arrival at the receiver.
// Env: BENCH_SECONDS (per throughput figure, default 8), BENCH_CONCURRENCY (16),
// BENCH_WEBHOOK_EVENTS (10000). Usage: node scripts/bench-webhooks.mjs
import { execFileSync, spawn } from "node:child_process";
import { rmSync } from "node:fs";
import { createServer as createHttpServer } from "node:http";
import { createServer } from "node:net";
import { performance } from "node:perf_hooks";
import { Webhook } from "standardwebhooks";

const STATE_DIR = ".wrangler/bench-webhooks-state";
const SECONDS = Number(process.env.BENCH_SECONDS ?? 8);
const ROUNDS = 4;
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 16);
const EVENTS = Number(process.env.BENCH_WEBHOOK_EVENTS ?? 10_000);
const env = { ...process.env, CI: "1", WRANGLER_SEND_METRICS: "false" };
const started = performance.now();

const log = (message) => process.stderr.write(`[bench-webhooks ${((performance.now() - started) / 1000).toFixed(1)}s] ${message}\n`);
const run = (cmd, args) => execFileSync(cmd, args, { encoding: "utf8", env, stdio: ["ignore", "pipe", "pipe"], maxBuffer: 64 * 1024 * 1024 });
const fmt = (n, digits = 1) => (Number.isFinite(n) ? n.toFixed(digits) : "n/a");
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

function createProject(name) {
  const out = run("npx", ["tsx", "scripts/project.ts", "create", name, "--json", "--persist-to", STATE_DIR]);
  return JSON.parse(out.trim().split("\n").pop());
}

function percentile(sorted, p) {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/** The users' endpoints: records each delivery's arrival, its event's timestamp and webhook-id; verifies a sample. */
async function startReceiver() {
  const port = await freePort();
  const received = [];
  const secrets = new Map();
  let badSignatures = 0;
  const server = createHttpServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const arrived = Date.now();
      const body = Buffer.concat(chunks).toString("utf8");
      const secret = secrets.get(req.url);
      if (secret && received.length % 100 === 0) {
        try {
          new Webhook(secret).verify(body, req.headers);
        } catch {
          badSignatures++;
        }
      }
      try {
        const event = JSON.parse(body);
        received.push({ path: req.url, id: req.headers["webhook-id"], type: event.type, changedAt: Date.parse(event.timestamp), arrived });
      } catch {
        badSignatures++;
      }
      res.writeHead(200).end("ok");
    });
  });
  await new Promise((resolve) => server.listen(port, "127.0.0.1", resolve));
  return { base: `http://127.0.0.1:${port}`, received, secrets, bad: () => badSignatures, close: () => server.close() };
}

async function startWorker() {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const vars = {
    ENVIRONMENT: "development",
    RATE_LIMIT_PER_MINUTE: "100000000",
    EMAIL_PROVIDER: "capture",
    PUBLIC_URL: base,
    LINK_SIGNING_SECRET: "bench-only-secret-at-least-32-bytes-long",
    DKIM_ENCRYPTION_KEY: "bench-only-encryption-key-at-least-32-bytes",
    WEBHOOK_DELIVERIES_PER_MINUTE: "100000000",
    QUOTA_CONTACTS: "100000000",
    QUOTA_EVENTS_PER_DAY: "100000000",
  };
  log(`starting wrangler dev on ${base}`);
  const child = spawn(
    "npx",
    [
      "wrangler",
      "dev",
      "--local",
      "--ip",
      "127.0.0.1",
      "--port",
      String(port),
      "--persist-to",
      STATE_DIR,
      ...Object.entries(vars).flatMap(([k, v]) => ["--var", `${k}:${v}`]),
      "--show-interactive-dev-session=false",
    ],
    // No devtools inspector (its per-subrequest relay costs CPU no deployment has), as scripts/bench.mjs.
    { env: { ...env, VSCODE_INSPECTOR_OPTIONS: "{}" }, stdio: ["ignore", "pipe", "pipe"], detached: true },
  );
  let output = "";
  child.stdout.on("data", (d) => (output = (output + d).slice(-20_000)));
  child.stderr.on("data", (d) => (output = (output + d).slice(-20_000)));
  const stop = () => {
    try {
      process.kill(-child.pid, "SIGTERM");
    } catch {
      // already gone
    }
  };
  const deadline = Date.now() + 90_000;
  for (;;) {
    if (child.exitCode !== null || Date.now() > deadline) {
      process.stderr.write(output.slice(-4000));
      stop();
      throw new Error("wrangler dev did not answer /health");
    }
    try {
      if ((await fetch(`${base}/health`)).ok) break;
    } catch {
      // not listening yet
    }
    await sleep(250);
  }
  return { base, stop, output: () => output };
}

async function api(base, key, method, path, body) {
  const res = await fetch(base + path, {
    method,
    headers: { Authorization: `Bearer ${key}`, ...(body ? { "Content-Type": "application/json" } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

/** Requests per second of each kind, measured in alternating windows; `between` runs after each window. */
async function interleaved(kinds, between) {
  const states = kinds.map(() => ({ next: 0, ok: 0, errors: 0, elapsed: 0 }));
  for (const kind of kinds) await Promise.all(Array.from({ length: CONCURRENCY }, (_, i) => kind.request(-1 - i)));
  await between();
  for (let round = 0; round < ROUNDS; round++) {
    for (const [k, kind] of kinds.entries()) {
      const state = states[k];
      const deadline = performance.now() + (SECONDS * 1000) / ROUNDS;
      const t0 = performance.now();
      await Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          while (performance.now() < deadline) {
            const status = await kind.request(state.next++);
            if (kind.expect.includes(status)) state.ok++;
            else state.errors++;
          }
        }),
      );
      state.elapsed += (performance.now() - t0) / 1000;
      await between();
    }
  }
  return states.map((s) => ({ rps: s.ok / s.elapsed, errors: s.errors, ok: s.ok }));
}

async function waitFor(check, timeoutMs, what) {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

async function main() {
  rmSync(STATE_DIR, { recursive: true, force: true });
  log("applying migrations");
  run("npx", ["wrangler", "d1", "migrations", "apply", "DB", "--local", "--persist-to", STATE_DIR]);
  const none = createProject("webhooks-none");
  const two = createProject("webhooks-two");
  const flow = createProject("webhooks-flow");
  const receiver = await startReceiver();
  const worker = await startWorker();
  try {
    const { base } = worker;
    for (const [project, paths] of [
      [two, ["/a", "/b"]],
      [flow, ["/flow"]],
    ]) {
      for (const path of paths) {
        const res = await api(base, project.secretKey, "POST", "/webhooks", { url: receiver.base + path, events: ["contact.created", "contact.updated"] });
        if (res.status !== 201) throw new Error(`creating a webhook answered ${res.status}: ${JSON.stringify(res.body)}`);
        receiver.secrets.set(path, res.body.secret);
      }
    }

    console.log(`\nEdge Mail webhooks benchmark  ${new Date().toISOString()}  node ${process.version}  ${base}`);
    console.log(`concurrency ${CONCURRENCY}, ${SECONDS}s per throughput figure in ${ROUNDS} alternating windows`);

    // Between windows: every delivery the windows caused has arrived, so a window
    // of one kind does not pay for the background work of the previous one.
    let expected = 0;
    const drained = () => waitFor(() => receiver.received.length >= expected, 300_000, "webhook deliveries");
    const counting = (fn, deliveriesPerOk) => async (i) => {
      const status = await fn(i);
      if (status === 200 || status === 201) expected += deliveriesPerOk;
      return status;
    };
    let n = 0;
    const email = (tag) => `${tag}-${n++}-${Date.now()}@bench.test`;
    const track = (project, deliveries) =>
      counting(async () => (await api(base, project.publicKey, "POST", "/v1/track", { email: email("t"), event: "bench" })).status, deliveries);
    const contact = (project, deliveries) =>
      counting(async () => (await api(base, project.secretKey, "POST", "/contacts", { email: email("c"), data: { plan: "pro" } })).status, deliveries);

    console.log("\n## Write throughput, two endpoints subscribed vs none");
    for (const [label, make] of [
      ["POST /v1/track (new contact)", track],
      ["POST /contacts (new contact)", contact],
    ]) {
      const [withNone, withTwo] = await interleaved(
        [
          { request: make(none, 0), expect: [200, 201] },
          { request: make(two, 2), expect: [200, 201] },
        ],
        drained,
      );
      const delta = ((withTwo.rps - withNone.rps) / withNone.rps) * 100;
      console.log(
        `${label.padEnd(30)} none ${fmt(withNone.rps)} req/s   two endpoints ${fmt(withTwo.rps)} req/s   ${delta >= 0 ? "+" : ""}${fmt(delta)} %` +
          (withNone.errors + withTwo.errors ? `   errors ${withNone.errors}/${withTwo.errors}` : ""),
      );
    }
    console.log(`deliveries received so far: ${receiver.received.length} (expected ${expected}); bad signatures in the sample: ${receiver.bad()}`);

    console.log(`\n## ${EVENTS} events to one endpoint`);
    const before = receiver.received.length;
    const t0 = Date.now();
    let next = 0;
    let failed = 0;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < EVENTS) {
          next++;
          const res = await api(base, flow.secretKey, "POST", "/contacts", { email: email("f") });
          if (res.status !== 201) failed++;
        }
      }),
    );
    const acceptedIn = (Date.now() - t0) / 1000;
    await waitFor(() => receiver.received.length - before >= EVENTS - failed, 900_000, `${EVENTS} deliveries`);
    const flowDeliveries = receiver.received.slice(before).filter((r) => r.path === "/flow");
    const lastArrival = Math.max(...flowDeliveries.map((r) => r.arrived));
    const delays = flowDeliveries.map((r) => r.arrived - r.changedAt).sort((a, b) => a - b);
    const duplicates = flowDeliveries.length - new Set(flowDeliveries.map((r) => r.id)).size;
    console.log(
      `changes accepted: ${EVENTS - failed} in ${fmt(acceptedIn)} s (${fmt((EVENTS - failed) / acceptedIn)} req/s)${failed ? `, ${failed} failed` : ""}`,
    );
    console.log(
      `delivered: ${flowDeliveries.length} in ${fmt((lastArrival - t0) / 1000)} s from the first change: ${fmt(flowDeliveries.length / ((lastArrival - t0) / 1000))} events/s; duplicates ${duplicates}`,
    );
    console.log(
      `delay change -> delivery: median ${fmt(percentile(delays, 50) / 1000, 2)} s, p95 ${fmt(percentile(delays, 95) / 1000, 2)} s, max ${fmt(delays[delays.length - 1] / 1000, 2)} s`,
    );
    console.log(`bad signatures in the sample: ${receiver.bad()}`);
    console.log(`\ntotal ${fmt((performance.now() - started) / 1000)} s`);
  } finally {
    worker.stop();
    receiver.close();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
