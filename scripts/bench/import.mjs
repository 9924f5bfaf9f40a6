#!/usr/bin/env node
// Contact import and export against a local `wrangler dev` this script starts
// (throwaway state under the system temp folder, never the dev database):
//   1. migrations, one project through the project CLI (--persist-to)
//   2. POST /contacts/imports with a generated CSV of BENCH_IMPORT_ROWS rows
//      (default 100,000), waiting until the job is COMPLETED: seconds (goal
//      <= 60), D1 statements per imported row (goal well under 0.1: the upload
//      request's statements, fixed by the code, plus the import queue consumer's,
//      counted by the Worker: GET /dev/d1-stats)
//   3. GET /contacts/export of all of them: seconds (goal <= 10), rows checked
//   4. memory: workerd's resident memory (Linux /proc; it also holds the local
//      D1 database's pages) before, and its peak during each step; with
//      BENCH_IMPORT_HEAP=1 also the Worker isolate's JS heap (devtools
//      Runtime.getHeapUsage over wrangler dev's inspector): flat means the file
//      never sits whole in the isolate. The inspector relays every D1 call and
//      slows the run several times over, so its times are not the figures.
// Usage: node scripts/bench/import.mjs  (BENCH_IMPORT_ROWS=n to change the size)
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { applyMigrations, connectInspector, createProject, freePort, sleep, startWranglerDev, wranglerEnv } from "../lib/local-server.mjs";
import { workerdRss } from "./lib.mjs";

const ROWS = Number(process.env.BENCH_IMPORT_ROWS ?? 100_000);
const HEAP = process.env.BENCH_IMPORT_HEAP === "1";
const IMPORT_GOAL_S = 60;
const EXPORT_GOAL_S = 10;
const log = (message) => process.stderr.write(`[bench-import] ${message}\n`);

/** Samples workerd's memory every 100 ms until stopped; returns the peak. */
function memoryWatch(pgid) {
  let peak = workerdRss(pgid) ?? 0;
  const timer = setInterval(() => {
    peak = Math.max(peak, workerdRss(pgid) ?? 0);
  }, 100);
  return () => {
    clearInterval(timer);
    return Math.max(peak, workerdRss(pgid) ?? 0);
  };
}

/** The isolate's JS heap through wrangler dev's devtools inspector on `port`: sample() -> used bytes. */
async function heapProbe(port) {
  // An unanswered call gives up after 5 s (the isolate may be busy or restarted).
  const inspector = await connectInspector(port, { timeoutMs: 5000 });
  const { call } = inspector;
  return {
    sample: async () => (await call("Runtime.getHeapUsage")).usedSize,
    /** Samples every 100 ms until stopped; returns the peak. */
    watch() {
      let peak = null;
      let running = true;
      const loop = (async () => {
        while (running) {
          const used = await this.sample().catch(() => null);
          if (used !== null) peak = Math.max(peak ?? 0, used);
          await sleep(100);
        }
      })();
      return async () => {
        running = false;
        await loop;
        return peak;
      };
    },
    close: inspector.close,
  };
}

const mb = (bytes) => (bytes ? `${(bytes / 1024 / 1024).toFixed(0)} MB` : "n/a");

function csvOf(rows) {
  const lines = ["email,subscribed,firstName,plan,data"];
  for (let i = 0; i < rows; i++) {
    const data = i % 10 === 0 ? `"{""score"":${i},""tags"":[""a"",""b""]}"` : "";
    lines.push(`user${i}@bench.example,${i % 3 === 0 ? "false" : "true"},"Name, ${i}",${i % 2 ? "pro" : "free"},${data}`);
  }
  return `${lines.join("\r\n")}\r\n`;
}

