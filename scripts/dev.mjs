#!/usr/bin/env node
// `npm run dev`: a working local service from a fresh clone, offline.
// 1. .dev.vars from .dev.vars.example (safe local defaults) if missing
// 2. local D1 migrations: migrations/ on DB, migrations-data/ on every SHARD_n wrangler.toml binds
//    (state in .wrangler/state, shared with wrangler and the project CLI;
//    `npm run dev -- --persist-to <dir>` keeps it in <dir> instead)
// 3. the local dev project, its keys in .dev/project.json (or <dir>/dev-project.json)
// 4. wrangler dev on 127.0.0.1:8787 with local D1, Queues, Durable Objects and Workflows
// 5. the Cron Trigger: wrangler dev never fires it on its own, so this script calls the
//    Worker's scheduled handler every minute, on the minute, as production does.
//    DEV_CRON_INTERVAL_MS sets another interval (0 turns it off); fire it by hand with
//    curl "http://127.0.0.1:8787/__scheduled?cron=*+*+*+*+*"
import { spawn, spawnSync } from "node:child_process";
import { appendFileSync, copyFileSync, existsSync, readFileSync } from "node:fs";

const port = process.env.PORT ?? "8787";
const env = { ...process.env, CI: "1", WRANGLER_SEND_METRICS: "false" };
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

function run(cmd, args) {
  const result = spawnSync(cmd, args, { stdio: "inherit", env });
  if (result.status !== 0) {
    console.error(`\n${cmd} ${args.join(" ")} failed`);
    process.exit(result.status ?? 1);
  }
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
run("npx", ["wrangler", "d1", "migrations", "apply", "DB", "--local", ...stateArgs]);
// Every extra data shard wrangler.toml binds (SHARD_1 … SHARD_n; none by default) gets the data migrations (migrations-data/).
for (const shard of shardBindings()) run("npx", ["wrangler", "d1", "migrations", "apply", shard, "--local", ...stateArgs]);
run("npx", ["tsx", "scripts/project.ts", "ensure-dev", ...stateArgs]);

const keys = persistTo ? `${persistTo}/dev-project.json` : ".dev/project.json";
console.log(`\nStarting the service on ${base} (dev keys: ${keys})`);
console.log(
  cronInterval > 0
    ? `The Cron Trigger runs every ${cronInterval === 60_000 ? "minute" : `${cronInterval} ms`}; fire it now with: curl "${scheduledUrl}"\n`
    : `The Cron Trigger is off (DEV_CRON_INTERVAL_MS=0); fire it with: curl "${scheduledUrl}"\n`,
);
const child = spawn("npx", ["wrangler", "dev", "--local", "--ip", "127.0.0.1", "--port", port, "--test-scheduled", ...extra], {
  stdio: "inherit",
  env: { ...process.env, WRANGLER_SEND_METRICS: "false" },
});
let stopping = false;
for (const signal of ["SIGINT", "SIGTERM"]) {
  process.on(signal, () => {
    stopping = true;
    child.kill(signal);
  });
}
child.on("exit", (code) => process.exit(code ?? 0));

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
