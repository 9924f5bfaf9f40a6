/**
 * Project administration CLI: `npm run project -- <command> [args] [--json] [--remote]`.
 * With --json, run it as `npm run --silent project -- ...` so npm's "> script" banner
 * stays off stdout and only the JSON is printed there.
 *
 *   create <name>        create a project with one sk_ and one pk_ key (printed once)
 *   disable <id>         a disabled project gets 403 on every endpoint
 *   enable <id>
 *   resume <id>          resume sending after the reputation breaker paused it (fresh window)
 *   rotate-keys <id>     revoke every key of the project and print new ones
 *   tracking <id> on|off open and click tracking for the project's mail (on by default)
 *   list                 list projects
 *   ensure-dev           (used by `npm run dev`) make sure the local dev project exists
 *                        (keys in .dev/project.json, or <dir>/dev-project.json with --persist-to)
 *   import <id> <file.csv> [--subscribed=true|false]
 *                        upload a CSV to POST /contacts/imports, show a progress bar until the
 *                        job ends, then its counts and first errors (docs/import-export.md)
 *   export <id> [--subscribed=true|false] [--segment=<segmentId>]
 *                        write GET /contacts/export (CSV) to stdout
 *   move <id> <shard>    move the project's rows to another data shard (copy, switch, delete the
 *                        old rows; its API writes answer 503 and its sending waits meanwhile) and
 *                        show the move's steps until it ends (docs/deploy.md "Moving a project").
 *                        It starts a run of the Worker's ProjectMoveWorkflow with
 *                        `wrangler workflows trigger`: on the deployed Worker with --remote, else
 *                        on the running `npm run dev` (its port from --url, default 8787).
 *
 * import and export talk to a running service (default http://127.0.0.1:8787, `npm run dev`;
 * --url=<base> or EDGE_MAIL_URL) with the project's secret key: --key=<sk_...> or
 * EDGE_MAIL_KEY, else the key of the local dev project (.dev/project.json) when <id> is it.
 *
 * It writes through `wrangler d1 execute DB` against the local database in
 * .wrangler/state (or the one in <dir> with --persist-to <dir>, or the deployed
 * one with --remote), so no server needs to run.
 * The queries come from src/services/projects.ts, the same code the Worker uses.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { drizzle } from "drizzle-orm/d1";
import * as schema from "../src/db/schema";
import { AllShardsFullError, chooseShard, shardFillLimit } from "../src/db/shards";
import { buildDevSeed } from "../src/services/dev-seed";
import {
  buildCancelProjectExecutions,
  buildKeyRotation,
  buildProjectCreation,
  buildResumeSending,
  buildSetProjectDisabled,
  buildSetProjectTracking,
} from "../src/services/projects";

// Queries are only built and rendered to SQL here, never run through a driver.
const db = drizzle({} as D1Database, { schema });

const args = process.argv.slice(2);
// --persist-to <dir>: use the local database kept in <dir> (as `wrangler dev --persist-to <dir>`) instead of .wrangler/state.
const persistAt = args.findIndex((a) => a === "--persist-to" || a.startsWith("--persist-to="));
const persistTo = persistAt < 0 ? undefined : args[persistAt].includes("=") ? args[persistAt].split("=")[1] : args[persistAt + 1];
if (persistAt >= 0) args.splice(persistAt, args[persistAt].includes("=") ? 1 : 2);
if (persistAt >= 0 && !persistTo) {
  console.error("--persist-to needs a directory");
  process.exit(1);
}
/** `--name=value` or `--name value`, removed from args. */
function takeOption(name: string): string | undefined {
  const at = args.findIndex((a) => a === `--${name}` || a.startsWith(`--${name}=`));
  if (at < 0) return undefined;
  const inline = args[at].includes("=");
  const value = inline ? args[at].slice(args[at].indexOf("=") + 1) : args[at + 1];
  args.splice(at, inline ? 1 : 2);
  return value;
}
const options = {
  url: takeOption("url") ?? process.env.EDGE_MAIL_URL ?? "http://127.0.0.1:8787",
  key: takeOption("key") ?? process.env.EDGE_MAIL_KEY,
  subscribed: takeOption("subscribed"),
  segment: takeOption("segment"),
};
const flags = new Set(args.filter((a) => a.startsWith("--")));
const [command, ...rest] = args.filter((a) => !a.startsWith("--"));
const json = flags.has("--json");
const target = flags.has("--remote") ? ["--remote"] : ["--local", ...(persistTo ? ["--persist-to", persistTo] : [])];
// The dev project's keys; kept beside the state when it lives elsewhere (`npm run dev -- --persist-to <dir>`).
const DEV_FILE = persistTo ? join(persistTo, "dev-project.json") : ".dev/project.json";