async function main() {
  const state = mkdtempSync(join(tmpdir(), "edge-mail-bench-import-"));
  let server;
  const stop = () => server?.stop();
  process.on("SIGINT", () => {
    stop();
    process.exit(130);
  });
  try {
    log(`migrations into ${state}`);
    applyMigrations(state);
    const project = createProject("bench-import", state);
    const vars = { RATE_LIMIT_PER_MINUTE: "100000000", ENVIRONMENT: "development", EMAIL_PROVIDER: "capture", BENCH_COUNT_D1: "1" };
    const port = await freePort();
    log(`starting wrangler dev on http://127.0.0.1:${port}`);
    // The devtools inspector only for the heap figures: it relays each D1 call (as scripts/bench/lib.mjs notes), a
    // dev-tool cost no deployment has. BENCH_SERVER_LOG=<file>: keep the server's whole output (queue batches, errors).
    server = await startWranglerDev(vars, {
      port,
      persistTo: state,
      inspector: HEAP,
      env: wranglerEnv,
      logLimit: 20_000,
      logFile: process.env.BENCH_SERVER_LOG,
    });
    const base = server.url;
    const child = server.child;
    const auth = { Authorization: `Bearer ${project.secretKey}` };
    const stats = async () => (await fetch(`${base}/dev/d1-stats`)).json();

    const none = { sample: async () => null, watch: () => async () => null, close() {} };
    const heap = HEAP ? await heapProbe(server.inspectorPort) : none;
    const heapBefore = await heap.sample();
    const csv = csvOf(ROWS);
    log(`importing ${ROWS} rows (${(csv.length / 1024 / 1024).toFixed(1)} MB)`);
    const rssBefore = workerdRss(child.pid);
    const before = await stats();
    const importPeak = memoryWatch(child.pid);
    const importHeapPeak = heap.watch();
    const t0 = performance.now();
    const res = await fetch(`${base}/contacts/imports`, { method: "POST", headers: { ...auth, "Content-Type": "text/csv" }, body: csv });
    if (res.status !== 202) throw new Error(`POST /contacts/imports: ${res.status} ${await res.text()}`);
    let job = await res.json();
    const uploadSeconds = (performance.now() - t0) / 1000;
    while (job.status === "PENDING" || job.status === "PROCESSING") {
      if (performance.now() - t0 > 600_000) throw new Error(`the import did not finish in 10 minutes: ${JSON.stringify(job)}`);
      await sleep(250);
      job = await (await fetch(`${base}/contacts/imports/${job.id}`, { headers: auth })).json();
    }
    const importSeconds = (performance.now() - t0) / 1000;
    const importRss = importPeak();
    const jobSeconds = (Date.parse(job.finishedAt) - Date.parse(job.createdAt)) / 1000;
    const importHeap = await importHeapPeak();
    const after = await stats();
    if (job.status !== "COMPLETED" || job.created !== ROWS) throw new Error(`unexpected job: ${JSON.stringify(job)}`);
    // The HTTP handler's statements are not counted by the Worker (src/index.ts); the upload's are
    // fixed by the code: the job insert, one staging INSERT per chunk of 500 rows, the start batch (3).
    const uploadStatements = 1 + Math.ceil(ROWS / 500) + 3;
    const queueStatements = after.bySource?.queue ? after.bySource.queue.statements - before.bySource.queue.statements : null;
    const statements = queueStatements === null ? null : uploadStatements + queueStatements;

    log("exporting");
    const exportPeak = memoryWatch(child.pid);
    const exportHeapPeak = heap.watch();
    const t1 = performance.now();
    const exported = await fetch(`${base}/contacts/export`, { headers: auth });
    if (exported.status !== 200) throw new Error(`GET /contacts/export: ${exported.status}`);
    let lines = 0;
    let bytes = 0;
    const decoder = new TextDecoder();
    for await (const chunk of exported.body) {
      bytes += chunk.byteLength;
      for (const ch of decoder.decode(chunk, { stream: true })) if (ch === "\n") lines++;
    }
    const exportSeconds = (performance.now() - t1) / 1000;
    const exportRss = exportPeak();
    const exportHeap = await exportHeapPeak();
    heap.close();
    // Quoted fields here hold no line breaks, so lines = header + rows.
    if (lines !== ROWS + 1) throw new Error(`the export had ${lines - 1} rows, expected ${ROWS}`);

    const rows = [
      ["import", `${ROWS} rows`, `${importSeconds.toFixed(1)} s`, `goal <= ${IMPORT_GOAL_S} s`, importSeconds <= IMPORT_GOAL_S ? "ok" : "OVER"],
      ["  upload (202)", "", `${uploadSeconds.toFixed(1)} s`, "", ""],
      ["  job createdAt..finishedAt", "", `${jobSeconds.toFixed(1)} s`, "", ""],
      [
        "  D1 statements per row",
        statements === null ? "n/a" : `${statements} statements`,
        statements === null ? "n/a" : (statements / ROWS).toFixed(4),
        "goal well under 0.1",
        statements !== null && statements / ROWS < 0.1 ? "ok" : "?",
      ],
      [
        "export",
        `${ROWS} rows, ${(bytes / 1024 / 1024).toFixed(1)} MB`,
        `${exportSeconds.toFixed(1)} s`,
        `goal <= ${EXPORT_GOAL_S} s`,
        exportSeconds <= EXPORT_GOAL_S ? "ok" : "OVER",
      ],
      [
        HEAP ? "isolate JS heap (used)" : "isolate JS heap",
        `before ${HEAP ? mb(heapBefore) : "(BENCH_IMPORT_HEAP=1)"}`,
        `import peak ${mb(importHeap)}`,
        `export peak ${mb(exportHeap)}`,
        "",
      ],
      ["workerd memory (RSS)", `before ${mb(rssBefore)}`, `import peak ${mb(importRss)}`, `export peak ${mb(exportRss)}`, ""],
    ];
    for (const row of rows)
      console.log(
        row
          .map((cell, i) => String(cell).padEnd([26, 26, 20, 22, 4][i]))
          .join(" ")
          .trimEnd(),
      );
    console.log(
      JSON.stringify({
        rows: ROWS,
        importSeconds,
        uploadSeconds,
        jobSeconds,
        exportSeconds,
        statements,
        statementsPerRow: statements === null ? null : statements / ROWS,
        heapBefore,
        importHeap,
        exportHeap,
        rssBefore,
        importRss,
        exportRss,
        job: { ...job, errors: job.errors.length },
      }),
    );
  } finally {
    await stop();
    rmSync(state, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
