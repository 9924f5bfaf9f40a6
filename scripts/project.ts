/**
 * Project administration CLI: `npm run project -- <command> [args] [--json] [--remote]`.
 *
 *   create <name>        create a project with one sk_ and one pk_ key (printed once)
 *   disable <id>         a disabled project gets 403 on every endpoint
 *   enable <id>
 *   rotate-keys <id>     revoke every key of the project and print new ones
 *   tracking <id> on|off open and click tracking for the project's mail (on by default)
 *   list                 list projects
 *   ensure-dev           (used by `npm run dev`) make sure the local dev project exists
 *
 * It writes through `wrangler d1 execute DB` against the local database in
 * .wrangler/state (or the one in <dir> with --persist-to <dir>, or the deployed
 * one with --remote), so no server needs to run.
 * The queries come from src/services/projects.ts, the same code the Worker uses.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { drizzle } from "drizzle-orm/d1";
import * as schema from "../src/db/schema";
import { buildDevSeed } from "../src/services/dev-seed";
import {
  buildCancelProjectExecutions,
  buildKeyRotation,
  buildProjectCreation,
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
const flags = new Set(args.filter((a) => a.startsWith("--")));
const [command, ...rest] = args.filter((a) => !a.startsWith("--"));
const json = flags.has("--json");
const target = flags.has("--remote") ? ["--remote"] : ["--local", ...(persistTo ? ["--persist-to", persistTo] : [])];
const DEV_FILE = ".dev/project.json";

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

function wrangler(args: string[]): string {
  return execFileSync("npx", ["wrangler", "d1", "execute", "DB", ...target, ...args], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, CI: "1", WRANGLER_SEND_METRICS: "false" },
  });
}

function execute(queries: readonly Query[]): void {
  const dir = mkdtempSync(join(tmpdir(), "edge-mail-"));
  const file = join(dir, "statements.sql");
  try {
    writeFileSync(file, queries.map(toSqlText).join("\n"));
    wrangler(["--file", file, "--yes"]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function select<T>(sql: string): T[] {
  const out = JSON.parse(wrangler(["--json", "--command", sql])) as { results: T[] }[];
  return out[0]?.results ?? [];
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

function printKeys(result: { id: string; name?: string; secretKey: string; publicKey: string }) {
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
      const creation = await buildProjectCreation(db, name);
      execute(creation.queries);
      printKeys({ id: creation.project.id, name, secretKey: creation.secretKey, publicKey: creation.publicKey });
      break;
    }
    case "disable":
    case "enable": {
      const id = requireProject(rest[0]);
      // Disabling also cancels the project's running workflow executions (they stop at their next step).
      execute(command === "disable" ? [buildSetProjectDisabled(db, id, true), buildCancelProjectExecutions(db, id)] : [buildSetProjectDisabled(db, id, false)]);
      if (json) process.stdout.write(`${JSON.stringify({ id, disabled: command === "disable" })}\n`);
      else console.log(`Project ${id} ${command}d`);
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
      execute([buildSetProjectTracking(db, id, rest[1] === "on")]);
      if (json) process.stdout.write(`${JSON.stringify({ id, trackingEnabled: rest[1] === "on" })}\n`);
      else console.log(`Tracking ${rest[1]} for project ${id}`);
      break;
    }
    case "list": {
      const rows = select<{ id: string; name: string; disabled: number }>("SELECT id, name, disabled FROM projects ORDER BY id");
      if (json) process.stdout.write(`${JSON.stringify(rows.map((r) => ({ ...r, disabled: !!r.disabled })))}\n`);
      else for (const r of rows) console.log(`${r.id}  ${r.name}${r.disabled ? "  (disabled)" : ""}`);
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
      mkdirSync(".dev", { recursive: true });
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
    default:
      fail(
        "Usage: npm run project -- <create <name> | disable <id> | enable <id> | rotate-keys <id> | tracking <id> on|off | list> [--json] [--remote | --persist-to <dir>]",
      );
  }
}

main().catch((err) => fail(err instanceof Error ? err.message : String(err)));
