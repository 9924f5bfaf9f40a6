#!/usr/bin/env node
// `npm run bench`: starts the local service on its own throwaway state and prints
// throughput and latency figures for one run. Not a test: numbers depend on the machine.
//
// 1. local D1 migrations into .wrangler/bench-state (never the dev database), two
//    projects through the project CLI (`--persist-to`), 50,000 contacts for one of
//    them inserted with multi-row SQL
// 2. `wrangler dev` on a free 127.0.0.1 port with the rate limit lifted
// 3. SECTIONS, in order; each prints its figures
// 4. stops the server
//
// Add a figure by adding a section (e.g. accepted /v1/send per second, end-to-end emails/s).
// Environment: BENCH_SECONDS (per throughput figure, default 4), BENCH_THROUGHPUT_ROUNDS (windows each
// throughput section figure is measured in, in turns with the others, default 4), BENCH_CONCURRENCY (default 32),
// BENCH_CONTACTS (rows for the list figure, default 50000), BENCH_CAMPAIGN_CONTACTS (campaign and
// segment figures, default 100000), BENCH_CAMPAIGN_TIMEOUT (s, default 900), BENCH_PRIORITY_CONTACTS
// (the campaign draining at 14/s while transactional sends are timed, default 10000; its own server
// and state in .wrangler/bench-priority-state), BENCH_STARTUP_RUNS (startup section, default 5). BENCH_ONLY=<comma-separated section keys or title text> runs some;
// BENCH_PROFILE=<file.cpuprofile> profiles the Worker isolate meanwhile (see PROFILE below).
import { execFileSync, spawn } from "node:child_process";
import { appendFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { v7 as uuidv7 } from "uuid";
import { runStartupSection } from "./bench-startup.mjs";

const STATE_DIR = ".wrangler/bench-state";
const SECONDS = Number(process.env.BENCH_SECONDS ?? 4);
/** Windows per request kind in the throughput section (taken in turns, SECONDS / rounds each). */
const THROUGHPUT_ROUNDS = Number(process.env.BENCH_THROUGHPUT_ROUNDS ?? 4);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
const MAX_REQUESTS = 200_000; // bound for one throughput figure
const LIST_CONTACTS = Number(process.env.BENCH_CONTACTS ?? 50_000);
const LATENCY_SAMPLES = 50;
const SEND_EMAILS = Number(process.env.BENCH_EMAILS ?? 10_000);
const SEND_TIMEOUT_S = Number(process.env.BENCH_SEND_TIMEOUT ?? 240);
const BENCH_DOMAIN = "bench.test";
const WORKFLOW_EVENTS = Number(process.env.BENCH_WORKFLOW_EVENTS ?? 500);
const CAMPAIGN_CONTACTS = Number(process.env.BENCH_CAMPAIGN_CONTACTS ?? 100_000);
const CAMPAIGN_TIMEOUT_S = Number(process.env.BENCH_CAMPAIGN_TIMEOUT ?? 900);
const PRIORITY_CONTACTS = Number(process.env.BENCH_PRIORITY_CONTACTS ?? 10_000);
const PRIORITY_STATE_DIR = ".wrangler/bench-priority-state";
/** Only some sections: comma-separated section keys or text their titles contain (default: all). */
const ONLY = (process.env.BENCH_ONLY ?? "").split(",").filter(Boolean);
/** A section is wanted when BENCH_ONLY names its key, or (for text that is no section's key) its title contains the text. */
const wantsSection = (section) => ONLY.length === 0 || ONLY.some((o) => section.key === o || (!SECTIONS.some((s) => s.key === o) && section.title.includes(o)));
const PAGE = 20;
/**
 * BENCH_PROFILE=<file.cpuprofile>: take a CPU profile of the Worker's isolate over the devtools
 * protocol while the sections run (unminified, so names are readable; needs the inspector), write
 * it to the file (open it in Chrome DevTools or speedscope) and print the functions that took the
 * most time. Use with BENCH_ONLY to profile one path.
 */
const PROFILE = process.env.BENCH_PROFILE;
/** BENCH_INSPECTOR=1: run wrangler dev with its devtools inspector, as `npm run dev` does (off by default, see startServer). */
const INSPECTOR = process.env.BENCH_INSPECTOR === "1" || Boolean(PROFILE);
const env = { ...process.env, CI: "1", WRANGLER_SEND_METRICS: "false" };
const started = performance.now();

// ---- helpers -----------------------------------------------------------------

function log(message) {
  process.stderr.write(`[bench ${((performance.now() - started) / 1000).toFixed(1)}s] ${message}\n`);
}

function run(cmd, args) {
  return execFileSync(cmd, args, { encoding: "utf8", env, stdio: ["ignore", "pipe", "pipe"], maxBuffer: 64 * 1024 * 1024 });
}

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

const sqlText = (value) => `'${String(value).replace(/'/g, "''")}'`;

function createProject(name, stateDir = STATE_DIR) {
  const out = run("npx", ["tsx", "scripts/project.ts", "create", name, "--json", "--persist-to", stateDir]);
  return JSON.parse(out.trim().split("\n").pop());
}

/** Marks `name` a VERIFIED sending domain of the project directly in the throwaway database (no DNS here; the capture provider needs no DKIM key). */
function verifiedDomainSql(projectId, name) {
  return `INSERT INTO domains (id, project_id, name, status, dkim_selector, dkim_public_key, dkim_private_key_encrypted, records) VALUES (${sqlText(uuidv7())}, ${sqlText(projectId)}, ${sqlText(name)}, 'VERIFIED', 'bench', '', '', '[]');`;
}

/** Inserts `count` contacts with multi-row INSERTs through `wrangler d1 execute --file`. */
function insertContacts(projectId, count, { stateDir = STATE_DIR, prefix = "list", row } = {}) {
  const dir = mkdtempSync(join(tmpdir(), "edge-mail-bench-"));
  const file = join(dir, "contacts.sql");
  const rowsPerStatement = 400; // keeps each statement well under D1's 100 KB limit
  const now = Date.now();
  const statements = [];
  for (let i = 0; i < count; i += rowsPerStatement) {
    const rows = [];
    for (let j = i; j < Math.min(count, i + rowsPerStatement); j++) {
      rows.push(row ? row(j) : `(${sqlText(uuidv7())},${sqlText(projectId)},'${prefix}${j}@bench.test',${j % 3 === 0 ? 0 : 1},'{}',${now},${now})`);
    }
    statements.push(`INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at) VALUES ${rows.join(",")};`);
  }
  writeFileSync(file, statements.join("\n"));
  try {
    run("npx", ["wrangler", "d1", "execute", "DB", "--local", "--persist-to", stateDir, "--file", file, "--yes"]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function waitForHealth(base, server, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (server.exitCode !== null) throw new Error(`wrangler dev exited with ${server.exitCode}`);
    try {
      const res = await fetch(`${base}/health`);
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error("the service did not answer /health in time");
}

/**
 * Requests per second for `makeRequest(i)`: CONCURRENCY loops for SECONDS (at most
 * MAX_REQUESTS). Any answer other than `expect` is counted and reported as an error.
 */
async function throughput(base, makeRequest, expect) {
  const [result] = await interleavedThroughput(base, [{ makeRequest, expect }], 1);
  return result;
}

/**
 * Requests per second of several request kinds measured in turns: `rounds`
 * windows of SECONDS / rounds each per kind, one kind after the other, so that
 * every kind sees the same phases of the machine (whose speed drifts by a third
 * over a run) and a ratio between two kinds compares like with like. `between`
 * runs after each window (e.g. waiting for the queue to drain what a window
 * accepted, so it does not slow the next kind's window).
 */
async function interleavedThroughput(base, kinds, rounds, between = async () => {}) {
  const server = servers.find((s) => s.base === base);
  const states = kinds.map(() => ({ next: 0, ok: 0, elapsed: 0, cpu: 0, errors: new Map(), latencies: [] }));
  // Warm-up: compile paths, open connections.
  for (const kind of kinds) await Promise.all(Array.from({ length: CONCURRENCY }, (_, i) => send(base, kind.makeRequest(-1 - i))));
  await between();
  for (let round = 0; round < rounds; round++) {
    for (const [k, kind] of kinds.entries()) {
      const state = states[k];
      const cpuBefore = server ? serverCpuMs(server.child.pid) : null;
      const deadline = performance.now() + (SECONDS * 1000) / rounds;
      const t0 = performance.now();
      await Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          while (performance.now() < deadline && state.next < MAX_REQUESTS) {
            const i = state.next++;
            const start = performance.now();
            const res = await send(base, kind.makeRequest(i));
            state.latencies.push(performance.now() - start);
            if (kind.expect.includes(res.status)) state.ok++;
            else state.errors.set(res.status, (state.errors.get(res.status) ?? 0) + 1);
          }
        }),
      );
      state.elapsed += (performance.now() - t0) / 1000;
      const cpuAfter = server ? serverCpuMs(server.child.pid) : null;
      state.cpu = cpuBefore !== null && cpuAfter !== null && state.cpu !== null ? state.cpu + (cpuAfter - cpuBefore) : null;
      await between();
    }
  }
  return states.map((state) => ({
    rps: state.ok / state.elapsed,
    ok: state.ok,
    elapsed: state.elapsed,
    errors: state.errors,
    // CPU the server's processes (wrangler, workerd) spent per answered request.
    cpuPerRequest: state.cpu !== null && state.latencies.length > 0 ? state.cpu / state.latencies.length : NaN,
    ...stats(state.latencies),
  }));
}

async function send(base, { method = "GET", path, key, body }) {
  const headers = {};
  if (key) headers.Authorization = `Bearer ${key}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const res = await fetch(base + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text };
}

function stats(samples) {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
  return { median: at(0.5), p95: at(0.95) };
}

async function latency(base, request, n = LATENCY_SAMPLES) {
  for (let i = 0; i < 5; i++) await send(base, request); // warm-up
  const samples = [];
  for (let i = 0; i < n; i++) {
    const start = performance.now();
    const res = await send(base, request);
    samples.push(performance.now() - start);
    if (res.status !== 200) throw new Error(`${request.path} answered ${res.status}: ${res.text.slice(0, 200)}`);
  }
  return stats(samples);
}

const fmt = (n, digits = 1) => (Number.isFinite(n) ? n.toFixed(digits) : "n/a");
const results = [];
function report(label, value, detail = "") {
  results.push({ label, value, detail });
  console.log(`${label.padEnd(44)} ${value.padStart(14)}  ${detail}`);
}

function printThroughput(label, r) {
  const errs = [...r.errors].map(([s, n]) => `${n}x${s}`).join(" ");
  report(
    label,
    `${fmt(r.rps, 0)} req/s`,
    `(${r.ok} in ${fmt(r.elapsed)}s, median ${fmt(r.median)} ms, p95 ${fmt(r.p95)} ms, server CPU ${fmt(r.cpuPerRequest, 2)} ms/req${errs ? `, non-2xx: ${errs}` : ""})`,
  );
}

// ---- sections ----------------------------------------------------------------

const SECTIONS = [
  {
    key: "throughput",
    title: "Throughput",
    async run(ctx) {
      // The request path's figures (issue 9): each write path against the floor, measured in
      // turns (THROUGHPUT_ROUNDS windows each) so that all kinds see the same machine; after
      // each window the queue drains what /v1/send accepted, so the consumer's work does not
      // fall into the next kind's window (measured one after the other, as before, it fell
      // after the last window).
      const kinds = [
        { label: "GET /health (floor)", makeRequest: () => ({ path: "/health" }), expect: [200] },
        // One D1 round trip and nothing else (development only): what any path with one costs here.
        { label: "GET /dev/d1-round-trip (one D1 round trip)", makeRequest: () => ({ path: "/dev/d1-round-trip" }), expect: [200] },
        // The same after reading a JSON body like /v1/track's: the ceiling for a POST path with one round trip.
        {
          label: "POST /dev/d1-round-trip (JSON body + one round trip)",
          makeRequest: (i) => ({
            method: "POST",
            path: "/dev/d1-round-trip",
            key: ctx.bench.publicKey,
            body: { email: `track${i}@bench.test`, event: "bench" },
          }),
          expect: [200],
        },
        {
          label: "POST /v1/track (new contact + event, pk_)",
          makeRequest: (i) => ({ method: "POST", path: "/v1/track", key: ctx.bench.publicKey, body: { email: `track${i}@bench.test`, event: "bench" } }),
          expect: [200],
        },
        {
          label: "POST /contacts (distinct emails)",
          makeRequest: (i) => ({ method: "POST", path: "/contacts", key: ctx.bench.secretKey, body: { email: `c${i}@bench.test`, data: { n: i } } }),
          expect: [201],
        },
        {
          label: "POST /v1/send (1 recipient, accepted)",
          makeRequest: (i) => ({
            method: "POST",
            path: "/v1/send",
            key: ctx.bench.secretKey,
            body: { to: `rp${i}@bench.test`, from: `hello@${BENCH_DOMAIN}`, subject: "Hi {{n}}", body: "<p>Hello {{n}}</p>", data: { n: i } },
          }),
          expect: [200],
        },
      ];
      const results = await interleavedThroughput(ctx.base, kinds, THROUGHPUT_ROUNDS, () => waitForQueueDrain(ctx.base, ctx.bench.secretKey));
      const [health, roundTrip, postRoundTrip, track, contacts, send] = results;
      for (const [k, result] of results.entries()) printThroughput(kinds[k].label, result);
      const ratio = (label, r, goal, floor = health) =>
        report(
          label,
          fmt(r ? r.rps / floor.rps : NaN, 2),
          `(${fmt(r?.rps ?? NaN, 0)} / ${fmt(floor.rps, 0)} req/s${goal === undefined ? "" : `; goal >= ${goal}`})`,
        );
      ratio("POST /v1/track / GET /health", track, 0.6);
      ratio("POST /contacts / GET /health", contacts, 0.6);
      ratio("POST /v1/send (1 recipient) / GET /health", send, 0.4);
      // What a path that makes one D1 round trip can reach at best here, and how near the one-round-trip paths come.
      ratio("one D1 round trip alone / GET /health", roundTrip);
      ratio("POST /v1/track / one D1 round trip alone", track, undefined, roundTrip);
      ratio("POST /contacts / one D1 round trip alone", contacts, undefined, roundTrip);
      // The same for a POST: what its body costs on the way in, and how near the write paths come to that ceiling.
      ratio("POST + JSON body + one round trip / GET /health", postRoundTrip);
      ratio("POST /v1/track / POST + one round trip", track, undefined, postRoundTrip);
      ratio("POST /contacts / POST + one round trip", contacts, undefined, postRoundTrip);
    },
  },
  {
    key: "list",
    title: `GET /contacts latency with ${LIST_CONTACTS} contacts`,
    async run(ctx) {
      const key = ctx.list.secretKey;
      const first = await send(ctx.base, { path: `/contacts?limit=1`, key });
      const total = JSON.parse(first.text).total;
      if (total !== LIST_CONTACTS) throw new Error(`expected ${LIST_CONTACTS} contacts, the API counts ${total}`);

      // Walk the list with cursors to a position deep inside it (49,000 rows in with 50,000).
      const target = Math.max(PAGE, LIST_CONTACTS - 1000);
      let cursor = null;
      let seen = 0;
      const walkStart = performance.now();
      while (seen < target) {
        const limit = Math.min(100, target - seen);
        const res = await send(ctx.base, { path: `/contacts?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`, key });
        const page = JSON.parse(res.text);
        seen += page.contacts.length;
        cursor = page.cursor;
        if (!cursor) throw new Error(`the list ended after ${seen} contacts`);
      }
      const walkSeconds = (performance.now() - walkStart) / 1000;
      log(`walked ${seen} contacts with cursors in ${fmt(walkSeconds)} s`);

      const firstPage = await latency(ctx.base, { path: `/contacts?limit=${PAGE}`, key });
      const deepPage = await latency(ctx.base, { path: `/contacts?limit=${PAGE}&cursor=${encodeURIComponent(cursor)}`, key });
      report(`first page (limit ${PAGE})`, `${fmt(firstPage.median, 2)} ms`, `median; p95 ${fmt(firstPage.p95, 2)} ms over ${LATENCY_SAMPLES}`);
      report(
        `page after ${seen} contacts (page ${seen / PAGE + 1})`,
        `${fmt(deepPage.median, 2)} ms`,
        `median; p95 ${fmt(deepPage.p95, 2)} ms over ${LATENCY_SAMPLES}`,
      );
      report("deep / first page (median)", `${fmt(deepPage.median / firstPage.median, 2)}x`, "(keyset pagination: close to 1)");
    },
  },
  {
    key: "workflows",
    title: "Workflows (Cloudflare Workflows, local engine)",
    async run(ctx) {
      const key = ctx.bench.secretKey;
      const createWorkflow = async (body) => {
        const res = await send(ctx.base, { method: "POST", path: "/workflows", key, body: { enabled: true, steps: [], ...body } });
        if (res.status !== 201) throw new Error(`POST /workflows answered ${res.status}: ${res.text.slice(0, 200)}`);
        return JSON.parse(res.text).id;
      };
      const executionsOf = async (id) => {
        const stats = JSON.parse((await send(ctx.base, { path: `/workflows/${id}`, key })).text).stats;
        return Object.values(stats).reduce((a, b) => a + b, 0);
      };
      // The cost of /v1/track: an event no workflow starts on vs one that starts a workflow (a new contact each time).
      await createWorkflow({ name: "bench start", eventName: "wf-start" });
      const track = (event) => (i) => ({ method: "POST", path: "/v1/track", key: ctx.bench.publicKey, body: { email: `${event}${i}@bench.test`, event } });
      const none = await throughput(ctx.base, track("wf-none"), [200]);
      printThroughput("POST /v1/track, event starts no workflow", none);
      const starts = await throughput(ctx.base, track("wf-start"), [200]);
      printThroughput("POST /v1/track, event starts a workflow", starts);
      report("track cost ratio (starts / none)", `${fmt(none.rps / starts.rps, 2)}x`, `(throughput; median latency ${fmt(starts.median / none.median, 2)}x)`);

      // Executions started per second: WORKFLOW_EVENTS tracked events, timed until every execution exists in D1.
      const burst = await createWorkflow({ name: "bench burst", eventName: "wf-burst" });
      const t0 = performance.now();
      let next = 0;
      await Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          while (next < WORKFLOW_EVENTS) {
            const i = next++;
            const res = await send(ctx.base, track("wf-burst")(i));
            if (res.status !== 200) throw new Error(`/v1/track answered ${res.status}`);
          }
        }),
      );
      const trackedSeconds = (performance.now() - t0) / 1000;
      let started = 0;
      const deadline = performance.now() + 120_000;
      while (performance.now() < deadline) {
        started = await executionsOf(burst);
        if (started >= WORKFLOW_EVENTS) break;
        await new Promise((r) => setTimeout(r, 250));
      }
      const seconds = (performance.now() - t0) / 1000;
      report(
        `executions started from ${WORKFLOW_EVENTS} tracked events`,
        `${fmt(started / seconds, 0)} exec/s`,
        `(${started} of ${WORKFLOW_EVENTS} in ${fmt(seconds)} s; events tracked in ${fmt(trackedSeconds)} s)`,
      );
    },
  },
  {
    key: "sending",
    title: "Sending (capture provider, send rate lifted)",
    async run(ctx) {
      const from = `hello@${BENCH_DOMAIN}`;
      const accepted = await throughput(
        ctx.base,
        (i) => ({
          method: "POST",
          path: "/v1/send",
          key: ctx.bench.secretKey,
          body: { to: `s${i}@bench.test`, from, subject: "Hi {{n}}", body: "<p>Hello {{n}}</p>", data: { n: i } },
        }),
        [200],
      );
      printThroughput("POST /v1/send accepted (1 recipient)", accepted);
    },
  },
];

/** The Worker's D1 statement counts (development-only counter, GET /dev/d1-stats). */
const d1Stats = (base) => api(base, null, "GET", "/dev/d1-stats");
/** Statements the queue consumers ran between two counter readings, without the capture provider's own writes (SES writes nothing to D1). */
function consumerStatements(before, after) {
  if (!after.counting || !after.bySource) return null;
  const q = (s) => s.bySource.queue;
  const statements = q(after).statements - q(before).statements - (q(after).captureStatements - q(before).captureStatements);
  return after.statements < before.statements ? null : statements; // an isolate restart resets the counter
}

/** Waits until none of the project's emails is QUEUED or SENDING (at most SEND_TIMEOUT_S). */
async function waitForQueueDrain(base, key) {
  const deadline = performance.now() + SEND_TIMEOUT_S * 1000;
  while (performance.now() < deadline) {
    const pending = await Promise.all(
      ["QUEUED", "SENDING"].map(async (status) => (await api(base, key, "GET", `/emails?status=${status}&limit=1`)).data.total),
    );
    if (pending.every((n) => n === 0)) return;
    await sleep(100);
  }
}

SECTIONS.push({
  key: "consumer",
  title: `Queue consumer: ${SEND_EMAILS} emails accepted -> SENT (capture provider, send rate lifted)`,
  async run(ctx) {
    // Earlier sections' mail (the /v1/send throughput figure) drains first, so this times only these emails.
    await waitForQueueDrain(ctx.base, ctx.bench.secretKey);
    // SEND_EMAILS emails accepted in requests of 50 recipients, timed until every one is SENT.
    const key = ctx.sender.secretKey;
    const requests = Math.ceil(SEND_EMAILS / 50);
    const before = await d1Stats(ctx.base);
    const cpuBefore = serverCpuMs(ctx.server.child.pid);
    const t0 = performance.now();
    let nextRequest = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (nextRequest < requests) {
          const r = nextRequest++;
          const to = Array.from({ length: 50 }, (_, j) => `e2e${r * 50 + j}@bench.test`).slice(0, SEND_EMAILS - r * 50);
          const res = await send(ctx.base, {
            method: "POST",
            path: "/v1/send",
            key,
            body: { to, from: `hello@send.${BENCH_DOMAIN}`, subject: "Bench", body: "<p>Hello {{email}}</p>" },
          });
          if (res.status !== 200) throw new Error(`/v1/send answered ${res.status}: ${res.text.slice(0, 200)}`);
        }
      }),
    );
    const acceptSeconds = (performance.now() - t0) / 1000;
    const deadline = performance.now() + SEND_TIMEOUT_S * 1000;
    let sent = 0;
    while (performance.now() < deadline) {
      const res = await send(ctx.base, { path: "/emails?status=SENT&limit=1", key });
      sent = JSON.parse(res.text).data.total;
      if (sent >= SEND_EMAILS) break;
      await sleep(100);
    }
    const totalSeconds = (performance.now() - t0) / 1000;
    const cpu = serverCpuMs(ctx.server.child.pid);
    const after = await d1Stats(ctx.base);
    const statements = consumerStatements(before, after);
    report(`accepted ${SEND_EMAILS} emails (50 per request)`, `${fmt(SEND_EMAILS / acceptSeconds, 0)} emails/s`, `(${fmt(acceptSeconds)} s)`);
    report(
      `${SEND_EMAILS} emails accepted -> SENT`,
      `${fmt(sent / totalSeconds, 0)} emails/s`,
      `goal >= 2,000 (${sent} of ${SEND_EMAILS} SENT in ${fmt(totalSeconds)} s, the last ${fmt(totalSeconds - acceptSeconds)} s after the last was accepted${sent < SEND_EMAILS ? `; gave up after ${SEND_TIMEOUT_S} s` : ""})`,
    );
    report(
      "D1 statements per email in the consumer",
      statements === null ? "n/a" : fmt(statements / Math.max(1, sent), 3),
      statements === null
        ? "(counter off, or the isolate restarted)"
        : `goal <= 0.05 (${statements} statements for ${sent} emails, counted in the queue handler; the capture provider's own writes excluded)`,
    );
    reportCpuPerEmail(cpuBefore, cpu, sent, totalSeconds);
  },
});

