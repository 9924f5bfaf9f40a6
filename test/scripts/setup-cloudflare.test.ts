import { spawnSync } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterEach, describe, expect, it } from "vitest";

/**
 * scripts/setup-cloudflare.mjs against a fake wrangler CLI
 * (test/scripts/fake-wrangler.mjs) holding a fake account, on a copy of the
 * committed wrangler.toml and migrations/.
 */
const root = resolve(__dirname, "../..");
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

interface Account {
  loggedIn: boolean;
  databases: { name: string; uuid: string; applied: string[] }[];
  queues: string[];
  secrets: string[];
  workerDeployed: boolean;
  buckets?: { name: string; rules: { id: string; prefix: string; days: number }[] }[];
  calls?: string[];
}

function workspace(initial: Partial<Account> = {}) {
  const dir = mkdtempSync(join(tmpdir(), "edge-mail-setup-"));
  dirs.push(dir);
  cpSync(join(root, "wrangler.toml"), join(dir, "wrangler.toml"));
  cpSync(join(root, "migrations"), join(dir, "migrations"), { recursive: true });
  cpSync(join(root, "migrations-data"), join(dir, "migrations-data"), { recursive: true });
  const statePath = join(dir, "account.json");
  writeFileSync(statePath, JSON.stringify({ loggedIn: true, databases: [], queues: [], secrets: [], workerDeployed: false, ...initial }));
  const run = (args: string[] = []) => {
    const result = spawnSync(process.execPath, [join(root, "scripts/setup-cloudflare.mjs"), ...args], {
      cwd: dir,
      encoding: "utf8",
      env: { ...process.env, WRANGLER: `${process.execPath} ${join(root, "test/scripts/fake-wrangler.mjs")}`, FAKE_WRANGLER_STATE: statePath },
    });
    return { status: result.status, output: result.stdout + result.stderr };
  };
  const account = (): Account => JSON.parse(readFileSync(statePath, "utf8"));
  const tomlPath = join(dir, "wrangler.toml");
  const toml = () => readFileSync(tomlPath, "utf8");
  return { run, account, toml, statePath, tomlPath };
}

