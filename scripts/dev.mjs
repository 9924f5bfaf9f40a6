#!/usr/bin/env node
// `npm run dev`: a working local service from a fresh clone, offline.
// 1. .dev.vars from .dev.vars.example (safe local defaults) if missing
// 2. local D1 migrations (state in .wrangler/state, shared with wrangler and the project CLI)
// 3. the local dev project, its keys in .dev/project.json
// 4. wrangler dev on 127.0.0.1:8787 with local D1, Queues, Cron and Durable Objects
import { spawn, spawnSync } from "node:child_process";
import { appendFileSync, copyFileSync, existsSync, readFileSync } from "node:fs";

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