/** Campaign contacts: all subscribed, every other one on the "pro" plan (the segment figure counts those). */
const campaignContactRow = (projectId, prefix) => {
  const now = Date.now();
  return (j) => `(${sqlText(uuidv7())},${sqlText(projectId)},'${prefix}${j}@bench.test',1,'{"plan":"${j % 2 === 0 ? "pro" : "free"}","n":${j}}',${now},${now})`;
};

async function api(base, key, method, path, body) {
  const res = await send(base, { method, path, key, body });
  let parsed = null;
  try {
    parsed = JSON.parse(res.text);
  } catch {
    // not JSON
  }
  if (res.status >= 300) throw new Error(`${method} ${path} answered ${res.status}: ${res.text.slice(0, 300)}`);
  return parsed;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

SECTIONS.push(
  {
    key: "campaign",
    title: `Segments and campaigns (${CAMPAIGN_CONTACTS} contacts, capture provider, send rate lifted)`,
    async run(ctx) {
      const key = ctx.campaign.secretKey;
      const pro = { logic: "AND", groups: [{ filters: [{ field: "data.plan", operator: "equals", value: "pro" }] }] };
      const segment = await api(ctx.base, key, "POST", "/segments", { name: "Pro", condition: pro });
      const count = await latency(ctx.base, { path: `/segments/${segment.id}`, key }, 20);
      report(
        `segment memberCount over ${CAMPAIGN_CONTACTS} contacts`,
        `${fmt(count.median, 1)} ms`,
        `median GET /segments/{id}; p95 ${fmt(count.p95, 1)} ms; memberCount ${segment.memberCount}`,
      );

      const campaign = (
        await api(ctx.base, key, "POST", "/campaigns", {
          name: "Bench",
          subject: "Hello {{plan}}",
          body: "<p>Hello {{email}}, you are on {{plan}}.</p>",
          from: `news@campaign.${BENCH_DOMAIN}`,
          audienceType: "ALL",
        })
      ).data;
      const before = await api(ctx.base, null, "GET", "/dev/d1-stats");
      const cpuBefore = serverCpuMs(ctx.server.child.pid);
      const t0 = performance.now();
      await api(ctx.base, key, "POST", `/campaigns/${campaign.id}/send`, {});
      const deadline = t0 + CAMPAIGN_TIMEOUT_S * 1000;
      let status = "SENDING";
      let sent = 0;
      let lastLog = 0;
      while (performance.now() < deadline) {
        status = (await api(ctx.base, key, "GET", `/campaigns/${campaign.id}`)).data.status;
        if (status === "SENT") break;
        if (performance.now() - lastLog > 15_000) {
          sent = (await api(ctx.base, key, "GET", `/emails?campaignId=${campaign.id}&status=SENT&limit=1`)).data.total;
          log(`campaign: ${sent} of ${CAMPAIGN_CONTACTS} SENT after ${fmt((performance.now() - t0) / 1000)} s`);
          lastLog = performance.now();
        }
        await sleep(500);
      }
      const seconds = (performance.now() - t0) / 1000;
      const after = await api(ctx.base, null, "GET", "/dev/d1-stats");
      const stats = (await api(ctx.base, key, "GET", `/campaigns/${campaign.id}/stats`)).data;
      sent = stats.sentCount;
      const statements = consumerStatements(before, after);
      report(
        `campaign to ${CAMPAIGN_CONTACTS}: send -> SENT`,
        status === "SENT" ? `${fmt(seconds)} s` : "not SENT",
        status === "SENT" ? `goal < 60 s (${stats.totalRecipients} recipients)` : `(${sent} of ${CAMPAIGN_CONTACTS} sent after ${CAMPAIGN_TIMEOUT_S} s)`,
      );
      report("campaign emails per second", `${fmt(sent / seconds, 0)} emails/s`, `(${sent} sent in ${fmt(seconds)} s)`);
      reportCpuPerEmail(cpuBefore, serverCpuMs(ctx.server.child.pid), sent, seconds);
      report(
        "D1 statements per campaign email",
        statements === null ? "n/a" : fmt(statements / Math.max(1, sent), 3),
        statements === null
          ? "(counter off, or the isolate restarted)"
          : `goal < 0.1 (${statements} statements for ${sent} emails in the queue consumers: audience pages and sends; the capture provider's own writes excluded)`,
      );
    },
  },
  {
    key: "priority",
    title: `Sending priority: transactional sends during a ${PRIORITY_CONTACTS}-recipient campaign at 14 emails/s`,
    async run() {
      rmSync(PRIORITY_STATE_DIR, { recursive: true, force: true });
      run("npx", ["wrangler", "d1", "migrations", "apply", "DB", "--local", "--persist-to", PRIORITY_STATE_DIR]);
      const project = createProject("bench-priority", PRIORITY_STATE_DIR);
      run("npx", [
        "wrangler",
        "d1",
        "execute",
        "DB",
        "--local",
        "--persist-to",
        PRIORITY_STATE_DIR,
        "--yes",
        "--command",
        verifiedDomainSql(project.id, BENCH_DOMAIN),
      ]);
      insertContacts(project.id, PRIORITY_CONTACTS, { stateDir: PRIORITY_STATE_DIR, row: campaignContactRow(project.id, "fan") });
      const server = await startServer(PRIORITY_STATE_DIR, { SEND_RATE_PER_SECOND: "14" });
      try {
        const key = project.secretKey;
        const campaign = (
          await api(server.base, key, "POST", "/campaigns", {
            name: "Big",
            subject: "News",
            body: "<p>News for {{email}}</p>",
            from: `news@${BENCH_DOMAIN}`,
            audienceType: "ALL",
          })
        ).data;
        await api(server.base, key, "POST", `/campaigns/${campaign.id}/send`, {});
        // Wait until the campaign is draining at the rate.
        const sentSoFar = async () => (await api(server.base, key, "GET", `/emails?campaignId=${campaign.id}&status=SENT&limit=1`)).data.total;
        const waitUntil = performance.now() + 60_000;
        while ((await sentSoFar()) < 30 && performance.now() < waitUntil) await sleep(250);
        const delays = [];
        for (let i = 0; i < 5; i++) {
          const t0 = performance.now();
          const res = await api(server.base, key, "POST", "/v1/send", {
            to: `reset${i}@bench.test`,
            from: `auth@${BENCH_DOMAIN}`,
            subject: "Reset",
            body: "<p>Reset</p>",
          });
          const id = res.data.emails[0].email;
          for (;;) {
            const email = await api(server.base, key, "GET", `/emails/${id}`);
            if (email.status !== "QUEUED" && email.status !== "SENDING") break;
            if (performance.now() - t0 > 120_000) throw new Error("transactional send not sent after 120 s");
            await sleep(25);
          }
          delays.push(performance.now() - t0);
          await sleep(1000);
        }
        const queued = (await api(server.base, key, "GET", `/emails?campaignId=${campaign.id}&status=QUEUED&limit=1`)).data.total;
        const done = await sentSoFar();
        const sorted = [...delays].sort((a, b) => a - b);
        report(
          "transactional send -> SENT during the campaign",
          `${fmt(sorted[2], 0)} ms`,
          `median of 5; max ${fmt(sorted[4], 0)} ms (campaign: ${done} sent, ${queued} still queued)`,
        );
      } finally {
        server.stop();
      }
    },
  },
);

// ---- main --------------------------------------------------------------------

const servers = [];

/** `wrangler dev` on a free 127.0.0.1 port over `stateDir`, with the rate limit lifted and these extra vars. */
async function startServer(stateDir, vars = {}) {
  const port = await freePort();
  const inspectorPort = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const allVars = {
    RATE_LIMIT_PER_MINUTE: "100000000",
    SEND_RATE_PER_SECOND: "1000000",
    EMAIL_PROVIDER: "capture",
    ENVIRONMENT: "development",
    PUBLIC_URL: base,
    LINK_SIGNING_SECRET: "bench-only-secret-at-least-32-bytes-long",
    // Workflows with a webhook step keep its signing secret encrypted with this key.
    DKIM_ENCRYPTION_KEY: "bench-only-encryption-key-at-least-32-bytes",
    BENCH_COUNT_D1: "1",
    ...vars,
  };
  log(`starting wrangler dev on ${base} (${stateDir})${INSPECTOR ? " with the devtools inspector" : ""}`);
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
      "--inspector-port",
      String(inspectorPort),
      "--persist-to",
      stateDir,
      ...Object.entries(allVars).flatMap(([k, v]) => ["--var", `${k}:${v}`]),
      "--show-interactive-dev-session=false",
      ...(PROFILE ? ["--minify=false"] : []),
    ],
    // wrangler dev relays a devtools Network event for every subrequest of the
    // Worker (each D1 and Durable Object call) through its inspector proxy,
    // about 1.5 ms of CPU per subrequest on this machine in wrangler's node and
    // proxy processes: a cost of the dev tool that no deployment has, and one
    // that falls on exactly the paths the bench compares with GET /health.
    // wrangler turns its inspector off inside a VS Code JavaScript debug
    // terminal (VSCODE_INSPECTOR_OPTIONS set); the bench borrows that switch.
    // BENCH_INSPECTOR=1 keeps the inspector (README "Benchmarks" has both).
    { env: INSPECTOR ? env : { ...env, VSCODE_INSPECTOR_OPTIONS: "{}" }, stdio: ["ignore", "pipe", "pipe"], detached: true },
  );
  let serverLog = "";
  // BENCH_SERVER_LOG=<file>: keep the server's whole output (queue batches and their times, errors).
  const keep = (d) => {
    serverLog = (serverLog + d).slice(-20_000);
    if (process.env.BENCH_SERVER_LOG) appendFileSync(process.env.BENCH_SERVER_LOG, d);
  };
  child.stdout.on("data", keep);
  child.stderr.on("data", keep);
  const handle = {
    base,
    child,
    inspectorPort,
    stop() {
      if (child.exitCode === null) {
        try {
          process.kill(-child.pid, "SIGTERM"); // the process group (npx, wrangler, workerd)
        } catch {
          // already gone
        }
      }
    },
  };
  servers.push(handle);
  try {
    await waitForHealth(base, child);
    const inspectorAnswers = await fetch(`http://127.0.0.1:${inspectorPort}/json`).then(
      () => true,
      () => false,
    );
    if (inspectorAnswers !== INSPECTOR) {
      throw new Error(
        `wrangler dev's devtools inspector is ${inspectorAnswers ? "on" : "off"}, the bench expected it ${INSPECTOR ? "on" : "off"} (see startServer)`,
      );
    }
  } catch (err) {
    process.stderr.write(serverLog.slice(-4000));
    throw err;
  }
  return handle;
}

