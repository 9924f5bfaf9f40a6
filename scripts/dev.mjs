#!/usr/bin/env node
// `npm run dev`: a working local service from a fresh clone, offline.
// 1. .dev.vars from .dev.vars.example (safe local defaults) if missing
// 2. local D1 migrations: migrations/ on DB, migrations-data/ on every SHARD_n wrangler.toml binds
//    (state in .wrangler/state, shared with wrangler and the project CLI;
//    `npm run dev -- --persist-to <dir>` keeps it in <dir> instead). One line per database
//    ("D1 DB: 34 migrations applied", "D1 DB: up to date"); wrangler's own output only on failure.
// 3. the local dev project, its keys in .dev/project.json (or <dir>/dev-project.json)
// 4. wrangler dev on 127.0.0.1:$PORT (default 8787) with local D1, Queues, Durable Objects and
//    Workflows. PUBLIC_URL (tracking, unsubscribe and outbox links) is http://127.0.0.1:$PORT unless
//    set in the environment or in .dev.vars. Its output is kept short: the bindings table in one
//    line, an offline DNS failure in one line instead of workerd's stack (DEV_VERBOSE=1: all of it).
// 5. the Cron Trigger: wrangler dev never fires it on its own, so this script calls the
//    Worker's scheduled handler every minute, on the minute, as production does.
//    DEV_CRON_INTERVAL_MS sets another interval (0 turns it off); fire it by hand with
//    curl "http://127.0.0.1:8787/__scheduled?cron=*+*+*+*+*"
import { spawn, spawnSync } from "node:child_process";
import { lookup } from "node:dns/promises";
import { appendFileSync, copyFileSync, existsSync, readFileSync } from "node:fs";

const port = process.env.PORT ?? "8787";
const env = { ...process.env, CI: "1", WRANGLER_SEND_METRICS: "false", NO_COLOR: "1" };
const verbose = process.env.DEV_VERBOSE === "1";
const extra = process.argv.slice(2);
const persistAt = extra.findIndex((a) => a === "--persist-to" || a.startsWith("--persist-to="));
const persistTo = persistAt < 0 ? undefined : extra[persistAt].includes("=") ? extra[persistAt].split("=")[1] : extra[persistAt + 1];
const stateArgs = persistTo ? ["--persist-to", persistTo] : [];
const cronInterval = Number(process.env.DEV_CRON_INTERVAL_MS ?? 60_000);
const base = `http://127.0.0.1:${port}`;
// --test-scheduled makes wrangler answer /__scheduled by running the Worker's scheduled handler.
// (With [assets] configured, wrangler's own /cdn-cgi/handler/scheduled answers 500 before the Worker runs.)
const scheduledUrl = `${base}/__scheduled?cron=${encodeURIComponent("* * * * *")}`;

/** The data shard bindings of wrangler.toml's [[d1_databases]] (src/db/shards.ts): SHARD_1 … SHARD_n, commented-out ones not. */
function shardBindings() {
  const toml = readFileSync("wrangler.toml", "utf8");
  return [...toml.matchAll(/^\s*binding\s*=\s*"(SHARD_[1-9][0-9]*)"/gm)].map((m) => m[1]);
}

/** `cmd args` to its end, its output kept; on failure the output is shown and the script exits. */
function run(cmd, args) {
  const result = spawnSync(cmd, args, { env, encoding: "utf8", stdio: ["inherit", "pipe", "pipe"], maxBuffer: 64 * 1024 * 1024 });
  const output = `${result.stdout ?? ""}${result.stderr ?? ""}`;
  if (result.status !== 0) {
    process.stderr.write(output);
    console.error(`\n${cmd} ${args.join(" ")} failed`);
    process.exit(result.status ?? 1);
  }
  return output;
}

/** Applies the local migrations of one D1 binding; one line says what happened. */
function migrate(binding) {
  const output = run("npx", ["wrangler", "d1", "migrations", "apply", binding, "--local", ...stateArgs]);
  const applied = /About to apply (\d+) migration/.exec(output)?.[1];
  if (verbose) process.stdout.write(output);
  if (applied) console.log(`D1 ${binding}: ${applied} migration${applied === "1" ? "" : "s"} applied`);
  else if (/No migrations to apply/.test(output)) console.log(`D1 ${binding}: up to date`);
  else process.stdout.write(output); // an answer this script does not know: shown as wrangler gave it
}

