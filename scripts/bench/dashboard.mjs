#!/usr/bin/env node
// First load of the dashboard (/app) on the local service, in headless Chromium:
// the JavaScript it downloads (gzip bytes, as the Worker's assets would send it
// compressed) and the time until the sign-in form takes input (time to interactive).
// Starts `wrangler dev` on a free port with throwaway state. Prints its lines; goals:
// < 150 KB gzip, < 1 s. Usage: node scripts/bench/dashboard.mjs [runs]
import { existsSync } from "node:fs";
import { gzipSync } from "node:zlib";
import { chromium } from "playwright-core";
import { startWranglerDev } from "../lib/local-server.mjs";

const runs = Number(process.argv[2] ?? 5);
const chromiumPath = [process.env.CHROMIUM_PATH, "/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"].find((p) => p && existsSync(p));
if (!chromiumPath) {
  console.error("bench-dashboard: Chromium not found (set CHROMIUM_PATH)");
  process.exit(1);
}

// Throwaway state, removed when it stops; the devtools inspector on, as `npm run dev` runs it.
const server = await startWranglerDev({}, { inspector: true });
const url = server.url;

try {
  const browser = await chromium.launch({ executablePath: chromiumPath, headless: true, args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"] });
  const times = [];
  let scripts = new Map();
  for (let i = 0; i < runs + 1; i++) {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    const loaded = new Map();
    page.on("response", async (res) => {
      if (res.request().resourceType() === "script") loaded.set(res.url(), await res.body().catch(() => Buffer.alloc(0)));
    });
    const start = Date.now();
    await page.goto(`${url}/app/`, { waitUntil: "commit" });
    await page.getByLabel("Secret key").waitFor({ state: "visible" });
    await page.getByLabel("Secret key").fill("x"); // takes input: interactive
    const ms = Date.now() - start;
    if (i > 0) times.push(ms); // the first run warms wrangler's asset server
    scripts = loaded;
    await context.close();
  }
  await browser.close();
  const gzip = [...scripts.values()].reduce((n, body) => n + gzipSync(body, { level: 9 }).length, 0);
  const raw = [...scripts.values()].reduce((n, body) => n + body.length, 0);
  times.sort((a, b) => a - b);
  const median = times[Math.floor(times.length / 2)];
  console.log(`dashboard first load: ${scripts.size} script(s), ${(raw / 1024).toFixed(1)} KiB raw, ${(gzip / 1024).toFixed(1)} KiB gzip (goal < 150 KB)`);
  console.log(
    `dashboard time to interactive (sign-in form takes input, cold context, local wrangler dev): median ${median} ms of ${times.length} (min ${times[0]}, max ${times.at(-1)}; goal < 1000 ms)`,
  );
  console.log(
    JSON.stringify({ scripts: scripts.size, rawBytes: raw, gzipBytes: gzip, medianMs: median, minMs: times[0], maxMs: times.at(-1), runs: times.length }),
  );
} finally {
  await server.stop();
}
