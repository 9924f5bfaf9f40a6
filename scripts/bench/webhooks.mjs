// Event webhooks (issue 26), standalone: a `wrangler dev` of its own on throwaway state
// (.wrangler/bench-webhooks-state) and a local Node receiver standing in for the users'
// endpoints (it verifies a sample of signatures with the standardwebhooks package):
// 1. throughput of POST /v1/track (public key) and POST /contacts, each a new contact so each
//    records contact.created, for a project with two endpoints subscribed (on the receiver)
//    and one with none, on the same server in alternating short windows (BENCH_WEBHOOK_PAIRS
//    pairs of BENCH_WEBHOOK_WINDOW s, the order flipped every pair); the figure is the ratio
//    of the medians of the windows' rates. Deliveries are not waited for between windows:
//    the queue consumer (in wrangler dev, the same isolate as the requests) works its backlog
//    off during both projects' windows alike, as on Cloudflare, where it runs in invocations
//    of its own beside the requests. The backlog is drained between figures.
// 2. BENCH_WEBHOOK_EVENTS (10,000) events (POST /contacts) to one subscribed endpoint: events
//    delivered per second from the first change to the last arrival (bounded by the writes'
//    own rate), the backlog's rate once the writes stopped, and the delay from each change
//    (the event's `timestamp`) to its arrival at the receiver.
// 3. Noisy neighbours (issue 38, W2/W5), on a server and state of their own: project A's one
//    endpoint answers 204 at once; project B's two endpoints answer 500 with a 100 MB body, and
//    500 headers then one byte a second (a tar pit). A's changes, one a second, with B quiet and
//    then with B writing 4 changes a second (each a delivery to both of its endpoints, retried):
//    A's median delay, change to arrival, with and without them (goal: within 2 s).
// Environment: BENCH_WEBHOOK_EVENTS, BENCH_WEBHOOK_PAIRS (20), BENCH_WEBHOOK_WINDOW (2 s),
// BENCH_WEBHOOK_CONCURRENCY (16), BENCH_WEBHOOK_PARTS ("throughput,neighbours": which parts),
// BENCH_WEBHOOK_STATE (the state directory), BENCH_WEBHOOK_NEIGHBOUR_CHANGES (20 of A's changes
// per phase). `npm run bench:webhooks` runs only this section.
import { createServer } from "node:http";
import { performance } from "node:perf_hooks";
import { Webhook } from "standardwebhooks";
import { applyMigrations, check, createProject, fmt, freePort, log, report, send, serverCpuMs, sleep, startServer, workerdRss } from "./lib.mjs";

const STATE_DIR = process.env.BENCH_WEBHOOK_STATE ?? ".wrangler/bench-webhooks-state";
const PARTS = new Set((process.env.BENCH_WEBHOOK_PARTS ?? "throughput,neighbours").split(",").map((p) => p.trim()));
const NEIGHBOUR_CHANGES = Number(process.env.BENCH_WEBHOOK_NEIGHBOUR_CHANGES ?? 20);
const EVENTS = Number(process.env.BENCH_WEBHOOK_EVENTS ?? 10_000);
const PAIRS = Number(process.env.BENCH_WEBHOOK_PAIRS ?? 20);
const WINDOW_S = Number(process.env.BENCH_WEBHOOK_WINDOW ?? 2);
const CONCURRENCY = Number(process.env.BENCH_WEBHOOK_CONCURRENCY ?? 16);
const LONE_CHANGES = 10;

/** The users' endpoints: each delivery's arrival, its event's timestamp and webhook-id; a sample verified. */
async function startReceiver() {
  const port = await freePort();
  const received = [];
  const secrets = new Map();
  let bad = 0;
  const server = createServer((req, res) => {
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
          bad++;
        }
      }
      try {
        const event = JSON.parse(body);
        received.push({ path: req.url, id: req.headers["webhook-id"], changedAt: Date.parse(event.timestamp), arrived });
      } catch {
        bad++;
      }
      res.writeHead(200).end("ok");
    });
  });
  await new Promise((resolve) => server.listen(port, "127.0.0.1", resolve));
  return { base: `http://127.0.0.1:${port}`, received, secrets, bad: () => bad, close: () => server.close() };
}

