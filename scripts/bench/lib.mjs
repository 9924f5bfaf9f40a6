// Shared parts of `npm run bench` (scripts/bench/index.mjs): settings, the local
// servers, request helpers, and the one results table every section reports into.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { v7 as uuidv7 } from "uuid";
import {
  applyMigrations as applyLocalMigrations,
  createProject as createLocalProject,
  freeInspectorPort,
  freePort,
  startWranglerDev,
} from "../lib/local-server.mjs";

export { freePort };

const num = (name, fallback) => Number(process.env[name] ?? fallback);
/** Settings, each from its environment variable (README of the bench: docs/performance.md). */
export const settings = {
  stateDir: ".wrangler/bench-state",
  seconds: num("BENCH_SECONDS", 4),
  throughputRounds: num("BENCH_THROUGHPUT_ROUNDS", 4),
  concurrency: num("BENCH_CONCURRENCY", 32),
  maxRequests: 200_000,
  listContacts: num("BENCH_CONTACTS", 50_000),
  latencySamples: 50,
  sendEmails: num("BENCH_EMAILS", 10_000),
  sendTimeoutS: num("BENCH_SEND_TIMEOUT", 240),
  sesEmails: num("BENCH_SES_EMAILS", 2_000),
  sesLatencyMs: num("BENCH_SES_LATENCY_MS", 30),
  coldSamples: num("BENCH_COLD_SAMPLES", 6),
  leaseRequests: num("BENCH_LEASE_REQUESTS", 600),
  workflowEvents: num("BENCH_WORKFLOW_EVENTS", 500),
  campaignContacts: num("BENCH_CAMPAIGN_CONTACTS", 100_000),
  campaignTimeoutS: num("BENCH_CAMPAIGN_TIMEOUT", 900),
  priorityContacts: num("BENCH_PRIORITY_CONTACTS", 10_000),
  priorityStateDir: ".wrangler/bench-priority-state",
  startupRuns: num("BENCH_STARTUP_RUNS", 5),
  startupStateDir: process.env.BENCH_STARTUP_STATE ?? ".wrangler/bench-startup-state",
  domain: "bench.test",
  page: 20,
  /** BENCH_PROFILE=<file.cpuprofile>: a CPU profile of the Worker's isolate while the sections run (unminified; needs the inspector). */
  profile: process.env.BENCH_PROFILE,
};
/** BENCH_INSPECTOR=1: run wrangler dev with its devtools inspector, as `npm run dev` does (off by default, see startServer). */
settings.inspector = process.env.BENCH_INSPECTOR === "1" || Boolean(settings.profile);

export const env = { ...process.env, CI: "1", WRANGLER_SEND_METRICS: "false" };
const started = performance.now();
export const elapsedSeconds = () => (performance.now() - started) / 1000;

export function log(message) {
  process.stderr.write(`[bench ${elapsedSeconds().toFixed(1)}s] ${message}\n`);
}