function stopServers() {
  for (const server of servers) server.stop();
}

async function main() {
  const wants = (key) => SECTIONS.some((section) => section.key === key && wantsSection(section));
  // Sections that need no running service (standalone: true) run without one when they are all that is wanted.
  if (SECTIONS.every((section) => section.standalone || !wantsSection(section))) {
    console.log(`\nEdge Mail benchmark  ${new Date().toISOString()}  node ${process.version}`);
    for (const section of SECTIONS.filter(wantsSection)) {
      console.log(`\n## ${section.title}`);
      await section.run({});
    }
    console.log(`\ntotal ${fmt((performance.now() - started) / 1000)} s`);
    return;
  }
  rmSync(STATE_DIR, { recursive: true, force: true });
  log(`applying migrations into ${STATE_DIR}`);
  run("npx", ["wrangler", "d1", "migrations", "apply", "DB", "--local", "--persist-to", STATE_DIR]);
  log("creating projects");
  const bench = createProject("bench");
  const list = createProject("bench-list");
  const sender = createProject("bench-send");
  const campaign = createProject("bench-campaign");
  run("npx", [
    "wrangler",
    "d1",
    "execute",
    "DB",
    "--local",
    "--persist-to",
    STATE_DIR,
    "--yes",
    "--command",
    [
      verifiedDomainSql(bench.id, BENCH_DOMAIN),
      verifiedDomainSql(sender.id, `send.${BENCH_DOMAIN}`),
      verifiedDomainSql(campaign.id, `campaign.${BENCH_DOMAIN}`),
    ].join(" "),
  ]);
  let insertSeconds = 0;
  if (wants("list")) {
    log(`inserting ${LIST_CONTACTS} contacts`);
    const insertStart = performance.now();
    insertContacts(list.id, LIST_CONTACTS);
    insertSeconds = (performance.now() - insertStart) / 1000;
  }
  if (wants("campaign")) {
    log(`inserting ${CAMPAIGN_CONTACTS} campaign contacts`);
    insertContacts(campaign.id, CAMPAIGN_CONTACTS, { row: campaignContactRow(campaign.id, "fan") });
  }

  const server = await startServer(STATE_DIR);
  const { base } = server;
  const probe = await send(base, { path: "/contacts?limit=1", key: bench.secretKey });
  const ctx = { base, server, bench, list, sender, campaign };

  console.log(`\nEdge Mail benchmark  ${new Date().toISOString()}  node ${process.version}  ${base}`);
  console.log(
    `concurrency ${CONCURRENCY}, ${SECONDS}s per throughput figure; rate limit ${probe.headers.get("RateLimit-Limit")}/min; wrangler dev devtools inspector ${INSPECTOR ? "on (BENCH_INSPECTOR=1)" : "off"}`,
  );
  if (wants("list")) console.log(`seeded ${LIST_CONTACTS} contacts by SQL in ${fmt(insertSeconds)} s`);
  const profiler = PROFILE ? await startProfiler(server.inspectorPort) : null;
  for (const section of SECTIONS.filter(wantsSection)) {
    console.log(`\n## ${section.title}`);
    await section.run(ctx);
  }
  if (profiler) await profiler.stop(PROFILE);
  console.log(`\ntotal ${fmt((performance.now() - started) / 1000)} s`);
}

