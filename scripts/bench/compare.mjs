#!/usr/bin/env node
// `npm run bench:compare -- <git ref>`: the hot paths of this checkout against an earlier
// commit, in one run on one machine. Each side is its own checkout (the ref's in
// .wrangler/bench-compare/tree, installed with npm) with its own throwaway database and
// its own `wrangler dev`; the request windows alternate between the two sides (ABBA), so
// both see the same phases of a machine whose speed drifts, and each ratio is taken
// against the same side's GET /health. A figure more than 5 % lower than the base fails.
//
// Figures: POST /v1/track, POST /contacts, POST /v1/send (plain, and with a template and
// an Idempotency-Key), each ÷ GET /health; emails accepted -> SENT per second (capture
// provider, COMPARE_EMAILS per run, a first run a side not counted, then four a side, ABBA BAAB, the median). Environment: COMPARE_ROUNDS
// (windows per kind and side, default 8), COMPARE_WINDOW_S (default 1.5), COMPARE_EMAILS
// (default 10000; fewer are quantised by the local queue's 1 s batch timeout), COMPARE_ONLY (requests or emails: one of the two parts), BENCH_CONCURRENCY.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import { performance } from "node:perf_hooks";
import {
  api,
  applyMigrations,
  createProject,
  env,
  executeSql,
  fmt,
  log,
  report,
  printTable,
  requestWindow,
  send,
  sleep,
  settings,
  startServer,
  stopServers,
  verifiedDomainSql,
  waitForQueueDrain,
} from "./lib.mjs";
import { acceptInFifties } from "./sending.mjs";
import { createBenchTemplate, requestKinds } from "./throughput.mjs";

const ref = process.argv[2];
if (!ref) {
  console.error("Usage: npm run bench:compare -- <git ref>   (e.g. a commit before the change being judged)");
  process.exit(2);
}
const rounds = Number(process.env.COMPARE_ROUNDS ?? 8);
const windowS = Number(process.env.COMPARE_WINDOW_S ?? 1.5);
const emails = Number(process.env.COMPARE_EMAILS ?? 10_000);
const only = process.env.COMPARE_ONLY ?? "";
const TOLERANCE = 0.05;
const EMAIL_RUN_PAUSE_MS = 2_000;
let lower = 0;

const root = resolve(".wrangler/bench-compare");
const git = (...args) => execFileSync("git", args, { encoding: "utf8" }).trim();

/** The ref's tree, checked out (detached) and installed once per commit. */
function baseTree() {
  const commit = git("rev-parse", "--verify", `${ref}^{commit}`);
  const dir = join(root, "tree");
  if (!existsSync(join(dir, ".bench-commit")) || git("-C", dir, "rev-parse", "HEAD") !== commit) {
    log(`checking out ${commit.slice(0, 7)} into ${dir}`);
    if (existsSync(dir)) execFileSync("git", ["worktree", "remove", "--force", dir]);
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(root, { recursive: true });
    execFileSync("git", ["worktree", "add", "--detach", dir, commit], { stdio: "ignore" });
    log("npm install in the base tree (its lock file; npm ci failed on some old commits)");
    execFileSync("npm", ["install", "--no-audit", "--no-fund"], { cwd: dir, env, stdio: "ignore" });
    execFileSync("touch", [join(dir, ".bench-commit")]);
  }
  return { dir, commit: commit.slice(0, 7) };
}

// Quotas lifted on both sides (an older side ignores the names it does not know).
const VARS = {
  QUOTA_CONTACTS: "100000000",
  QUOTA_EVENTS_PER_DAY: "100000000",
  QUOTA_EMAILS_PER_DAY: "100000000",
  QUOTA_PUBLIC_CONTACTS_PER_DAY: "100000000",
  QUOTA_PUBLIC_EVENTS_PER_DAY: "100000000",
};

async function prepare(name, cwd) {
  const stateDir = join(root, `state-${name}`);
  log(`${name}: migrations into ${stateDir}`);
  applyMigrations(stateDir, cwd);
  const bench = createProject(`compare-${name}`, stateDir, cwd);
  const sender = createProject(`compare-${name}-send`, stateDir, cwd);
  executeSql(`${verifiedDomainSql(bench.id, settings.domain)} ${verifiedDomainSql(sender.id, `send.${settings.domain}`)}`, stateDir, cwd);
  const server = await startServer(stateDir, VARS, { cwd });
  const template = await createBenchTemplate(server.base, bench.secretKey);
  return { name, server, bench, sender, template };
}

/** One window of `kind` on `side`: requests answered as expected, seconds, and the server's CPU (ms) meanwhile. */
async function window(side, kind, state) {
  await requestWindow(side.server, kind, state, windowS * 1000);
  await waitForQueueDrain(side.server.base, side.bench.secretKey);
}