type Query = { toSQL(): { sql: string; params: unknown[] } };

function literal(value: unknown): string {
  if (value === null || value === undefined) return "NULL";
  if (typeof value === "number" || typeof value === "bigint") return String(value);
  if (typeof value === "boolean") return value ? "1" : "0";
  return `'${String(value).replace(/'/g, "''")}'`;
}

/** Renders a built query with its parameters inlined (wrangler d1 execute takes no bound parameters). */
function toSqlText(query: Query): string {
  const { sql, params } = query.toSQL();
  let i = 0;
  return `${sql.replace(/\?/g, () => literal(params[i++]))};`;
}

/** Tries of a local `wrangler d1 execute` that found the database locked by a running `npm run dev`. */
const LOCKED_TRIES = 6;

/**
 * `wrangler d1 execute` on a D1 binding: DB (control and data shard 0) unless another data shard is
 * named. Locally the SQLite file is shared with a running `npm run dev`, which may hold its lock for
 * a moment (SQLITE_BUSY): such a call is tried again, a little later each time.
 */
function wrangler(args: string[], binding = "DB"): string {
  for (let attempt = 1; ; attempt++) {
    try {
      return execFileSync("npx", ["wrangler", "d1", "execute", binding, ...target, ...args], {
        encoding: "utf8",
        stdio: ["ignore", "pipe", "pipe"],
        env: { ...process.env, CI: "1", WRANGLER_SEND_METRICS: "false" },
      });
    } catch (err) {
      const output = `${(err as { stdout?: string }).stdout ?? ""}${(err as { stderr?: string }).stderr ?? ""}`;
      if (attempt >= LOCKED_TRIES || !/SQLITE_BUSY|database is locked/i.test(output)) throw err;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 250 * attempt);
    }
  }
}

