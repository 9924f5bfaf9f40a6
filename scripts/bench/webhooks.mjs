// Event webhooks (issue 26), standalone: a `wrangler dev` of its own on throwaway state
// (.wrangler/bench-webhooks-state) and a local Node receiver standing in for the users'
// endpoints (it verifies a sample of signatures with the standardwebhooks package):
// 1. throughput of POST /v1/track (public key) and POST /contacts, each a new contact so each
//    records contact.created, for a project with two subscribed endpoints and one with none,
//    in alternating windows; between windows every delivery the windows caused has arrived,
//    so a window does not pay for the previous one's background work (its own is included);
// 2. BENCH_WEBHOOK_EVENTS (10,000) events (POST /contacts) to one subscribed endpoint: events
//    delivered per second from the first change to the last arrival (bounded by the writes'
//    own rate), the backlog's rate once the writes stopped, and the delay from each change
//    (the event's `timestamp`) to its arrival at the receiver.
// Environment: BENCH_WEBHOOK_EVENTS, BENCH_WEBHOOK_SECONDS (per throughput figure, 8),
// BENCH_WEBHOOK_CONCURRENCY (16). `npm run bench:webhooks` runs only this section.
import { createServer } from "node:http";
import { performance } from "node:perf_hooks";
import { Webhook } from "standardwebhooks";
import { applyMigrations, check, createProject, fmt, freePort, log, report, send, sleep, startServer } from "./lib.mjs";

const STATE_DIR = ".wrangler/bench-webhooks-state";
const EVENTS = Number(process.env.BENCH_WEBHOOK_EVENTS ?? 10_000);
const SECONDS = Number(process.env.BENCH_WEBHOOK_SECONDS ?? 8);
const CONCURRENCY = Number(process.env.BENCH_WEBHOOK_CONCURRENCY ?? 16);
const ROUNDS = 4;

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

/** Requests per second of each kind in alternating windows; `between` runs after each window. */
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
            if ((await kind.request(state.next++)) < 300) state.ok++;
            else state.errors++;
          }
        }),
      );
      state.elapsed += (performance.now() - t0) / 1000;
      await between();
    }
  }
  return states.map((s) => ({ rps: s.ok / s.elapsed, ok: s.ok, errors: s.errors }));
}

const percentile = (sorted, p) => (sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]);

export const webhooksSection = {
  key: "webhooks",
  title: "Event webhooks (local queue, local receiver)",
  async run() {
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
      const drained = () => waitFor(() => receiver.received.length >= expected, 300_000, "webhook deliveries");
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
        const [withNone, withTwo] = await interleaved([{ request: make(none, 0) }, { request: make(two, 2) }], drained);
        const delta = ((withTwo.rps - withNone.rps) / withNone.rps) * 100;
        report(`${label}: two endpoints subscribed vs none (throughput)`, `${delta >= 0 ? "+" : ""}${fmt(delta)} %`, {
          goal: "within 5 %",
          met: delta >= -5,
          shape: `new contact each (contact.created to 2 endpoints), concurrency ${CONCURRENCY}, ${ROUNDS} alternating windows, deliveries drained between windows`,
          detail: `none ${fmt(withNone.rps)} req/s (${withNone.ok}); two ${fmt(withTwo.rps)} req/s (${withTwo.ok})${withNone.errors + withTwo.errors ? `; errors ${withNone.errors}/${withTwo.errors}` : ""}`,
        });
      }

      log(`${EVENTS} events to one endpoint`);
      const before = receiver.received.length;
      const t0 = Date.now();
      let next = 0;
      let failed = 0;
      await Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          while (next < EVENTS) {
            next++;
            const res = await send(base, { method: "POST", path: "/contacts", key: flow.secretKey, body: { email: email("f") } });
            if (res.status !== 201) failed++;
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
      report(`${EVENTS} events delivered to a local receiver`, `${fmt(flowDeliveries.length / seconds, 0)} events/s`, {
        goal: "hundreds per second",
        shape: "POST /contacts (contact.created) at concurrency 16, one endpoint",
        detail: `${flowDeliveries.length} in ${fmt(seconds)} s from the first change; changes accepted in ${fmt(acceptedIn)} s (${fmt((EVENTS - failed) / acceptedIn)} req/s)${failed ? `, ${failed} failed` : ""}`,
      });
      // The consumer shares wrangler dev's one isolate (and this machine) with the writers: what it does once they stop.
      const backlog = flowDeliveries.length - deliveredByAcceptEnd;
      report("webhook backlog delivered once the writes stopped", `${fmt(backlog / ((lastArrival - acceptEnd) / 1000), 0)} events/s`, {
        goal: "hundreds per second",
        shape: "the deliveries still pending when the last change was accepted",
        detail: `${backlog} in ${fmt((lastArrival - acceptEnd) / 1000)} s`,
      });
      report("webhook delay, change to delivery (median)", `${fmt(percentile(delays, 50) / 1000, 2)} s`, {
        goal: "a few seconds",
        shape: "the event's timestamp to its arrival at the receiver",
        detail: `p95 ${fmt(percentile(delays, 95) / 1000, 2)} s, max ${fmt(delays[delays.length - 1] / 1000, 2)} s`,
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
  },
};