async function main() {
  console.log(`Edge Mail bench:compare  ${new Date().toISOString()}  node ${process.version}`);
  const base = baseTree();
  const head = git("rev-parse", "--short=7", "HEAD");
  const dirty = git("status", "--porcelain", "--untracked-files=no") !== "";
  console.log(
    `base ${base.commit} (${ref}) against this checkout ${head}${dirty ? " with uncommitted changes" : ""}; ${rounds} windows of ${windowS} s per kind and side, ${settings.concurrency} in flight\n`,
  );
  const sides = [await prepare("base", base.dir), await prepare("head", undefined)];
  const runId = Date.now().toString(36);
  const kinds = sides.map((side) => [
    { label: "GET /health", makeRequest: () => ({ path: "/health" }), expect: [200] },
    ...requestKinds(side.bench, side.template.id, runId),
  ]);
  const states = sides.map(() => kinds[0].map(() => ({ next: 0, ok: 0, elapsed: 0, cpu: 0, errors: new Map() })));
  // Warm-up: every path compiled on both sides.
  for (const [s, side] of sides.entries()) {
    for (const kind of kinds[s]) await Promise.all(Array.from({ length: 8 }, (_, i) => send(side.server.base, kind.makeRequest(-1 - i))));
    await waitForQueueDrain(side.server.base, side.bench.secretKey);
  }
  for (let round = 0; round < (only === "emails" ? 0 : rounds); round++) {
    const order = round % 2 === 0 ? [0, 1] : [1, 0];
    for (let k = 0; k < kinds[0].length; k++) {
      for (const s of order) await window(sides[s], kinds[s][k], states[s][k]);
    }
    log(`round ${round + 1} of ${rounds}`);
  }
  const rps = (s, k) => states[s][k].ok / states[s][k].elapsed;
  // Server CPU (wrangler's and workerd's processes) per answered request: steadier than req/s on a busy machine.
  const cpu = (s, k) => (states[s][k].cpu === null ? "n/a" : `${fmt(states[s][k].cpu / states[s][k].ok, 2)}`);
  const errorsOf = (s) => states[s].flatMap((st) => [...st.errors].map(([status, n]) => `${n}x${status}`)).join(" ");
  for (const s of [0, 1]) if (errorsOf(s)) log(`${sides[s].name}: non-2xx answers ${errorsOf(s)}`);
  const compare = (figure, before, after, unit, detail) => {
    const change = after / before - 1;
    if (change < -TOLERANCE) lower++;
    report(
      figure,
      `${fmt(before, unit === "" ? 2 : 0)}${unit} -> ${fmt(after, unit === "" ? 2 : 0)}${unit} (${change >= 0 ? "+" : ""}${fmt(change * 100)} %)`,
      {
        goal: "no more than 5 % lower",
        met: change >= -TOLERANCE,
        shape: `base ${base.commit}, this checkout ${head}${dirty ? "+" : ""}; same machine, alternating windows`,
        detail,
      },
    );
  };
  if (only !== "emails") report("GET /health", `${fmt(rps(0, 0), 0)} -> ${fmt(rps(1, 0), 0)} req/s`, { shape: "the floor each ratio is taken against" });
  for (let k = 1; k < (only === "emails" ? 0 : kinds[0].length); k++) {
    const label = kinds[0][k].label;
    compare(
      `${label} / GET /health`,
      rps(0, k) / rps(0, 0),
      rps(1, k) / rps(1, 0),
      "",
      `${fmt(rps(0, k), 0)} / ${fmt(rps(0, 0), 0)} req/s -> ${fmt(rps(1, k), 0)} / ${fmt(rps(1, 0), 0)} req/s; ${states[0][k].ok} and ${states[1][k].ok} requests; server CPU ${cpu(0, k)} -> ${cpu(1, k)} ms/req (GET /health ${cpu(0, 0)} -> ${cpu(1, 0)})`,
    );
  }
  // Emails accepted -> SENT: a first run a side not counted (compiling, caches), then four a side in
  // ABBA BAAB order, a pause before each so that no run starts while a side still settles its last
  // (in A/A runs the side whose two counted runs came back to back lost up to 6 %); the median of each side's four.
  const sent = [[], []];
  const order = only === "requests" ? [] : [0, 1, 0, 1, 1, 0, 1, 0, 0, 1];
  for (const [run, s] of order.entries()) {
    const side = sides[s];
    const key = side.sender.secretKey;
    await sleep(EMAIL_RUN_PAUSE_MS);
    const before = (await api(side.server.base, key, "GET", "/emails?status=SENT&limit=1")).data.total;
    const t0 = performance.now();
    await acceptInFifties(side.server.base, key, emails, `hello@send.${settings.domain}`, `e${run}-`);
    const accepted = (performance.now() - t0) / 1000;
    await waitForQueueDrain(side.server.base, key);
    const seconds = (performance.now() - t0) / 1000;
    const after = (await api(side.server.base, key, "GET", "/emails?status=SENT&limit=1")).data.total;
    if (after - before !== emails) throw new Error(`${side.name}: ${after - before} of ${emails} emails SENT`);
    if (run >= 2) sent[s].push(emails / seconds);
    log(`${side.name}: ${emails} emails accepted -> SENT in ${fmt(seconds)} s (accepted in ${fmt(accepted)} s)${run < 2 ? ", not counted" : ""}`);
  }
  const median = (list) => {
    const sorted = [...list].sort((x, y) => x - y);
    return (sorted[(sorted.length - 1) >> 1] + sorted[sorted.length >> 1]) / 2;
  };
  if (only !== "requests")
    compare(
      `${emails} emails accepted -> SENT (capture provider)`,
      median(sent[0]),
      median(sent[1]),
      " emails/s",
      `runs: base ${sent[0].map((v) => fmt(v, 0)).join(", ")}; this checkout ${sent[1].map((v) => fmt(v, 0)).join(", ")} emails/s (the median of four each)`,
    );
  await stopServers();
  const failures = printTable();
  if (failures.length > 0 || lower > 0) process.exit(1);
}

for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => stopServers().finally(() => process.exit(130)));
main().catch(async (err) => {
  console.error(`bench:compare failed: ${err instanceof Error ? err.stack : err}`);
  await stopServers();
  process.exit(1);
});