/** Starts the devtools CPU profiler in the Worker's isolate (wrangler dev's inspector on `port`); stop(file) writes the profile and prints its top functions. */
async function startProfiler(port) {
  // ws comes with miniflare (wrangler's and vitest-pool-workers' local runtime); Node 20 has no WebSocket client of its own.
  const { default: WebSocket } = await import("ws");
  const [target] = await (await fetch(`http://127.0.0.1:${port}/json`)).json();
  const socket = new WebSocket(target.webSocketDebuggerUrl);
  await new Promise((resolve, reject) => {
    socket.once("open", resolve);
    socket.once("error", reject);
  });
  let nextId = 0;
  const pending = new Map();
  socket.on("message", (data) => {
    const message = JSON.parse(String(data));
    pending.get(message.id)?.(message);
    pending.delete(message.id);
  });
  const call = (method, params = {}) =>
    new Promise((resolve, reject) => {
      const id = ++nextId;
      pending.set(id, (message) => (message.error ? reject(new Error(`${method}: ${message.error.message}`)) : resolve(message.result)));
      socket.send(JSON.stringify({ id, method, params }));
    });
  await call("Profiler.enable");
  await call("Profiler.setSamplingInterval", { interval: 200 });
  await call("Profiler.start");
  log(`CPU profile of ${target.title ?? "the Worker"} started`);
  return {
    async stop(file) {
      const { profile } = await call("Profiler.stop");
      socket.close();
      writeFileSync(file, JSON.stringify(profile));
      console.log(`\n## CPU profile of the Worker isolate (${file})`);
      for (const line of profileSummary(profile, 25)) console.log(line);
    },
  };
}

