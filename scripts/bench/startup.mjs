// Bundle size and cold start, each beside a bare Hono worker (bench/bare-hono) built and
// measured the same way in the same run:
// - size: `wrangler deploy --dry-run --outfile`, its "Total Upload: X KiB / gzip: Y KiB"
// - startup: `wrangler check startup --worker <that upload>`, a CPU profile of importing the
//   main module; endTime - startTime is the startup span
// - first request: a fresh `wrangler dev`, the first GET /health once wrangler says it is
//   ready (the service builds the routes of /health's group there; the bare worker its router)
// Service and bare worker alternate settings.startupRuns times; per run the startup span and
// the first request are summed, and the medians of those sums compared. Beside it, the first
// GET /contacts with a key on a fresh wrangler dev (an authenticated route's group).
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { applyMigrations, createProject, fmt, log, report, run, settings, startServer } from "./lib.mjs";

const WORKERS = [
  { name: "service", config: "wrangler.toml" },
  { name: "bare Hono", config: "bench/bare-hono/wrangler.toml" },
];

/** Builds the upload of `config` into `dir`; wrangler's raw and gzip sizes in KiB. */
function build(config, dir) {
  const outfile = join(dir, "worker.upload");
  const out = run("npx", ["wrangler", "deploy", "--dry-run", "--config", config, "--outfile", outfile]);
  const size = /Total Upload: ([\d.]+) KiB \/ gzip: ([\d.]+) KiB/.exec(out);
  if (!size) throw new Error(`no "Total Upload" line from wrangler deploy --dry-run --config ${config}`);
  return { outfile, rawKiB: Number(size[1]), gzipKiB: Number(size[2]) };
}

/** One `wrangler check startup` of a built upload: the profile's span, in ms. */
function startupSpan(config, upload, dir) {
  const profile = join(dir, "startup.cpuprofile");
  run("npx", ["wrangler", "check", "startup", "--config", config, "--worker", upload, "--outfile", profile]);
  const p = JSON.parse(readFileSync(profile, "utf8"));
  return (p.endTime - p.startTime) / 1000;
}

/** The first and second GET of `request` (default /health) on a fresh `wrangler dev` of `config`, in ms. */
async function firstRequest(worker, stateDir, request = true) {
  const server = await startServer(stateDir, {}, { config: worker.config, defaults: worker.name === "service", timeFirstRequest: request });
  await server.stop();
  return { first: server.firstRequestMs, second: server.secondRequestMs };
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

export const startupSection = {
  key: "startup",
  title: "Bundle size and cold start, beside a bare Hono worker (bench/bare-hono)",
  standalone: true,
  async run() {
    const dirs = [];
    const stateDir = settings.startupStateDir;
    try {
      const built = WORKERS.map((worker) => {
        const dir = mkdtempSync(join(tmpdir(), "edge-mail-startup-"));
        dirs.push(dir);
        log(`building ${worker.name} (${worker.config})`);
        return { ...worker, dir, ...build(worker.config, dir), spans: [], firsts: [], seconds: [] };
      });
      const [service, bare] = built;
      report("bundle, gzip (wrangler deploy --dry-run)", `${fmt(service.gzipKiB)} KiB`, {
        goal: "<= 300 KiB",
        met: service.gzipKiB <= 300,
        shape: "real zod (English locale only, no z.compile or z.fromJSONSchema), entities 8, js-base64; two core-js shims for mimetext",
        detail: `${fmt(service.rawKiB)} KiB before gzip; bare Hono ${fmt(bare.gzipKiB)} KiB gzip`,
      });
      const loadBefore = loadavg()[0];
      applyMigrations(stateDir);
      // An authenticated route's first request too: /health alone could be made cheap by itself.
      const { secretKey } = createProject("bench-startup", stateDir);
      const contacts = { path: "/contacts?limit=20", key: secretKey, firsts: [], seconds: [] };
      for (let i = 0; i < settings.startupRuns; i++) {
        for (const worker of built) {
          log(`startup and first request: ${worker.name}, run ${i + 1} of ${settings.startupRuns}`);
          worker.spans.push(startupSpan(worker.config, worker.outfile, worker.dir));
          const { first, second } = await firstRequest(worker, stateDir);
          worker.firsts.push(first);
          worker.seconds.push(second);
        }
        log(`first GET /contacts: service, run ${i + 1} of ${settings.startupRuns}`);
        const { first, second } = await firstRequest(service, stateDir, contacts);
        contacts.firsts.push(first);
        contacts.seconds.push(second);
      }
      const span = (w) => median(w.spans);
      const first = (w) => median(w.firsts);
      // Each run's startup span plus its first request; the median of those sums.
      const total = (w) => median(w.spans.map((ms, i) => ms + w.firsts[i]));
      report("Worker startup + first request / bare Hono worker's", `${fmt(total(service) / total(bare), 2)}x`, {
        goal: "<= 3x",
        met: total(service) / total(bare) <= 3,
        shape:
          "per run: startup span (wrangler check startup) + the first GET /health of a fresh wrangler dev after its Ready line (includes the local HTTP hop); medians of those sums",
        detail: `${fmt(total(service))} ms / ${fmt(total(bare))} ms; medians of ${settings.startupRuns}: startup ${fmt(span(service))} / ${fmt(span(bare))} ms, first request ${fmt(first(service))} / ${fmt(first(bare))} ms, second request ${fmt(median(service.seconds))} / ${fmt(median(bare.seconds))} ms; load average ${fmt(loadBefore, 2)} before, ${fmt(loadavg()[0], 2)} after`,
      });
      report("first GET /contacts of a fresh wrangler dev (median)", `${fmt(median(contacts.firsts))} ms`, {
        shape: "sk_ key, empty project; the first request of the isolate after the Ready line (key lookup, rate-limit lease, one list query)",
        detail: `medians of ${settings.startupRuns}; the second request ${fmt(median(contacts.seconds))} ms; startup + first GET /contacts / bare Hono's startup + first GET /health: ${fmt((span(service) + median(contacts.firsts)) / total(bare), 2)}x`,
      });
      report("Worker startup alone / bare Hono worker's", `${fmt(span(service) / span(bare), 2)}x`, {
        shape: "wrangler check startup span (importing the main module)",
        detail: `${fmt(span(service))} ms / ${fmt(span(bare))} ms`,
      });
    } finally {
      for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
      rmSync(stateDir, { recursive: true, force: true });
    }
  },
};