function execute(queries: readonly Query[], binding = "DB"): void {
  const dir = mkdtempSync(join(tmpdir(), "edge-mail-"));
  const file = join(dir, "statements.sql");
  try {
    writeFileSync(file, queries.map(toSqlText).join("\n"));
    wrangler(["--file", file, "--yes"], binding);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function select<T>(sql: string): T[] {
  const out = JSON.parse(wrangler(["--json", "--command", sql])) as { results: T[] }[];
  return out[0]?.results ?? [];
}

/** The data shards wrangler.toml binds besides DB (shard 0): SHARD_1 … SHARD_n (src/db/shards.ts). */
function shardBindings(): number[] {
  const toml = readFileSync("wrangler.toml", "utf8");
  return [...toml.matchAll(/^\s*binding\s*=\s*"SHARD_([1-9][0-9]*)"/gm)].map((m) => Number(m[1]));
}

/** A project's data shard, as the control database maps it (no row: 0). */
function shardOfProject(id: string): number {
  return select<{ shard: number }>(`SELECT shard FROM project_shards WHERE project_id = ${literal(id)}`)[0]?.shard ?? 0;
}

/**
 * Writes to a project's row go to the control database and, for a project on another shard,
 * to its shard's copy too (the key lookup reads control; the data side reads the shard's).
 */
function executeOnProject(id: string, queries: readonly Query[]): void {
  execute(queries);
  const shard = shardOfProject(id);
  if (shard !== 0) execute(queries, `SHARD_${shard}`);
}

/** The shard for a new project: the least-filled under SHARD_FILL_LIMIT_BYTES, sizes as D1 reports them (meta.size_after). */
function placeNewProject(): number {
  const sizes = [0, ...shardBindings()].map((shard) => {
    const out = JSON.parse(wrangler(["--json", "--command", "SELECT 1"], shard === 0 ? "DB" : `SHARD_${shard}`)) as { meta?: { size_after?: number } }[];
    return { shard, bytes: Number(out[0]?.meta?.size_after ?? 0) };
  });
  const limit = shardFillLimit({ SHARD_FILL_LIMIT_BYTES: process.env.SHARD_FILL_LIMIT_BYTES });
  const shard = chooseShard(sizes, limit);
  if (shard === null) fail(new AllShardsFullError(sizes, limit).message);
  return shard!;
}

function requireProject(id: string | undefined): string {
  if (!id) fail("Missing project id");
  const rows = select<{ id: string }>(`SELECT id FROM projects WHERE id = ${literal(id)}`);
  if (rows.length === 0) fail(`No project with id ${id}`);
  return id!;
}

/** A local setting: the environment, else .dev.vars, else .dev.vars.example (what the local Worker also reads). */
function localVar(name: string): string {
  if (process.env[name]) return process.env[name]!;
  for (const file of [".dev.vars", ".dev.vars.example"]) {
    if (!existsSync(file)) continue;
    for (const line of readFileSync(file, "utf8").split(/\r?\n/)) {
      const match = /^\s*([A-Z0-9_]+)\s*=\s*(.*?)\s*$/.exec(line);
      if (match && match[1] === name) return match[2].replace(/^(["'])(.*)\1$/, "$2");
    }
  }
  fail(`${name} is not set in the environment, .dev.vars or .dev.vars.example`);
}

function fail(message: string): never {
  console.error(message);
  process.exit(1);
}

function printKeys(result: { id: string; name?: string; secretKey: string; publicKey: string; shard?: number }) {
  if (json) {
    process.stdout.write(`${JSON.stringify(result)}\n`);
    return;
  }
  console.log(`Project ${result.name ?? ""} ${result.id}`.replace("  ", " "));
  console.log(`  secret key: ${result.secretKey}`);
  console.log(`  public key: ${result.publicKey}`);
  console.log("Store these now: only their hashes are kept.");
}

async function main() {
  switch (command) {
    case "create": {
      const name = rest.join(" ").trim();
      if (!name) fail("Usage: npm run project -- create <name> [--json] [--remote]");
      // On the least-filled data shard (one shard: 0); its shard's row first, then the control rows.
      const shard = shardBindings().length > 0 ? placeNewProject() : 0;
      const creation = await buildProjectCreation(db, name, shard);
      if (shard !== 0) execute(creation.shardQueries, `SHARD_${shard}`);
      execute(creation.queries);
      printKeys({ id: creation.project.id, name, secretKey: creation.secretKey, publicKey: creation.publicKey, ...(shard !== 0 ? { shard } : {}) });
      break;
    }
    case "disable":
    case "enable": {
      const id = requireProject(rest[0]);
      // Disabling also cancels the project's running workflow executions (they stop at their next step).
      executeOnProject(id, [buildSetProjectDisabled(db, id, command === "disable")]);
      // The executions are data: on the project's shard.
      if (command === "disable") execute([buildCancelProjectExecutions(db, id)], shardOfProject(id) === 0 ? "DB" : `SHARD_${shardOfProject(id)}`);
      if (json) process.stdout.write(`${JSON.stringify({ id, disabled: command === "disable" })}\n`);
      else console.log(`Project ${id} ${command}d`);
      break;
    }
    case "resume": {
      const id = requireProject(rest[0]);
      // The pause's copy in control and the shard's row; the reputation counters are on the shard only (a no-op in control).
      executeOnProject(id, [...buildResumeSending(db, id)]);
      if (json) process.stdout.write(`${JSON.stringify({ id, sendingPaused: false })}\n`);
      else console.log(`Sending resumed for project ${id}`);
      break;
    }
    case "rotate-keys": {
      const id = requireProject(rest[0]);
      const rotation = await buildKeyRotation(db, id);
      execute(rotation.queries);
      printKeys({ id, secretKey: rotation.secretKey, publicKey: rotation.publicKey });
      break;
    }
    case "tracking": {
      const id = requireProject(rest[0]);
      if (rest[1] !== "on" && rest[1] !== "off") fail("Usage: npm run project -- tracking <id> on|off");
      executeOnProject(id, [buildSetProjectTracking(db, id, rest[1] === "on")]);
      if (json) process.stdout.write(`${JSON.stringify({ id, trackingEnabled: rest[1] === "on" })}\n`);
      else console.log(`Tracking ${rest[1]} for project ${id}`);
      break;
    }
    case "list": {
      const rows = select<{ id: string; name: string; disabled: number; paused: string | null }>(
        "SELECT id, name, disabled, sending_paused_reason AS paused FROM projects ORDER BY id",
      );
      if (json) process.stdout.write(`${JSON.stringify(rows.map((r) => ({ ...r, disabled: !!r.disabled })))}\n`);
      else for (const r of rows) console.log(`${r.id}  ${r.name}${r.disabled ? "  (disabled)" : ""}${r.paused ? `  (sending paused: ${r.paused})` : ""}`);
      break;
    }
    case "ensure-dev": {
      if (existsSync(DEV_FILE)) {
        const saved = JSON.parse(readFileSync(DEV_FILE, "utf8")) as { id: string };
        if (select(`SELECT id FROM projects WHERE id = ${literal(saved.id)}`).length > 0) {
          console.log(`Dev project ${saved.id} ready; keys in ${DEV_FILE}`);
          break;
        }
      }
      const creation = await buildProjectCreation(db, "Local dev");
      const seed = await buildDevSeed(db, creation.project.id, localVar("DKIM_ENCRYPTION_KEY"));
      execute([...creation.queries, ...seed.queries]);
      mkdirSync(dirname(DEV_FILE), { recursive: true });
      const saved = {
        id: creation.project.id,
        name: "Local dev",
        secretKey: creation.secretKey,
        publicKey: creation.publicKey,
        ...seed.info,
      };
      writeFileSync(DEV_FILE, `${JSON.stringify(saved, null, 2)}\n`);
      console.log(`Created dev project ${saved.id}; keys in ${DEV_FILE}`);
      break;
    }
    case "import": {
      const [id, file] = rest;
      if (!id || !file) fail("Usage: npm run project -- import <project id> <file.csv> [--subscribed=true|false] [--key=sk_...] [--url=...]");
      await importFile(id, file);
      break;
    }
    case "export": {
      if (!rest[0]) fail("Usage: npm run project -- export <project id> [--subscribed=true|false] [--segment=<id>] [--key=sk_...] [--url=...] > out.csv");
      await exportTo(rest[0]);
      break;
    }
    case "move": {
      const [id, shard] = rest;
      if (!id || !shard || !/^(0|[1-9][0-9]*)$/.test(shard))
        fail("Usage: npm run project -- move <project id> <shard> [--remote | --url=http://127.0.0.1:<port>]");
      await moveProject(requireProject(id), Number(shard));
      break;
    }
    default:
      fail(
        "Usage: npm run project -- <create <name> | disable <id> | enable <id> | resume <id> | rotate-keys <id> | tracking <id> on|off | list | import <id> <file.csv> | export <id> | move <id> <shard>> [--json] [--remote | --persist-to <dir>]",
      );
  }
}

/** The secret key for project `id`: --key, EDGE_MAIL_KEY, or the local dev project's. */
function secretKeyOf(id: string): string {
  if (options.key) return options.key;
  if (existsSync(DEV_FILE)) {
    const saved = JSON.parse(readFileSync(DEV_FILE, "utf8")) as { id: string; secretKey: string };
    if (saved.id === id) return saved.secretKey;
  }
  fail(`No key for project ${id}: pass --key=sk_... or set EDGE_MAIL_KEY (keys are only shown when created)`);
}

async function api(path: string, init: RequestInit & { duplex?: "half" }, key: string): Promise<Response> {
  const url = new URL(path, options.url);
  let res: Response;
  try {
    res = await fetch(url, { ...init, headers: { ...(init.headers as Record<string, string>), Authorization: `Bearer ${key}` } });
  } catch (err) {
    fail(`Could not reach ${options.url} (${err instanceof Error ? err.message : err}): is the service running (npm run dev)?`);
  }
  if (!res.ok) {
    const text = await res.text();
    let message = text;
    try {
      const body = JSON.parse(text) as { error?: { message?: string; errors?: { field: string; message: string }[] } };
      message = [body.error?.message, ...(body.error?.errors ?? []).map((e) => `${e.field}: ${e.message}`)].filter(Boolean).join("\n  ");
    } catch {
      // not JSON: the text as it is
    }
    fail(`${init.method ?? "GET"} ${url.pathname} failed with ${res.status}: ${message}`);
  }
  return res;
}

interface ImportJob {
  id: string;
  status: string;
  total: number;
  processed: number;
  created: number;
  updated: number;
  failed: number;
  errors: { row: number; message: string }[];
}

function progressBar(job: ImportJob): string {
  const width = 30;
  const share = job.total > 0 ? Math.min(1, job.processed / job.total) : job.status === "COMPLETED" ? 1 : 0;
  const filled = Math.round(share * width);
  return `[${"#".repeat(filled)}${".".repeat(width - filled)}] ${String(Math.floor(share * 100)).padStart(3)}%  ${job.processed}/${job.total} rows`;
}

async function importFile(id: string, file: string) {
  const key = secretKeyOf(id);
  if (!existsSync(file)) fail(`No file ${file}`);
  const { createReadStream, statSync } = await import("node:fs");
  const { Readable } = await import("node:stream");
  const size = statSync(file).size;
  const query = options.subscribed ? `?subscribed=${encodeURIComponent(options.subscribed)}` : "";
  const tty = process.stderr.isTTY;
  if (!json) process.stderr.write(`Uploading ${file} (${size} bytes)...\n`);
  const res = await api(
    `/contacts/imports${query}`,
    {
      method: "POST",
      headers: { "Content-Type": "text/csv", "Content-Length": String(size) },
      body: Readable.toWeb(createReadStream(file)) as unknown as BodyInit,
      duplex: "half",
    },
    key,
  );
  let job = (await res.json()) as ImportJob;
  let last = "";
  while (job.status === "PENDING" || job.status === "PROCESSING") {
    if (!json) {
      const line = progressBar(job);
      if (tty) process.stderr.write(`\r${line}`);
      else if (line !== last) process.stderr.write(`${line}\n`);
      last = line;
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
    job = (await (await api(`/contacts/imports/${job.id}`, {}, key)).json()) as ImportJob;
  }
  if (json) {
    process.stdout.write(`${JSON.stringify(job)}\n`);
  } else {
    process.stderr.write(`${tty ? "\r" : ""}${progressBar(job)}\n`);
    console.log(`Import ${job.id} ${job.status}: ${job.total} rows, ${job.created} created, ${job.updated} updated, ${job.failed} failed`);
    for (const error of job.errors.slice(0, 10)) console.log(`  row ${error.row}: ${error.message}`);
    if (job.failed > 10) console.log(`  (${job.errors.length} errors kept; GET /contacts/imports/${job.id} lists them)`);
  }
  if (job.status !== "COMPLETED") process.exit(1);
}

async function exportTo(id: string) {
  const key = secretKeyOf(id);
  const params = new URLSearchParams();
  if (options.subscribed) params.set("subscribed", options.subscribed);
  if (options.segment) params.set("segmentId", options.segment);
  const res = await api(`/contacts/export${params.size > 0 ? `?${params}` : ""}`, {}, key);
  const { Readable } = await import("node:stream");
  const { pipeline } = await import("node:stream/promises");
  await pipeline(Readable.fromWeb(res.body as never), process.stdout);
}

/** The Worker's [[workflows]] binding for moves (wrangler.toml PROJECT_MOVES). */
const MOVE_WORKFLOW = "edge-mail-project-moves";

/** `wrangler workflows ...` against the deployed Worker (--remote) or the local dev session on --url's port. */
function workflows(args: string[]): string {
  const where = flags.has("--remote") ? [] : ["--local", "--port", new URL(options.url).port || "80"];
  try {
    return execFileSync("npx", ["wrangler", "workflows", ...args, ...where], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, CI: "1", WRANGLER_SEND_METRICS: "false" },
    });
  } catch (err) {
    const out = err as { stderr?: string; stdout?: string };
    fail(
      `wrangler workflows ${args[0]} failed: ${(out.stderr || out.stdout || String(err)).trim()}${flags.has("--remote") ? "" : `\nIs \`npm run dev\` running on ${options.url}?`}`,
    );
  }
}

/** What `wrangler workflows instances describe` says of a run: its status, step names in order, and the error. */
function describeMove(instanceId: string) {
  const text = workflows(["instances", "describe", MOVE_WORKFLOW, instanceId]);
  const status = /^Status:\s*(?:\S+\s+)?(\w+)/m.exec(text)?.[1] ?? "Unknown";
  // Step names as the engine lists them, without the count it adds to each ("copy emails #2-1").
  const steps = [...text.matchAll(/^\s*Name:\s*(.+?)\s*$/gm)].map((m) => m[1].replace(/-\d+$/, ""));
  const error = /NonRetryableError with message "(?:NonRetryableError: )?(.*?)"/.exec(text)?.[1] ?? /^Error:\s*(.+)$/m.exec(text)?.[1];
  return { status, steps, error };
}

/** Starts a move of `id` to `shard` and reports its steps until it ends; exits non-zero unless it moved. */
async function moveProject(id: string, shard: number) {
  const instanceId = `move-${id}-${shard}-${Date.now()}`;
  workflows(["trigger", MOVE_WORKFLOW, JSON.stringify({ projectId: id, to: shard }), "--id", instanceId]);
  if (!json) console.error(`Moving project ${id} to shard ${shard} (run ${instanceId}); its API writes answer 503 and its mail waits until it ends.`);
  let shown = 0;
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const run = describeMove(instanceId);
    if (!json) for (const step of run.steps.slice(shown)) console.error(`  ${step}`);
    shown = Math.max(shown, run.steps.length);
    if (run.status === "Queued" || run.status === "Running" || run.status === "Waiting" || run.status === "Unknown") continue;
    const moved = run.status === "Completed";
    if (json) process.stdout.write(`${JSON.stringify({ id, shard, instanceId, status: run.status, error: run.error ?? null })}\n`);
    else console.log(moved ? `Project ${id} is on shard ${shard}` : `Move ${run.status}: ${run.error ?? "see wrangler workflows instances describe"}`);
    if (!moved) process.exit(1);
    return;
  }
}

main().catch((err) => fail(err instanceof Error ? err.message : String(err)));