if (!existsSync(".dev.vars")) {
  copyFileSync(".dev.vars.example", ".dev.vars");
  console.log("Created .dev.vars from .dev.vars.example");
} else {
  // Settings added to the example since .dev.vars was made are appended; existing values are kept.
  const names = (text) =>
    new Set(
      text
        .split("\n")
        .map((l) => /^([A-Z0-9_]+)=/.exec(l)?.[1])
        .filter(Boolean),
    );
  const current = readFileSync(".dev.vars", "utf8");
  const have = names(current);
  const missing = readFileSync(".dev.vars.example", "utf8")
    .split("\n")
    .filter((line) => /^([A-Z0-9_]+)=/.test(line) && !have.has(/^([A-Z0-9_]+)=/.exec(line)[1]));
  if (missing.length > 0) {
    appendFileSync(".dev.vars", `${current.endsWith("\n") ? "" : "\n"}${missing.join("\n")}\n`);
    console.log(`Added to .dev.vars from .dev.vars.example: ${missing.map((l) => l.split("=")[0]).join(", ")}`);
  }
}
migrate("DB");
// Every extra data shard wrangler.toml binds (SHARD_1 … SHARD_n; none by default) gets the data migrations (migrations-data/).
for (const shard of shardBindings()) migrate(shard);
process.stdout.write(run("npx", ["tsx", "scripts/project.ts", "ensure-dev", ...stateArgs]));