async function waitFor(condition, timeoutMs, what) {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

const median = (values) =>
  percentile(
    [...values].sort((a, b) => a - b),
    50,
  );

/**
 * Two request kinds on one server in alternating windows of WINDOW_S (PAIRS pairs, the
 * order flipped every pair so neither side always follows the other): per window its
 * rate, the server's CPU per request (wrangler's and workerd's processes, the consumer's
 * work in that window included) and the deliveries that reached the receiver meanwhile.
 */
async function alternating(server, receiver, kinds) {
  const windows = kinds.map(() => []);
  const run = async (kind, seconds) => {
    let ok = 0;
    let errors = 0;
    let requests = 0;
    const arrivedBefore = receiver.received.length;
    const cpuBefore = serverCpuMs(server.child.pid);
    const t0 = performance.now();
    const deadline = t0 + seconds * 1000;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (performance.now() < deadline) {
          requests++;
          if ((await kind.request()) < 300) ok++;
          else errors++;
        }
      }),
    );
    const elapsed = (performance.now() - t0) / 1000;
    const cpu = cpuBefore === null ? Number.NaN : serverCpuMs(server.child.pid) - cpuBefore;
    return { rps: ok / elapsed, ok, errors, cpuPerRequest: cpu / requests, arrived: receiver.received.length - arrivedBefore };
  };
  for (const kind of kinds) await run(kind, 1); // warm-up: paths compiled, connections open, keys cached
  for (let pair = 0; pair < PAIRS; pair++) {
    const order = pair % 2 === 0 ? [0, 1] : [1, 0];
    for (const k of order) windows[k].push(await run(kinds[k], WINDOW_S));
  }
  return windows.map((w) => ({
    windows: w,
    rps: median(w.map((x) => x.rps)),
    cpuPerRequest: median(w.map((x) => x.cpuPerRequest)),
    ok: w.reduce((n, x) => n + x.ok, 0),
    errors: w.reduce((n, x) => n + x.errors, 0),
    arrived: w.reduce((n, x) => n + x.arrived, 0),
  }));
}

const percentile = (sorted, p) => (sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]);

/**
 * Loopback receiver for the neighbours part: /a answers 204 and records the arrival; /big answers
 * 500 and then up to 100 MB (as fast as the client reads, counting what it took); /tarpit answers
 * 500 headers at once, then one byte a second for a minute.
 */
async function startNoisyReceiver() {
  const port = await freePort();
  const arrivals = [];
  const counts = { big: 0, tarpit: 0, bigBytes: 0, tarpitSeconds: 0 };
  const server = createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      if (req.url === "/a") {
        const event = JSON.parse(Buffer.concat(chunks).toString("utf8"));
        arrivals.push({ email: event.data?.email, changedAt: Date.parse(event.timestamp), arrived: Date.now() });
        res.writeHead(204).end();
      } else if (req.url === "/big") {
        counts.big++;
        res.writeHead(500, { "content-type": "text/plain" });
        const chunk = Buffer.alloc(1024 * 1024, "A");
        let sent = 0;
        let closed = false;
        res.on("close", () => {
          closed = true;
        });
        const pump = () => {
          while (!closed && sent < 100) {
            sent++;
            counts.bigBytes += chunk.length;
            if (!res.write(chunk)) return res.once("drain", pump);
          }
          if (!closed) res.end();
        };
        pump();
      } else if (req.url === "/tarpit") {
        counts.tarpit++;
        res.writeHead(500, { "content-type": "text/plain" });
        res.flushHeaders();
        let seconds = 0;
        const timer = setInterval(() => {
          if (++seconds > 60) {
            clearInterval(timer);
            res.end();
            return;
          }
          counts.tarpitSeconds++;
          res.write("x");
        }, 1000);
        res.on("close", () => clearInterval(timer));
      } else res.writeHead(404).end();
    });
  });
  server.on("clientError", () => undefined);
  await new Promise((resolve) => server.listen(port, "127.0.0.1", resolve));
  return { base: `http://127.0.0.1:${port}`, arrivals, counts, close: () => server.close() };
}