const committed = readFileSync(join(root, "wrangler.toml"), "utf8");
const queuesInConfig = [...new Set([...committed.matchAll(/^\s*(?:queue|dead_letter_queue)\s*=\s*"([^"]+)"/gm)].map((m) => m[1]))];
const migrationFiles = spawnSync("ls", [join(root, "migrations")], { encoding: "utf8" })
  .stdout.split("\n")
  .filter((f) => f.endsWith(".sql"));

describe("npm run setup:cloudflare", () => {
  it("--shards 2: creates a database per data shard, writes its [[d1_databases]] entry, applies migrations-data/ to it and migrations/ to DB; a second run without --shards keeps them and changes nothing", async () => {
    const dataFiles = spawnSync("ls", [join(root, "migrations-data")], { encoding: "utf8" })
      .stdout.split("\n")
      .filter((f) => f.endsWith(".sql"));
    const w = workspace();
    const first = w.run(["--shards", "2"]);
    expect(first.status, first.output).toBe(0);
    const dbs = w.account().databases;
    expect(dbs.map((d) => d.name)).toEqual(["edge-mail", "edge-mail-shard-1", "edge-mail-shard-2"]);
    expect(dbs[0].applied).toEqual(migrationFiles);
    expect(dbs[1].applied).toEqual(dataFiles);
    expect(dbs[2].applied).toEqual(dataFiles);
    for (const [n, db] of [
      [1, dbs[1]],
      [2, dbs[2]],
    ] as const) {
      expect(w.toml()).toContain(
        `[[d1_databases]]\nbinding = "SHARD_${n}"\ndatabase_name = "edge-mail-shard-${n}"\ndatabase_id = "${db.uuid}"\nmigrations_dir = "migrations-data"\n`,
      );
    }
    const toml = w.toml();
    const again = w.run();
    expect(again.status, again.output).toBe(0);
    expect(again.output).toContain("✓ D1 database edge-mail-shard-2 (SHARD_2) exists");
    expect(again.output).toContain("✓ D1 migrations of SHARD_2: all applied");
    expect(w.toml()).toBe(toml);
    expect(w.account().databases).toHaveLength(3);
    expect(w.run(["--shards", "x"]).output).toContain("--shards takes the number of extra data shards");
  });

  it("creates the database, every queue (dead-letter too), applies migrations, writes database_id, lists the secrets; a second run changes nothing", async () => {
    expect(queuesInConfig).toEqual(expect.arrayContaining(["edge-mail-send", "edge-mail-send-dlq"]));
    const w = workspace();
    const first = w.run();
    expect(first.status, first.output).toBe(0);
    const after = w.account();
    expect(after.databases).toHaveLength(1);
    expect(after.databases[0]).toMatchObject({ name: "edge-mail", applied: migrationFiles });
    expect([...after.queues].sort()).toEqual([...queuesInConfig].sort());
    expect(w.toml()).toContain(`database_id = "${after.databases[0].uuid}"`);
    expect(w.toml().replace(after.databases[0].uuid, "00000000-0000-0000-0000-000000000000")).toBe(committed);
    for (const secret of ["LINK_SIGNING_SECRET", "DKIM_ENCRYPTION_KEY", "SES_ACCESS_KEY_ID", "SES_SECRET_ACCESS_KEY"]) {
      expect(first.output).toContain(`${secret}:`);
    }

    const tomlAfterFirst = w.toml();
    const callsBefore = after.calls!.length;
    const second = w.run();
    expect(second.status, second.output).toBe(0);
    const again = w.account();
    const secondCalls = again.calls!.slice(callsBefore);
    expect(secondCalls.filter((c) => / create /.test(` ${c} `))).toEqual([]);
    expect(w.toml()).toBe(tomlAfterFirst);
    expect({ ...again, calls: [] }).toEqual({ ...after, calls: [] });
    expect(second.output).toContain("✓ D1 database edge-mail exists");
    expect(second.output).toContain("✓ D1 migrations: all applied");
    expect(second.output).not.toContain("+ ");
  });

  it("uses what already exists and only reports the secrets that are missing", async () => {
    const w = workspace({
      databases: [{ name: "edge-mail", uuid: "11111111-2222-3333-4444-555555555555", applied: [] }],
      queues: ["edge-mail-send"],
      secrets: ["LINK_SIGNING_SECRET", "DKIM_ENCRYPTION_KEY", "SES_ACCESS_KEY_ID"],
      workerDeployed: true,
    });
    const result = w.run();
    expect(result.status, result.output).toBe(0);
    expect(w.account().databases).toHaveLength(1);
    expect(w.toml()).toContain('database_id = "11111111-2222-3333-4444-555555555555"');
    expect(w.account().queues.sort()).toEqual([...queuesInConfig].sort());
    expect(result.output).toContain("SES_SECRET_ACCESS_KEY:");
    expect(result.output).not.toContain("LINK_SIGNING_SECRET:");
  });

  it("creates the R2 bucket and one lifecycle rule per object prefix (its keepDays from [vars]); a changed keep replaces that rule, others stay; a second run changes nothing", async () => {
    const w = workspace();
    const first = w.run();
    expect(first.status, first.output).toBe(0);
    // One rule per entry of OBJECT_PREFIXES (read as text: this tsconfig has no Workers types for src/).
    const source = readFileSync(join(root, "src/store/objects/prefixes.ts"), "utf8");
    const prefixes = [...source.matchAll(/^\s*(\w+): \{ prefix: "([^"]+)"/gm)].map(([, key, prefix]) => ({ key, prefix }));
    expect(prefixes.map((p) => p.prefix)).toContain("bodies/");
    const [bucket] = w.account().buckets!;
    expect(bucket.name).toBe("edge-mail");
    const expected = bucket.rules;
    expect(expected.map((r) => [r.id, r.prefix])).toEqual(prefixes.map((p) => [`expire-${p.key}`, p.prefix]));
    expect(expected.every((r) => Number.isInteger(r.days) && r.days >= 1)).toBe(true);
    expect(expected).toContainEqual({ id: "expire-bodies", prefix: "bodies/", days: 30 });
    expect(first.output).toContain("+ created R2 bucket edge-mail");

    const again = w.run();
    expect(again.status, again.output).toBe(0);
    expect(again.output).toContain("✓ R2 bucket edge-mail exists");
    expect(again.output).toContain("✓ R2 lifecycle rule expire-bodies: bodies/ expires after 30 days");
    expect(w.account().buckets![0].rules).toEqual(expected);

    // An operator's own rule stays; EMAIL_HTML_RETENTION_DAYS in [vars] changes the bodies rule (and only the rules it drives).
    const state = w.account();
    state.buckets![0].rules.push({ id: "operator-rule", prefix: "tmp/", days: 1 });
    writeFileSync(w.statePath, JSON.stringify(state));
    writeFileSync(w.tomlPath, w.toml().replace(/^\[vars\]\s*$/m, '[vars]\nEMAIL_HTML_RETENTION_DAYS = "7"'));
    const changed = w.run();
    expect(changed.status, changed.output).toBe(0);
    const rules = w.account().buckets![0].rules;
    expect(rules).toContainEqual({ id: "expire-bodies", prefix: "bodies/", days: 7 });
    expect(rules).toContainEqual({ id: "operator-rule", prefix: "tmp/", days: 1 });
    expect(rules).toHaveLength(expected.length + 1);
    expect(changed.output).toContain("+ R2 lifecycle rule expire-bodies: bodies/ expires after 7 days (was bodies/, 30 days)");
  });

  it("stops with the login instructions, creating nothing, when wrangler is not logged in", async () => {
    const w = workspace({ loggedIn: false });
    const result = w.run();
    expect(result.status).toBe(1);
    expect(result.output).toContain("npx wrangler login");
    expect(w.account().calls).toEqual(["whoami"]);
    expect(w.toml()).toBe(committed);
  });
});