/** The `top` functions of a devtools CPU profile by self time and by total time (a function counted once per stack), as percentages of the sampled time. */
function profileSummary(profile, top) {
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
  const parents = new Map();
  for (const node of profile.nodes) for (const child of node.children ?? []) parents.set(child, node.id);
  const name = (node) => `${node.callFrame.functionName || "(anonymous)"} ${node.callFrame.url.split("/").pop()}:${node.callFrame.lineNumber + 1}`;
  const timeByNode = new Map();
  let total = 0;
  profile.samples.forEach((id, i) => {
    const dt = profile.timeDeltas[i] ?? 0;
    timeByNode.set(id, (timeByNode.get(id) ?? 0) + dt);
    total += dt;
  });
  const self = new Map();
  const inclusive = new Map();
  for (const [id, dt] of timeByNode) {
    const key = name(nodes.get(id));
    self.set(key, (self.get(key) ?? 0) + dt);
    const seen = new Set();
    for (let at = id; at !== undefined; at = parents.get(at)) {
      const frame = name(nodes.get(at));
      if (seen.has(frame)) continue;
      seen.add(frame);
      inclusive.set(frame, (inclusive.get(frame) ?? 0) + dt);
    }
  }
  const rows = (map) =>
    [...map]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([key, dt]) => `${fmt((dt / total) * 100, 1).padStart(6)}%  ${key}`);
  return [`sampled ${fmt(total / 1000, 0)} ms`, "self time:", ...rows(self), "total time:", ...rows(inclusive)];
}