/** Part 3: A's delivery delay with B's 100 MB error body and tar pit beside it, and without. */
async function neighbours() {
  const stateDir = `${STATE_DIR}-neighbours`;
  log(`neighbours: applying migrations into ${stateDir}`);
  applyMigrations(stateDir);
  const a = createProject("neighbours-a", stateDir);
  const b = createProject("neighbours-b", stateDir);
  const receiver = await startNoisyReceiver();
  const server = await startServer(stateDir, { WEBHOOK_DELIVERIES_PER_MINUTE: "100000000", QUOTA_CONTACTS: "100000000" });
  try {
    const { base } = server;
    for (const [project, path] of [
      [a, "/a"],
      [b, "/big"],
      [b, "/tarpit"],
    ]) {
      const res = await send(base, {
        method: "POST",
        path: "/webhooks",
        key: project.secretKey,
        body: { url: receiver.base + path, events: ["contact.created"] },
      });
      if (res.status !== 201) throw new Error(`POST /webhooks answered ${res.status}: ${res.text.slice(0, 200)}`);
    }
    let n = 0;
    const refused = new Map(); // status -> count: writes the server did not take (e.g. 503 when its worker restarted)
    const change = async (project, tag) => {
      const email = `${tag}-${n++}-${Date.now()}@bench.test`;
      const res = await send(base, { method: "POST", path: "/contacts", key: project.secretKey, body: { email } }).catch(() => ({ status: 0, text: "" }));
      if (res.status === 201) return email;
      if (!refused.has(res.status)) log(`POST /contacts answered ${res.status}: ${res.text.slice(0, 200)}`);
      refused.set(res.status, (refused.get(res.status) ?? 0) + 1);
      return null;
    };
    // A's changes one a second; each one's delay from its event's timestamp to its arrival at /a.
    const phase = async (label) => {
      const emails = [];
      for (let i = 0; i < NEIGHBOUR_CHANGES; i++) {
        const email = await change(a, `a-${label}`);
        if (email) emails.push(email);
        await sleep(1000);
      }
      await waitFor(() => emails.every((e) => receiver.arrivals.some((r) => r.email === e)), 600_000, `A's ${label} deliveries`);
      const delays = emails.map((e) => receiver.arrivals.find((r) => r.email === e)).map((r) => r.arrived - r.changedAt);
      return delays.sort((x, y) => x - y);
    };
    if (!(await change(a, "warm"))) throw new Error("the first change was refused");
    await waitFor(() => receiver.arrivals.length >= 1, 60_000, "the first delivery");
    const without = await phase("quiet");

    // B: four changes a second, each two deliveries its endpoints fail slowly or hugely (and retry).
    let noisy = true;
    let bChanges = 0;
    const rssBefore = workerdRss(server.child.pid);
    let rssPeak = rssBefore ?? 0;
    const noise = (async () => {
      while (noisy) {
        await change(b, "b");
        bChanges++;
        const rss = workerdRss(server.child.pid);
        if (rss !== null) rssPeak = Math.max(rssPeak, rss);
        await sleep(250);
      }
    })();
    await sleep(5000);
    const withNoise = await phase("noisy");
    noisy = false;
    await noise;
    const med = (sorted) => percentile(sorted, 50);
    const diff = med(withNoise) - med(without);
    report("webhook delay of project A beside B's 100 MB error body and tar pit (median)", `${fmt(med(withNoise) / 1000, 2)} s`, {
      goal: "within 2 s of A's delay without them",
      met: diff <= 2000,
      shape: `${NEIGHBOUR_CHANGES} POST /contacts of A one a second, while B writes 4 contacts a second whose contact.created goes to a 500 + 100 MB body endpoint and a 500 + 1 byte/s endpoint (retried on the schedule); loopback receiver, local queue`,
      detail:
        `without B: median ${fmt(med(without) / 1000, 2)} s (p90 ${fmt(percentile(without, 90) / 1000, 2)} s); with B: p90 ${fmt(percentile(withNoise, 90) / 1000, 2)} s, max ${fmt(withNoise.at(-1) / 1000, 2)} s; ` +
        `difference ${fmt(diff / 1000, 2)} s; B: ${bChanges} changes, ${receiver.counts.big} calls to the 100 MB endpoint (${fmt(receiver.counts.bigBytes / 1024 / 1024, 0)} MB written before the client hung up), ${receiver.counts.tarpit} to the tar pit; ` +
        `workerd RSS ${rssBefore === null ? "n/a" : `${fmt(rssBefore / 1024 / 1024, 0)} MB before, peak ${fmt(rssPeak / 1024 / 1024, 0)} MB`}` +
        `${refused.size ? `; writes refused: ${[...refused].map(([status, count]) => `${count}x${status}`).join(" ")}` : ""}`,
    });
  } finally {
    await server.stop();
    receiver.close();
  }
}

export const webhooksSection = {
  key: "webhooks",
  title: "Event webhooks (local queue, local receiver)",
  async run() {
    if (PARTS.has("throughput")) await throughputParts();
    if (PARTS.has("neighbours")) await neighbours();
  },
};