/** Runs a command to its end; `cwd` another checkout of the service (scripts/bench/compare.mjs), this one by default. */
export function run(cmd, args, cwd = undefined) {
  return execFileSync(cmd, args, { cwd, encoding: "utf8", env, stdio: ["ignore", "pipe", "pipe"], maxBuffer: 64 * 1024 * 1024 });
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
export const fmt = (n, digits = 1) => (Number.isFinite(n) ? n.toFixed(digits) : "n/a");
const sqlText = (value) => `'${String(value).replace(/'/g, "''")}'`;

// ---- the results table -------------------------------------------------------

const rows = [];
const failures = [];

/**
 * One figure of the table. `goal` is what it should reach (text), `met` whether it
 * did (undefined when the figure has no goal), `shape` what was measured and what
 * was not (the request's shape, the provider, what is excluded), `detail` the numbers behind it.
 */
export function report(figure, value, { goal = "", met, shape = "", detail = "" } = {}) {
  rows.push({ figure, value, goal, met, shape, detail });
  log(`${figure}: ${value}${goal ? ` (goal ${goal}${met === undefined ? "" : met ? ", met" : ", NOT met"})` : ""}${detail ? ` ${detail}` : ""}`);
}

/** A check the run must pass (e.g. every campaign recipient sent); a failed one makes the bench exit non-zero. */
export function check(what, ok, detail = "") {
  if (!ok) failures.push(`${what}${detail ? `: ${detail}` : ""}`);
  log(`${ok ? "checked" : "FAILED"}: ${what}${detail ? ` (${detail})` : ""}`);
  return ok;
}

export function printTable() {
  const cell = (s) => String(s).replace(/\|/g, "\\|");
  console.log("| Figure | Result | Goal | Met | Shape | Detail |");
  console.log("|---|---|---|---|---|---|");
  for (const r of rows) {
    const met = r.met === undefined ? "" : r.met ? "yes" : "**no**";
    console.log(`| ${cell(r.figure)} | ${cell(r.value)} | ${cell(r.goal)} | ${met} | ${cell(r.shape)} | ${cell(r.detail)} |`);
  }
  return failures;
}

// ---- requests -----------------------------------------------------------------

export async function send(base, { method = "GET", path, key, body, headers: extra = {} }) {
  const headers = { ...extra };
  if (key) headers.Authorization = `Bearer ${key}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const res = await fetch(base + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text };
}

/** A request whose answer must be 2xx; its parsed JSON body. */
export async function api(base, key, method, path, body) {
  const res = await send(base, { method, path, key, body });
  if (res.status >= 300) throw new Error(`${method} ${path} answered ${res.status}: ${res.text.slice(0, 300)}`);
  try {
    return JSON.parse(res.text);
  } catch {
    return null;
  }
}

export function stats(samples) {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
  return { median: at(0.5), p95: at(0.95) };
}

export async function latency(base, request, n = settings.latencySamples) {
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

/**
 * Requests per second of several request kinds measured in turns: `rounds`
 * windows of settings.seconds / rounds each per kind, one kind after the other, so
 * every kind sees the same phases of the machine (whose speed drifts over a run)
 * and a ratio between two kinds compares like with like. `between` runs after each
 * window (e.g. waiting for the queue to drain what a window accepted).
 */
export async function interleavedThroughput(server, kinds, rounds, between = async () => {}) {
  const { base } = server;
  const states = kinds.map(() => ({ next: 0, ok: 0, elapsed: 0, cpu: 0, errors: new Map(), latencies: [] }));
  // Warm-up: compile paths, open connections.
  for (const kind of kinds) await Promise.all(Array.from({ length: settings.concurrency }, (_, i) => send(base, kind.makeRequest(-1 - i))));
  await between();
  for (let round = 0; round < rounds; round++) {
    for (const [k, kind] of kinds.entries()) {
      const state = states[k];
      await requestWindow(server, kind, state, (settings.seconds * 1000) / rounds);
      await between();
    }
  }
  return states.map((state) => ({
    rps: state.ok / state.elapsed,
    ok: state.ok,
    elapsed: state.elapsed,
    errors: state.errors,
    // CPU the server's processes (wrangler, workerd) spent per answered request.
    cpuPerRequest: state.cpu !== null && state.latencies.length > 0 ? state.cpu / state.latencies.length : Number.NaN,
    ...stats(state.latencies),
  }));
}

/**
 * One window of `kind` against `server`: settings.concurrency requests in flight for `ms`;
 * adds to `state` (next, ok, errors, elapsed, cpu: the server's CPU in ms, null once
 * unknown; and latencies when it has them).
 */
export async function requestWindow(server, kind, state, ms) {
  const { base } = server;
  const cpuBefore = serverCpuMs(server.child.pid);
  const deadline = performance.now() + ms;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: settings.concurrency }, async () => {
      while (performance.now() < deadline && state.next < settings.maxRequests) {
        const start = performance.now();
        const res = await send(base, kind.makeRequest(state.next++));
        state.latencies?.push(performance.now() - start);
        if (kind.expect.includes(res.status)) state.ok++;
        else state.errors.set(res.status, (state.errors.get(res.status) ?? 0) + 1);
      }
    }),
  );
  state.elapsed += (performance.now() - t0) / 1000;
  const cpuAfter = serverCpuMs(server.child.pid);
  state.cpu = cpuBefore !== null && cpuAfter !== null && state.cpu !== null ? state.cpu + (cpuAfter - cpuBefore) : null;
}

export async function throughput(server, makeRequest, expect) {
  const [result] = await interleavedThroughput(server, [{ makeRequest, expect }], 1);
  return result;
}

/** The numbers behind a throughput figure, for the table's detail column. */
export function throughputDetail(r) {
  const errs = [...r.errors].map(([s, n]) => `${n}x${s}`).join(" ");
  return `${r.ok} in ${fmt(r.elapsed)} s, median ${fmt(r.median)} ms, p95 ${fmt(r.p95)} ms, server CPU ${fmt(r.cpuPerRequest, 2)} ms/req${errs ? `, non-2xx: ${errs}` : ""}`;
}

// ---- local state ----------------------------------------------------------------

export function createProject(name, stateDir = settings.stateDir, cwd = undefined) {
  return createLocalProject(name, stateDir, { cwd, env });
}

/** Marks `name` a VERIFIED sending domain of the project directly in the throwaway database (no DNS here; neither provider here needs a DKIM key). */
export function verifiedDomainSql(projectId, name) {
  return `INSERT INTO domains (id, project_id, name, status, dkim_selector, dkim_public_key, dkim_private_key_encrypted, records) VALUES (${sqlText(uuidv7())}, ${sqlText(projectId)}, ${sqlText(name)}, 'VERIFIED', 'bench', '', '', '[]');`;
}

export function executeSql(sql, stateDir = settings.stateDir, cwd = undefined) {
  run("npx", ["wrangler", "d1", "execute", "DB", "--local", "--persist-to", stateDir, "--yes", "--command", sql], cwd);
}

/** A fresh database in `stateDir` (whatever was there is removed first), migrated. */
export function applyMigrations(stateDir, cwd = undefined) {
  rmSync(stateDir, { recursive: true, force: true });
  applyLocalMigrations(stateDir, { cwd, env });
}

/** Inserts `count` contacts with multi-row INSERTs through `wrangler d1 execute --file`. */
export function insertContacts(projectId, count, { stateDir = settings.stateDir, prefix = "list", row } = {}) {
  const dir = mkdtempSync(join(tmpdir(), "edge-mail-bench-"));
  const file = join(dir, "contacts.sql");
  const rowsPerStatement = 400; // keeps each statement well under D1's 100 KB limit
  const now = Date.now();
  const statements = [];
  for (let i = 0; i < count; i += rowsPerStatement) {
    const values = [];
    for (let j = i; j < Math.min(count, i + rowsPerStatement); j++) {
      values.push(row ? row(j) : `(${sqlText(uuidv7())},${sqlText(projectId)},'${prefix}${j}@bench.test',${j % 3 === 0 ? 0 : 1},'{}',${now},${now})`);
    }
    statements.push(`INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at) VALUES ${values.join(",")};`);
  }
  writeFileSync(file, statements.join("\n"));
  try {
    run("npx", ["wrangler", "d1", "execute", "DB", "--local", "--persist-to", stateDir, "--file", file, "--yes"]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Campaign contacts: all subscribed, every other one on the "pro" plan (the segment figure counts those). */
export const campaignContactRow = (projectId, prefix) => {
  const now = Date.now();
  return (j) => `(${sqlText(uuidv7())},${sqlText(projectId)},'${prefix}${j}@bench.test',1,'{"plan":"${j % 2 === 0 ? "pro" : "free"}","n":${j}}',${now},${now})`;
};

// ---- servers --------------------------------------------------------------------

const servers = [];

/**
 * `wrangler dev` on a free 127.0.0.1 port over `stateDir`, by default with the API
 * and send rate limits lifted and the capture provider; `vars` override. `config`
 * runs another wrangler.toml (the bare Hono worker). Resolves once /health answers.
 * `timeFirstRequest`: wait for wrangler's "Ready on" line instead of polling, then time
 * the isolate's first GET /health (`firstRequestMs`) and the one after it (`secondRequestMs`);
 * `{ path, key }` times that GET instead (with the key as its Bearer token).
 */
export async function startServer(stateDir, vars = {}, { config, defaults = true, timeFirstRequest = false, cwd } = {}) {
  const port = await freePort();
  const inspectorPort = await freeInspectorPort();
  const base = `http://127.0.0.1:${port}`;
  const allVars = defaults
    ? {
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
      }
    : vars;
  log(
    `starting wrangler dev on ${base} (${cwd ? `${cwd}/` : ""}${config ?? "wrangler.toml"}, ${stateDir})${settings.inspector ? " with the devtools inspector" : ""}`,
  );
  // The devtools inspector (off unless BENCH_INSPECTOR=1 or a profile) relays every subrequest;
  // the bench checks below which mode it got. BENCH_SERVER_LOG=<file>: the servers' whole output.
  let server;
  try {
    server = await startWranglerDev(allVars, {
      port,
      inspectorPort,
      inspector: settings.inspector,
      persistTo: stateDir,
      config,
      cwd,
      env,
      args: settings.profile ? ["--minify=false"] : [],
      readyLine: Boolean(timeFirstRequest),
      pollMs: 100,
      logLimit: 20_000,
      logFile: process.env.BENCH_SERVER_LOG,
    });
  } catch (err) {
    process.stderr.write(String(err?.message ?? err).slice(-4000));
    throw err;
  }
  const handle = { base, child: server.child, inspectorPort, firstRequestMs: Number.NaN, secondRequestMs: Number.NaN, stop: server.stop };
  servers.push(handle);
  try {
    if (timeFirstRequest) {
      const { path = "/health", key } = timeFirstRequest === true ? {} : timeFirstRequest;
      const headers = key ? { Authorization: `Bearer ${key}` } : {};
      for (const field of ["firstRequestMs", "secondRequestMs"]) {
        const t0 = performance.now();
        const res = await fetch(`${base}${path}`, { headers });
        await res.text();
        handle[field] = performance.now() - t0;
        if (!res.ok) throw new Error(`GET ${path} answered ${res.status}`);
      }
    }
    const inspectorAnswers = await fetch(`http://127.0.0.1:${inspectorPort}/json`).then(
      () => true,
      () => false,
    );
    if (inspectorAnswers !== settings.inspector) {
      throw new Error(`wrangler dev's devtools inspector is ${inspectorAnswers ? "on" : "off"}, the bench expected it ${settings.inspector ? "on" : "off"}`);
    }
  } catch (err) {
    process.stderr.write(server.output().slice(-4000));
    await handle.stop();
    throw err;
  }
  return handle;
}