// PUBLIC_URL follows PORT unless it is set: in the environment, or in .dev.vars (where the value
// http://127.0.0.1:8787 that .dev.vars.example used to carry counts as unset).
const devVarsUrl = /^PUBLIC_URL=(.*)$/m
  .exec(readFileSync(".dev.vars", "utf8"))?.[1]
  ?.trim()
  .replace(/^(["'])(.*)\1$/, "$2");
const publicUrl = process.env.PUBLIC_URL || (devVarsUrl && devVarsUrl !== "http://127.0.0.1:8787" ? devVarsUrl : base);

// Offline (no DNS): wrangler's Request.cf fetch would fail with a stack trace on every start.
const online = await Promise.race([
  lookup("workers.cloudflare.com").then(
    () => true,
    () => false,
  ),
  new Promise((resolve) => setTimeout(() => resolve(false), 2000)),
]);
if (!online) {
  console.log("Offline: no DNS, so request.cf is a placeholder and DNS checks (domains, /v1/verify) answer 'DNS lookup failed'");
}

const keys = persistTo ? `${persistTo}/dev-project.json` : ".dev/project.json";
console.log(`\nStarting the service on ${base} (dev keys: ${keys}; links in mail: ${publicUrl})`);
console.log(`Dashboard: ${base}/app (sign in with the secretKey in ${keys}); captured mail: ${base}/dev/outbox`);
console.log(
  cronInterval > 0
    ? `The Cron Trigger runs every ${cronInterval === 60_000 ? "minute" : `${cronInterval} ms`}; fire it now with: curl "${scheduledUrl}"\n`
    : `The Cron Trigger is off (DEV_CRON_INTERVAL_MS=0); fire it with: curl "${scheduledUrl}"\n`,
);
const child = spawn(
  "npx",
  ["wrangler", "dev", "--local", "--ip", "127.0.0.1", "--port", port, "--test-scheduled", "--var", `PUBLIC_URL:${publicUrl}`, ...extra],
  {
    stdio: ["ignore", verbose ? "inherit" : "pipe", verbose ? "inherit" : "pipe"],
    // Its own process group (npx, wrangler, workerd), stopped as one below: a signal to npx alone
    // would leave wrangler and workerd running, holding the port.
    detached: true,
    env: {
      ...process.env,
      WRANGLER_SEND_METRICS: "false",
      ...(online ? {} : { CLOUDFLARE_CF_FETCH_ENABLED: "false" }),
      // Its output goes through the filter below; colours stay when this script's output is a terminal.
      ...(!verbose && process.stdout.isTTY && !process.env.NO_COLOR ? { FORCE_COLOR: "1" } : {}),
    },
  },
);
if (!verbose) {
  filterOutput(child.stdout, process.stdout);
  filterOutput(child.stderr, process.stderr);
}
let stopping = false;
for (const signal of ["SIGINT", "SIGTERM"]) {
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    stopGroup(signal);
    // wrangler shuts workerd down on SIGINT/SIGTERM; whatever is left after 10 s is killed.
    setTimeout(() => stopGroup("SIGKILL"), 10_000).unref();
  });
}
process.on("exit", () => stopGroup("SIGKILL"));

function stopGroup(signal) {
  try {
    process.kill(-child.pid, signal);
  } catch {
    // already gone
  }
}
// "close", not "exit": the last of its output is written first.
child.on("close", (code) => process.exit(code ?? 0));

/**
 * wrangler dev's output, line by line, with two things shortened: the bindings table (one line:
 * how many bindings and vars) and a failed DNS lookup of a subrequest, which workerd prints as an
 * internal error with a native stack (one line per host, repeats within a minute counted, not shown).
 */
function filterOutput(from, to) {
  const plain = (line) => line.replace(/\x1b\[[0-9;]*m/g, "");
  let rest = "";
  let table = null; // the bindings table's rows while it is being read
  let skipStack = false; // the lines after a DNS failure (blank lines and "stack: ...")
  const lastDnsNote = new Map(); // host -> [time of the last line printed, failures not shown since]
  const line = (text) => {
    const p = plain(text);
    if (table) {
      if (p.trim() === "") {
        const vars = table.filter((row) => /Environment Variable/.test(row)).length;
        to.write(`Bindings: ${table.length - vars}, vars: ${vars} (DEV_VERBOSE=1 npm run dev lists them)\n`);
        table = null;
      } else if (!/^Binding\s+Resource/.test(p)) table.push(p);
      return;
    }
    if (skipStack) {
      if (p.trim() === "" || /^\s*stack:/.test(p)) return;
      skipStack = false;
    }
    if (/^Your Worker has access to the following bindings:/.test(p)) {
      table = [];
      return;
    }
    const dns = /DNS lookup failed\.; params\.host = ([^;]+);.*gai_strerror\(status\) = ([^\x1b]*)/.exec(p);
    if (dns) {
      skipStack = true;
      const [host, why] = [dns[1].trim(), dns[2].trim()];
      const [last, hidden] = lastDnsNote.get(host) ?? [0, 0];
      if (Date.now() - last < 60_000) {
        lastDnsNote.set(host, [last, hidden + 1]);
        return;
      }
      lastDnsNote.set(host, [Date.now(), 0]);
      const more = hidden > 0 ? ` (${hidden} more in the last minute)` : "";
      to.write(`[dns] lookup of ${host} failed: ${why}; offline? The request that needed it got a network error${more}\n`);
      return;
    }
    to.write(`${text}\n`);
  };
  from.setEncoding("utf8");
  from.on("data", (chunk) => {
    const lines = (rest + chunk).split("\n");
    rest = lines.pop() ?? "";
    for (const l of lines) line(l);
  });
  from.on("end", () => {
    if (rest) line(rest);
  });
}

/** Fires one tick; a tick still running when the next is due is not doubled. */
let ticking = false;
async function tick() {
  if (ticking || stopping) return;
  ticking = true;
  try {
    const res = await fetch(scheduledUrl);
    if (!res.ok) console.error(`[cron] scheduled handler answered ${res.status}`);
  } catch (err) {
    if (!stopping) console.error(`[cron] could not reach ${scheduledUrl}: ${err instanceof Error ? err.message : err}`);
  } finally {
    ticking = false;
  }
}

/** Resolves once the Worker answers /health (wrangler may rebuild first). */
async function ready() {
  for (;;) {
    if (stopping || child.exitCode !== null) return false;
    try {
      if ((await fetch(`${base}/health`)).ok) return true;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}

if (cronInterval > 0 && (await ready())) {
  if (cronInterval === 60_000) {
    // On the minute, as Cron Triggers fire in production.
    const schedule = () => setTimeout(() => tick().finally(schedule), 60_000 - (Date.now() % 60_000));
    schedule();
  } else {
    setInterval(tick, cronInterval);
  }
}