/**
 * Server CPU (wrangler's and workerd's processes) per email, and how busy that
 * kept the machine's cores: the end-to-end figures are CPU-bound locally, and
 * this one moves less than emails/s when the machine is slower or shared.
 */
function reportCpuPerEmail(before, after, emails, seconds) {
  if (before === null || after === null || emails === 0) return;
  const ms = (after - before) / emails;
  report(
    "server CPU per email, end to end",
    `${fmt(ms, 2)} ms`,
    `(${fmt((after - before) / 1000 / seconds, 2)} cores busy on average; the local runtime does all the work on one workerd thread)`,
  );
}

/** The processes of `pgid`'s process group (Linux /proc): pid, command name and the /proc/<pid>/stat fields after it; null elsewhere. */
function processGroup(pgid) {
  let pids;
  try {
    pids = readdirSync("/proc").filter((name) => /^\d+$/.test(name));
  } catch {
    return null;
  }
  const group = [];
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(fields[2]) === pgid) group.push({ pid, name: stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")")), fields });
    } catch {
      // the process went away
    }
  }
  return group;
}

/** CPU time (ms, user + system) of every process in `pgid`'s process group, or null without /proc. */
function serverCpuMs(pgid) {
  const group = processGroup(pgid);
  // utime and stime are in clock ticks (USER_HZ 100).
  return group && group.reduce((total, p) => total + ((Number(p.fields[11]) + Number(p.fields[12])) * 1000) / 100, 0);
}