export function stopServers() {
  return Promise.all(servers.map((server) => server.stop()));
}

// ---- what the servers did ---------------------------------------------------------

/** The Worker's D1 statement counts (development-only counter, GET /dev/d1-stats). */
export const d1Stats = (base) => api(base, null, "GET", "/dev/d1-stats");

/** Statements the queue consumers ran between two counter readings, without the capture provider's own writes (SES writes nothing to D1). */
export function consumerStatements(before, after) {
  if (!after.counting || !after.bySource) return null;
  const q = (s) => s.bySource.queue;
  const statements = q(after).statements - q(before).statements - (q(after).captureStatements - q(before).captureStatements);
  return after.statements < before.statements ? null : statements; // an isolate restart resets the counter
}

/** Waits until none of the project's emails is QUEUED or SENDING (at most settings.sendTimeoutS). */
export async function waitForQueueDrain(base, key) {
  const deadline = performance.now() + settings.sendTimeoutS * 1000;
  while (performance.now() < deadline) {
    const pending = await Promise.all(
      ["QUEUED", "SENDING"].map(async (status) => (await api(base, key, "GET", `/emails?status=${status}&limit=1`)).data.total),
    );
    if (pending.every((n) => n === 0)) return;
    await sleep(100);
  }
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
export function serverCpuMs(pgid) {
  const group = processGroup(pgid);
  // utime and stime are in clock ticks (USER_HZ 100).
  return group?.reduce((total, p) => total + ((Number(p.fields[11]) + Number(p.fields[12])) * 1000) / 100, 0) ?? null;
}

/** Resident memory (bytes) of the workerd processes in `pgid`'s process group, or null without /proc. */
export function workerdRss(pgid) {
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

/** Server CPU (wrangler's and workerd's processes) per email: the end-to-end figures are CPU-bound locally. */
export function cpuPerEmail(before, after, emails) {
  if (before === null || after === null || emails === 0) return "";
  return `server CPU ${fmt((after - before) / emails, 2)} ms per email`;
}
