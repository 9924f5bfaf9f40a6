// `npm run bench` section "startup" (scripts/bench.mjs): bundle size and Worker startup,
// each beside a bare Hono worker (bench/bare-hono) built and measured the same way in
// the same run. Needs no running server.
//
// - size: `wrangler deploy --dry-run --outfile`, its "Total Upload: X KiB / gzip: Y KiB"
//   (the same figure `--outdir` prints; --outfile keeps the upload for the next step)
// - startup: `wrangler check startup --worker <that upload>`: a CPU profile of importing
//   the Worker's main module; its endTime - startTime is the startup span. Service and
//   bare worker alternate BENCH_STARTUP_RUNS times (default 5); medians are compared.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const RUNS = Number(process.env.BENCH_STARTUP_RUNS ?? 5);
const WORKERS = [
  { name: "service", config: "wrangler.toml" },
  { name: "bare Hono", config: "bench/bare-hono/wrangler.toml" },
];

function wrangler(args, env) {
  return execFileSync("npx", ["wrangler", ...args], { encoding: "utf8", env, stdio: ["ignore", "pipe", "pipe"], maxBuffer: 64 * 1024 * 1024 });
}

/** Builds the upload of `config` into `dir`; wrangler's raw and gzip sizes in KiB. */
function build(config, dir, env) {
  const outfile = join(dir, "worker.upload");
  const out = wrangler(["deploy", "--dry-run", "--config", config, "--outfile", outfile], env);
  const size = /Total Upload: ([\d.]+) KiB \/ gzip: ([\d.]+) KiB/.exec(out);
  if (!size) throw new Error(`no "Total Upload" line from wrangler deploy --dry-run --config ${config}`);
  return { outfile, rawKiB: Number(size[1]), gzipKiB: Number(size[2]) };
}

/** One `wrangler check startup` of a built upload: the profile's span and its non-idle part, in ms. */
function profileStartup(config, upload, dir, env) {
  const profile = join(dir, "startup.cpuprofile");
  wrangler(["check", "startup", "--config", config, "--worker", upload, "--outfile", profile], env);
  const p = JSON.parse(readFileSync(profile, "utf8"));
  const idle = new Set(p.nodes.filter((n) => n.callFrame.functionName === "(idle)").map((n) => n.id));
  let busyUs = 0;
  p.samples.forEach((sample, i) => {
    if (!idle.has(sample)) busyUs += p.timeDeltas[i];
  });
  return { spanMs: (p.endTime - p.startTime) / 1000, busyMs: busyUs / 1000 };
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

export async function runStartupSection({ env, log, report, fmt }) {
  const dirs = [];
  try {
    const built = WORKERS.map((worker) => {
      const dir = mkdtempSync(join(tmpdir(), "edge-mail-startup-"));
      dirs.push(dir);
      log(`building ${worker.name} (${worker.config})`);
      return { ...worker, dir, ...build(worker.config, dir, env), runs: [] };
    });
    const [service, bare] = built;
    report(
      "bundle, gzip (wrangler deploy --dry-run)",
      `${fmt(service.gzipKiB)} KiB`,
      `(${fmt(service.rawKiB)} KiB before gzip; bare Hono ${fmt(bare.gzipKiB)} KiB gzip; goal <= 300 KiB)`,
    );

    for (let i = 0; i < RUNS; i++) {
      for (const worker of built) {
        log(`wrangler check startup: ${worker.name}, run ${i + 1} of ${RUNS}`);
        worker.runs.push(profileStartup(worker.config, worker.outfile, worker.dir, env));
      }
    }
    const span = (worker) => median(worker.runs.map((r) => r.spanMs));
    const busy = (worker) => median(worker.runs.map((r) => r.busyMs));
    report(
      "Worker startup / bare Hono worker's",
      `${fmt(span(service) / span(bare), 2)}x`,
      `(${fmt(span(service))} ms / ${fmt(span(bare))} ms, medians of ${RUNS} wrangler check startup spans; goal <= 3x)`,
    );
    report("  of which busy (non-idle profile samples)", `${fmt(busy(service))} ms`, `(bare Hono ${fmt(busy(bare))} ms)`);
  } finally {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  }
}