/** Resident memory (bytes) of the workerd processes in `pgid`'s process group, or null without /proc. */
function workerdRss(pgid) {
  let total = 0;
  let found = false;
  for (const p of processGroup(pgid) ?? []) {
    if (p.name !== "workerd") continue;
    try {
      const rss = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${p.pid}/status`, "utf8"));
      if (rss) {
        total += Number(rss[1]) * 1024;
        found = true;
      }
    } catch {
      // the process went away
    }
  }
  return found ? total : null;
}

const ATTACHMENT_BYTES = 7_000_000; // MAX_ATTACHMENT_BYTES in src/services/send/attachments.ts

SECTIONS.push({
  key: "attachments",
  title: `Attachments: the largest allowed (${ATTACHMENT_BYTES} bytes) to 10 recipients, consumer memory`,
  async run(ctx) {
    const key = ctx.bench.secretKey;
    const pgid = ctx.server.child.pid;
    const baseline = workerdRss(pgid);
    if (baseline === null) {
      report("consumer peak memory", "n/a", "(no /proc: not Linux)");
      return;
    }
    let peak = baseline;
    const sampler = setInterval(() => (peak = Math.max(peak, workerdRss(pgid) ?? 0)), 20);
    // Base64 of ATTACHMENT_BYTES zero bytes (7,000,000 = 3 * 2,333,333 + 1).
    const content = `${"A".repeat(2_333_333 * 4)}AA==`;
    const to = Array.from({ length: 10 }, (_, i) => `att${i}@bench.test`);
    const t0 = performance.now();
    const accepted = await api(ctx.base, key, "POST", "/v1/send", {
      to,
      from: `hello@${BENCH_DOMAIN}`,
      subject: "Report",
      body: "<p>Attached.</p>",
      attachments: [{ filename: "report.pdf", content, contentType: "application/pdf" }],
    });
    const ids = accepted.data.emails.map((e) => e.email);
    const deadline = performance.now() + SEND_TIMEOUT_S * 1000;
    let statuses = [];
    while (performance.now() < deadline) {
      statuses = await Promise.all(ids.map(async (id) => (await api(ctx.base, key, "GET", `/emails/${id}`)).status));
      if (statuses.every((s) => s !== "QUEUED" && s !== "SENDING")) break;
      await sleep(100);
    }
    const seconds = (performance.now() - t0) / 1000;
    clearInterval(sampler);
    peak = Math.max(peak, workerdRss(pgid) ?? 0);
    const mb = (bytes) => `${fmt(bytes / 1024 / 1024, 0)} MB`;
    const sent = statuses.filter((s) => s === "SENT").length;
    report("10 emails with a 7 MB attachment", `${sent} of 10 SENT`, `in ${fmt(seconds)} s`);
    report(
      "workerd resident memory, peak while sending",
      mb(peak),
      `(${mb(baseline)} before, +${mb(peak - baseline)}; the whole local runtime, consumer and D1 included)`,
    );
  },
});

SECTIONS.push({
  key: "startup",
  title: "Cold start and size: the Worker beside a bare Hono worker (bench/bare-hono)",
  standalone: true,
  run: () => runStartupSection({ env, log, report, fmt }),
});

for (const signal of ["SIGINT", "SIGTERM"]) {
  process.on(signal, () => {
    stopServers();
    process.exit(130);
  });
}

main()
  .then(() => {
    stopServers();
    process.exit(0);
  })
  .catch((err) => {
    console.error(`bench failed: ${err instanceof Error ? err.stack : err}`);
    stopServers();
    process.exit(1);
  });
