// Sections that run a bench script of their own (it starts its own wrangler dev on
// throwaway state) and report the figures of the JSON line it prints last.
import { spawn } from "node:child_process";
import { env, fmt, log, report } from "./lib.mjs";

/** Runs `node script args`, streaming its stderr; resolves with its last JSON line. */
function runScript(script, args = [], extraEnv = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script, ...args], { env: { ...env, ...extraEnv }, stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout.on("data", (chunk) => {
      out += chunk;
    });
    child.on("error", reject);
    child.on("close", (code) => {
      const last = out
        .trim()
        .split("\n")
        .reverse()
        .find((line) => line.startsWith("{"));
      if (code !== 0 || !last) return reject(new Error(`${script} exited ${code}:\n${out.slice(-2000)}`));
      resolve(JSON.parse(last));
    });
  });
}

const mb = (bytes) => (bytes ? `${fmt(bytes / 1048576)} MB` : "n/a");

export const dashboardSection = {
  key: "dashboard",
  title: "Dashboard first load (/app in headless Chromium)",
  standalone: true,
  async run() {
    log("node scripts/bench/dashboard.mjs 5");
    const r = await runScript("scripts/bench/dashboard.mjs", ["5"]);
    report("dashboard first-load JavaScript, gzip", `${fmt(r.gzipBytes / 1024)} KiB`, {
      goal: "< 150 KB",
      met: r.gzipBytes < 150_000,
      shape: "every script /app loads before sign-in, gzip level 9",
      detail: `${r.scripts} script(s), ${fmt(r.rawBytes / 1024)} KiB raw`,
    });
    report("dashboard time to interactive", `${r.medianMs} ms`, {
      goal: "< 1000 ms",
      met: r.medianMs < 1000,
      shape: "fresh browser context, goto /app until the sign-in field takes input, local wrangler dev",
      detail: `median of ${r.runs} (min ${r.minMs}, max ${r.maxMs})`,
    });
  },
};

export const importSection = {
  key: "import",
  title: "Contact import and export (100,000 rows)",
  standalone: true,
  async run() {
    log("node scripts/bench/import.mjs");
    const r = await runScript("scripts/bench/import.mjs");
    report(`CSV import of ${r.rows} contacts, upload to COMPLETED`, `${fmt(r.importSeconds)} s`, {
      goal: "<= 60 s",
      met: r.importSeconds <= 60,
      shape: "POST /contacts/imports of a generated CSV, the import queue consumer, local D1",
      detail: `${r.statementsPerRow === null ? "n/a" : fmt(r.statementsPerRow, 4)} D1 statements per row; workerd RSS peak ${mb(r.importRss)}`,
    });
    report(`CSV export of ${r.rows} contacts`, `${fmt(r.exportSeconds)} s`, {
      goal: "<= 10 s",
      met: r.exportSeconds <= 10,
      shape: "GET /contacts/export streamed to the end",
      detail: `workerd RSS peak ${mb(r.exportRss)}`,
    });
  },
};
