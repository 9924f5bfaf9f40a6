#!/usr/bin/env node
// `npm run dev`: a working local service from a fresh clone, offline.
// 1. .dev.vars from .dev.vars.example (safe local defaults) if missing
// 2. local D1 migrations (state in .wrangler/state, shared with wrangler and the project CLI)
// 3. the local dev project, its keys in .dev/project.json
// 4. wrangler dev on 127.0.0.1:8787 with local D1, Queues, Cron and Durable Objects
import { spawn, spawnSync } from "node:child_process";
import { copyFileSync, existsSync } from "node:fs";

const port = process.env.PORT ?? "8787";
const env = { ...process.env, CI: "1", WRANGLER_SEND_METRICS: "false" };

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
}
run("npx", ["wrangler", "d1", "migrations", "apply", "DB", "--local"]);
run("npx", ["tsx", "scripts/project.ts", "ensure-dev"]);

console.log(`\nStarting the service on http://127.0.0.1:${port} (dev keys: .dev/project.json)\n`);
const extra = process.argv.slice(2);
const child = spawn("npx", ["wrangler", "dev", "--local", "--ip", "127.0.0.1", "--port", port, ...extra], {
  stdio: "inherit",
  env: { ...process.env, WRANGLER_SEND_METRICS: "false" },
});
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => child.kill(signal));
child.on("exit", (code) => process.exit(code ?? 0));
