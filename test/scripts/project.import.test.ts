import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parse } from "csv-parse/sync";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DevServer, startWranglerDev } from "../../scripts/lib/local-server.mjs";

/**
 * `npm run project -- import / export` against a real `wrangler dev` (its own
 * state, migrations applied, a project made by the CLI): the upload, the
 * import queue consumer, the progress polling and the streamed export.
 */
const root = resolve(__dirname, "../..");
const env = { ...process.env, CI: "1", WRANGLER_SEND_METRICS: "false", NO_COLOR: "1" };
let state: string;
let server: DevServer;
let project: { id: string; secretKey: string };

function runSync(args: string[]) {
  const result = spawnSync("npx", args, { cwd: root, env, encoding: "utf8" });
  if (result.status !== 0) throw new Error(`${args.join(" ")} failed: ${result.stdout}${result.stderr}`);
  return result.stdout;
}

/** The CLI, run to its end: exit code, stdout and stderr. */
function cli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done) => {
    const child = spawn("npx", ["tsx", "scripts/project.ts", ...args, `--url=${server.url}`, `--key=${project.secretKey}`], { cwd: root, env });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    child.on("close", (code) => done({ code, stdout, stderr }));
  });
}

beforeAll(async () => {
  state = mkdtempSync(join(tmpdir(), "edge-mail-cli-import-"));
  runSync(["wrangler", "d1", "migrations", "apply", "DB", "--local", "--persist-to", state]);
  project = JSON.parse(runSync(["tsx", "scripts/project.ts", "create", "cli-import", "--json", "--persist-to", state]).trim().split("\n").pop()!);
  server = await startWranglerDev({ RATE_LIMIT_PER_MINUTE: "100000" }, { persistTo: state });
}, 120_000);

afterAll(async () => {
  await server?.stop();
  rmSync(state, { recursive: true, force: true });
});

describe("npm run project -- import / export", () => {
  it("imports a CSV with a progress bar, prints the counts and first errors, and exports it back", async () => {
    const dir = mkdtempSync(join(tmpdir(), "edge-mail-cli-csv-"));
    try {
      const rows = Array.from({ length: 1200 }, (_, i) => `user${i}@example.com,"Name, ${i}"`);
      const file = join(dir, "contacts.csv");
      writeFileSync(file, `\ufeffemail,name\r\n${rows.join("\r\n")}\r\nnot-an-address,x\r\n`);
      const imported = await cli(["import", project.id, file]);
      expect(imported.code, imported.stderr).toBe(0);
      expect(imported.stderr).toContain("100%  1201/1201 rows");
      expect(imported.stdout).toContain("COMPLETED: 1201 rows, 1200 created, 0 updated, 1 failed");
      expect(imported.stdout).toContain("row 1201: Invalid email address: not-an-address");

      const exported = await cli(["export", project.id]);
      expect(exported.code, exported.stderr).toBe(0);
      const records = parse(exported.stdout) as string[][];
      expect(records[0]).toEqual(["id", "email", "subscribed", "createdAt", "updatedAt", "data"]);
      expect(records).toHaveLength(1201);
      expect(records.find((r) => r[1] === "user7@example.com")![5]).toBe('{"name":"Name, 7"}');

      const missing = join(dir, "bad.csv");
      writeFileSync(missing, "name\nAda\n");
      const refused = await cli(["import", project.id, missing]);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain("422");
      expect(refused.stderr).toContain("email");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