/** Parts 1 and 2. */
async function throughputParts() {
  {
    log(`applying migrations into ${STATE_DIR}`);
    applyMigrations(STATE_DIR);
    const none = createProject("webhooks-none", STATE_DIR);
    const two = createProject("webhooks-two", STATE_DIR);
    const flow = createProject("webhooks-flow", STATE_DIR);
    const receiver = await startReceiver();
    const server = await startServer(STATE_DIR, {
      WEBHOOK_DELIVERIES_PER_MINUTE: "100000000",
      QUOTA_CONTACTS: "100000000",
      QUOTA_EVENTS_PER_DAY: "100000000",
      QUOTA_PUBLIC_CONTACTS_PER_DAY: "100000000",
      QUOTA_PUBLIC_EVENTS_PER_DAY: "100000000",
    });
    try {
      const { base } = server;
      for (const [project, paths] of [
        [two, ["/a", "/b"]],
        [flow, ["/flow"]],
      ]) {
        for (const path of paths) {
          const res = await send(base, {
            method: "POST",
            path: "/webhooks",
            key: project.secretKey,
            body: { url: receiver.base + path, events: ["contact.created", "contact.updated"] },
          });
          if (res.status !== 201) throw new Error(`POST /webhooks answered ${res.status}: ${res.text.slice(0, 200)}`);
          receiver.secrets.set(path, JSON.parse(res.text).secret);
        }
      }

      let expected = 0;
      const drained = () => waitFor(() => receiver.received.length >= expected, 600_000, "webhook deliveries");
      let n = 0;
      const email = (tag) => `${tag}-${n++}-${Date.now()}@bench.test`;
      const counting = (fn, deliveriesPerOk) => async () => {
        const status = await fn();
        if (status < 300) expected += deliveriesPerOk;
        return status;
      };
      const track = (project, deliveries) =>
        counting(
          async () => (await send(base, { method: "POST", path: "/v1/track", key: project.publicKey, body: { email: email("t"), event: "bench" } })).status,
          deliveries,
        );
      const contact = (project, deliveries) =>
        counting(
          async () =>
            (await send(base, { method: "POST", path: "/contacts", key: project.secretKey, body: { email: email("c"), data: { plan: "pro" } } })).status,
          deliveries,
        );
      for (const [label, make] of [
        ["POST /v1/track", track],
        ["POST /contacts", contact],
      ]) {
        const [withNone, withTwo] = await alternating(server, receiver, [{ request: make(none, 0) }, { request: make(two, 2) }]);
        const delta = (withTwo.rps / withNone.rps - 1) * 100;
        // The spread: each pair's own ratio (two / none), its quartiles.
        const pairRatios = withTwo.windows.map((w, i) => w.rps / withNone.windows[i].rps).sort((a, b) => a - b);
        const pct = (r) => `${r >= 1 ? "+" : ""}${fmt((r - 1) * 100)} %`;
        report(`${label}: two endpoints subscribed vs none (throughput)`, `${delta >= 0 ? "+" : ""}${fmt(delta)} %`, {
          goal: ">= -5 % (within 5 % of none)",
          met: delta >= -5,
          shape: `new contact each (contact.created to 2 endpoints), concurrency ${CONCURRENCY}; one server, ${PAIRS} pairs of ${WINDOW_S} s windows alternating between the projects; ratio of the medians; the consumer's backlog not waited for between windows`,
          detail:
            `median none ${fmt(withNone.rps)} req/s, two ${fmt(withTwo.rps)} req/s (${withNone.ok} and ${withTwo.ok} requests); ` +
            `pair ratios: quartiles ${pct(percentile(pairRatios, 25))} to ${pct(percentile(pairRatios, 75))}; ` +
            `server CPU per request (median; the consumer's work in the window included) none ${fmt(withNone.cpuPerRequest, 2)} ms, two ${fmt(withTwo.cpuPerRequest, 2)} ms; ` +
            `deliveries arriving during the windows: none ${withNone.arrived}, two ${withTwo.arrived}` +
            `${withNone.errors + withTwo.errors ? `; errors ${withNone.errors}/${withTwo.errors}` : ""}`,
        });
        const t0 = Date.now();
        await drained();
        log(`${label}: backlog of deliveries drained in ${fmt((Date.now() - t0) / 1000)} s`);
      }

      log(`${EVENTS} events to one endpoint`);
      const before = receiver.received.length;
      const t0 = Date.now();
      let next = 0;
      let failed = 0;
      const failures = new Map(); // status -> count, and the first answer's text of each
      await Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          while (next < EVENTS) {
            next++;
            const res = await send(base, { method: "POST", path: "/contacts", key: flow.secretKey, body: { email: email("f") } });
            if (res.status !== 201) {
              failed++;
              if (!failures.has(res.status)) log(`POST /contacts answered ${res.status}: ${res.text.slice(0, 300)}`);
              failures.set(res.status, (failures.get(res.status) ?? 0) + 1);
            }
          }
        }),
      );
      const acceptEnd = Date.now();
      const acceptedIn = (acceptEnd - t0) / 1000;
      const deliveredByAcceptEnd = receiver.received.slice(before).filter((r) => r.path === "/flow").length;
      await waitFor(() => receiver.received.length - before >= EVENTS - failed, 900_000, `${EVENTS} deliveries`);
      const flowDeliveries = receiver.received.slice(before).filter((r) => r.path === "/flow");
      const lastArrival = Math.max(...flowDeliveries.map((r) => r.arrived));
      const delays = flowDeliveries.map((r) => r.arrived - r.changedAt).sort((a, b) => a - b);
      const duplicates = flowDeliveries.length - new Set(flowDeliveries.map((r) => r.id)).size;
      const seconds = (lastArrival - t0) / 1000;
      // Every accepted change delivered exactly once (a refused write is no change, and counted apart).
      const allOnce = flowDeliveries.length === EVENTS - failed && duplicates === 0;
      report(`${EVENTS} events delivered to a local receiver`, `${fmt(flowDeliveries.length / seconds, 0)} events/s`, {
        goal: "printed (issue 26), every accepted change delivered once",
        met: allOnce,
        shape: `POST /contacts (contact.created) at concurrency ${CONCURRENCY}, one endpoint; from the first change to the last arrival, so bounded by the writes' own rate`,
        detail: `${flowDeliveries.length} in ${fmt(seconds)} s from the first change; changes accepted in ${fmt(acceptedIn)} s (${fmt((EVENTS - failed) / acceptedIn)} req/s)${failed ? `, ${failed} refused (${[...failures].map(([status, count]) => `${count}x${status}`).join(" ")})` : ""}${duplicates ? `, ${duplicates} duplicates` : ""}`,
      });
      // The consumer shares wrangler dev's one isolate (and this machine) with the writers: what it does once they stop.
      const backlog = flowDeliveries.length - deliveredByAcceptEnd;
      report("webhook backlog delivered once the writes stopped", `${fmt(backlog / ((lastArrival - acceptEnd) / 1000), 0)} events/s`, {
        shape: "the deliveries still pending when the last change was accepted",
        detail: `${backlog} in ${fmt((lastArrival - acceptEnd) / 1000)} s`,
      });
      report(`webhook delay, change to delivery, ${EVENTS} events (median)`, `${fmt(percentile(delays, 50) / 1000, 2)} s`, {
        goal: "printed (issue 26)",
        met: Number.isFinite(percentile(delays, 50)),
        shape: "the event's timestamp to its arrival at the receiver, while the writes above run",
        detail: `p95 ${fmt(percentile(delays, 95) / 1000, 2)} s, max ${fmt(delays[delays.length - 1] / 1000, 2)} s`,
      });
      // The same delay for a change on a quiet server: what the queue itself adds (its batch timeout, the consumer).
      const lone = [];
      for (let i = 0; i < LONE_CHANGES; i++) {
        const start = receiver.received.length;
        const res = await send(base, { method: "POST", path: "/contacts", key: flow.secretKey, body: { email: email("l") } });
        if (res.status !== 201) throw new Error(`POST /contacts answered ${res.status}: ${res.text.slice(0, 200)}`);
        await waitFor(() => receiver.received.length > start, 60_000, "a lone change's delivery");
        const arrived = receiver.received[start];
        lone.push(arrived.arrived - arrived.changedAt);
      }
      lone.sort((a, b) => a - b);
      report("webhook delay, change to delivery, one change at a time (median)", `${fmt(percentile(lone, 50) / 1000, 2)} s`, {
        shape: `${LONE_CHANGES} POST /contacts one after the other, each once the previous one's delivery arrived; local queue with max_batch_timeout 1 s`,
        detail: `min ${fmt(lone[0] / 1000, 2)} s, max ${fmt(lone[lone.length - 1] / 1000, 2)} s`,
      });
      check(
        "every webhook delivered once, signatures verified",
        duplicates === 0 && receiver.bad() === 0,
        `duplicates ${duplicates}, bad signatures ${receiver.bad()}`,
      );
    } finally {
      await server.stop();
      receiver.close();
    }
  }
}
