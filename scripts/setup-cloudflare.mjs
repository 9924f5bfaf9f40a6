#!/usr/bin/env node
// `npm run setup:cloudflare`: prepares a Cloudflare account for this Worker, once
// or again (a second run changes nothing):
//   1. the D1 database named in wrangler.toml (created if missing; its id written
//      into wrangler.toml when that still holds another id),
//   2. every queue wrangler.toml names, dead-letter queues included (created if missing),
//   2b. the R2 bucket (created if missing) and its lifecycle rules, one per key prefix
//      (scripts/setup-r2.mjs),
//   2c. the data shards: `--shards N` makes sure SHARD_1 … SHARD_N exist (database
//      <name>-shard-<n>, created if missing, its [[d1_databases]] entry written into
//      wrangler.toml); shards wrangler.toml binds already are kept (docs/deploy.md
//      "Adding a shard"). Without --shards and without SHARD_n entries: one database, as before.
//   2d. receiving mail, when [vars] sets INBOUND_DOMAIN (scripts/setup-inbound.mjs): Email Routing on
//      for it, subaddressing on, the rule r@ (and with --inbound-catch-all the zone's
//      catch-all) sent to this Worker; through the REST API with CLOUDFLARE_API_TOKEN, else printed
//      as steps to do by hand. `--dry-run` makes this step read only and print what it would change.
//   3. the D1 migrations, applied remotely (wrangler applies only the new ones): migrations/
//      on DB, migrations-data/ on every data shard,
//   4. the secrets still to set, printed with the command for each.
// It drives the wrangler CLI of this project (WRANGLER overrides the command,
// e.g. for tests), so it uses whatever login wrangler has: `npx wrangler login`
// or CLOUDFLARE_API_TOKEN (+ CLOUDFLARE_ACCOUNT_ID).
import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { readVars, setupBucket } from "./setup-r2.mjs";
import { setupInbound } from "./setup-inbound.mjs";

const CONFIG = process.env.WRANGLER_CONFIG ?? "wrangler.toml";
const wranglerCommand = (process.env.WRANGLER ?? "npx wrangler").split(" ").filter(Boolean);
const env = { ...process.env, WRANGLER_SEND_METRICS: "false" };

/** Runs wrangler; returns {status, out} with stdout and stderr together. */
function wrangler(args, { quiet = true } = {}) {
  const [cmd, ...pre] = wranglerCommand;
  const result = spawnSync(cmd, [...pre, ...args], { env, encoding: "utf8", stdio: quiet ? "pipe" : "inherit" });
  if (result.error) throw result.error;
  return { status: result.status ?? 1, out: `${result.stdout ?? ""}${result.stderr ?? ""}` };
}

function fail(message, out = "") {
  console.error(`\n✗ ${message}${out ? `\n${out.trim()}` : ""}`);
  process.exit(1);
}

/** The parts of wrangler.toml this script needs (plain lines; the file is ours). */
function readConfig(text) {
  const database = /\[\[d1_databases\]\][^[]*?database_name\s*=\s*"([^"]+)"/s.exec(text)?.[1];
  const databaseId = /\[\[d1_databases\]\][^[]*?database_id\s*=\s*"([^"]*)"/s.exec(text)?.[1];
  const queues = [...text.matchAll(/^\s*(?:queue|dead_letter_queue)\s*=\s*"([^"]+)"/gm)].map((m) => m[1]);
  const provider = /^\s*EMAIL_PROVIDER\s*=\s*"([^"]*)"/m.exec(text)?.[1] ?? "ses";
  return { database, databaseId, queues: [...new Set(queues)], provider };
}

const text = readFileSync(CONFIG, "utf8");
const config = readConfig(text);
if (!config.database) fail(`${CONFIG} names no [[d1_databases]] database_name`);

// 0. Logged in?
const whoami = wrangler(["whoami"]);
if (whoami.status !== 0 || /not authenticated/i.test(whoami.out)) {
  fail("wrangler is not logged in: run `npx wrangler login`, or set CLOUDFLARE_API_TOKEN (and CLOUDFLARE_ACCOUNT_ID)", whoami.out);
}

// 1. D1 database.
function findDatabase(name = config.database) {
  const list = wrangler(["d1", "list", "--json"]);
  if (list.status !== 0) fail("wrangler d1 list failed", list.out);
  const start = list.out.indexOf("[");
  let rows;
  try {
    rows = JSON.parse(list.out.slice(start));
  } catch {
    fail("could not read `wrangler d1 list --json`", list.out);
  }
  return rows.find((row) => row.name === name);
}
let database = findDatabase();
if (database) {
  console.log(`✓ D1 database ${config.database} exists (${database.uuid})`);
} else {
  const created = wrangler(["d1", "create", config.database]);
  if (created.status !== 0) fail(`wrangler d1 create ${config.database} failed`, created.out);
  database = findDatabase();
  if (!database) fail(`created D1 database ${config.database} but cannot find it in wrangler d1 list`);
  console.log(`+ created D1 database ${config.database} (${database.uuid})`);
}
if (config.databaseId !== database.uuid) {
  const updated = text.replace(/(\[\[d1_databases\]\][^[]*?database_id\s*=\s*")([^"]*)(")/s, (_, before, _old, after) => `${before}${database.uuid}${after}`);
  writeFileSync(CONFIG, updated);
  console.log(`+ ${CONFIG}: database_id = "${database.uuid}" (commit this change)`);
}

// 2. Queues, dead-letter queues included.
for (const queue of config.queues) {
  const info = wrangler(["queues", "info", queue]);
  if (info.status === 0) {
    console.log(`✓ queue ${queue} exists`);
    continue;
  }
  if (!/does not exist/i.test(info.out)) fail(`wrangler queues info ${queue} failed`, info.out);
  const created = wrangler(["queues", "create", queue]);
  if (created.status !== 0) fail(`wrangler queues create ${queue} failed`, created.out);
  console.log(`+ created queue ${queue}`);
}

// 2b. The R2 bucket and its lifecycle rules.
const bucket = /\[\[r2_buckets\]\][^[]*?bucket_name\s*=\s*"([^"]+)"/s.exec(text)?.[1];
if (!bucket) fail(`${CONFIG} names no [[r2_buckets]] bucket_name`);
await setupBucket({ bucket, vars: readVars(text), wrangler, fail });

// 2d. Receiving mail (optional): Email Routing for INBOUND_DOMAIN, to this Worker.
const inboundDomain = readVars(text).INBOUND_DOMAIN?.trim().toLowerCase() || undefined;
await setupInbound({
  domain: inboundDomain,
  worker: /^name\s*=\s*"([^"]+)"/m.exec(text)?.[1] ?? "edge-mail",
  token: process.env.CLOUDFLARE_API_TOKEN,
  accountId: process.env.CLOUDFLARE_ACCOUNT_ID,
  catchAll: process.argv.includes("--inbound-catch-all"),
  dryRun: process.argv.includes("--dry-run"),
  apiBase: process.env.CLOUDFLARE_API_BASE_URL,
});

// 2c. Data shards: SHARD_1 … SHARD_n (src/db/shards.ts), each a database of its own with its own migrations.
const shardsAt = process.argv.findIndex((a) => a === "--shards" || a.startsWith("--shards="));
const shardsArg = shardsAt < 0 ? undefined : process.argv[shardsAt].includes("=") ? process.argv[shardsAt].split("=")[1] : process.argv[shardsAt + 1];
if (shardsArg !== undefined && !/^(0|[1-9][0-9]{0,2})$/.test(shardsArg)) fail(`--shards takes the number of extra data shards (0-999), not "${shardsArg}"`);
const shardBlock = (n) => new RegExp(`\\[\\[d1_databases\\]\\]\\s*\\nbinding\\s*=\\s*"SHARD_${n}"[^[]*`, "s");
const boundShards = () => [...readFileSync(CONFIG, "utf8").matchAll(/^binding\s*=\s*"SHARD_([1-9][0-9]*)"/gm)].map((m) => Number(m[1]));
const shardCount = Math.max(Number(shardsArg ?? 0), 0, ...boundShards());
for (let n = 1; n <= shardCount; n++) {
  const current = readFileSync(CONFIG, "utf8");
  const block = shardBlock(n).exec(current)?.[0];
  const name = (block && /database_name\s*=\s*"([^"]+)"/.exec(block)?.[1]) ?? `${config.database}-shard-${n}`;
  let shard = findDatabase(name);
  if (shard) console.log(`✓ D1 database ${name} (SHARD_${n}) exists (${shard.uuid})`);
  else {
    const created = wrangler(["d1", "create", name]);
    if (created.status !== 0) fail(`wrangler d1 create ${name} failed`, created.out);
    shard = findDatabase(name);
    if (!shard) fail(`created D1 database ${name} but cannot find it in wrangler d1 list`);
    console.log(`+ created D1 database ${name} (SHARD_${n}) (${shard.uuid})`);
  }
  const entry = `[[d1_databases]]\nbinding = "SHARD_${n}"\ndatabase_name = "${name}"\ndatabase_id = "${shard.uuid}"\nmigrations_dir = "migrations-data"\n`;
  if (!block) {
    // After the last [[d1_databases]] entry (DB's, or the previous shard's).
    const last = [...current.matchAll(/^\[\[d1_databases\]\]\n(?:(?:[a-z_]+\s*=.*|#.*)\n)*/gm)].at(-1);
    const at = last ? last.index + last[0].length : current.length;
    writeFileSync(CONFIG, `${current.slice(0, at).replace(/\n*$/, "\n\n")}${entry}\n${current.slice(at).replace(/^\n+/, "")}`);
    console.log(`+ ${CONFIG}: [[d1_databases]] SHARD_${n} (commit this change)`);
  } else if (!block.includes(`database_id = "${shard.uuid}"`)) {
    writeFileSync(CONFIG, current.replace(block, block.replace(/database_id\s*=\s*"[^"]*"/, `database_id = "${shard.uuid}"`)));
    console.log(`+ ${CONFIG}: SHARD_${n} database_id = "${shard.uuid}" (commit this change)`);
  }
}

// 3. Migrations (wrangler keeps the list of applied ones in the database itself): control and shard 0, then each data shard.
for (const binding of ["DB", ...boundShards().map((n) => `SHARD_${n}`)]) {
  const migrations = wrangler(["d1", "migrations", "apply", binding, "--remote"]);
  if (migrations.status !== 0) fail(`wrangler d1 migrations apply ${binding} --remote failed`, migrations.out);
  const what = binding === "DB" ? "D1 migrations" : `D1 migrations of ${binding}`;
  console.log(/no migrations to apply/i.test(migrations.out) ? `✓ ${what}: all applied` : `+ applied the new ${what}`);
}

// 4. Secrets still to set (the Worker may not exist before its first deploy: then none are set).
const required = [
  ["LINK_SIGNING_SECRET", "signs tracking and unsubscribe links", "openssl rand -base64 32 | npx wrangler secret put LINK_SIGNING_SECRET"],
  ["DKIM_ENCRYPTION_KEY", "encrypts each sending domain's DKIM private key", "openssl rand -base64 32 | npx wrangler secret put DKIM_ENCRYPTION_KEY"],
  ...(config.provider === "ses"
    ? [
        ["SES_ACCESS_KEY_ID", "AWS access key id for SES (EMAIL_PROVIDER=ses)", "npx wrangler secret put SES_ACCESS_KEY_ID"],
        ["SES_SECRET_ACCESS_KEY", "AWS secret access key for SES (EMAIL_PROVIDER=ses)", "npx wrangler secret put SES_SECRET_ACCESS_KEY"],
      ]
    : []),
];
const listed = wrangler(["secret", "list", "--format", "json"]);
let set = new Set();
if (listed.status === 0) {
  try {
    set = new Set(JSON.parse(listed.out.slice(listed.out.indexOf("["))).map((s) => s.name));
  } catch {
    // unreadable: report every secret as still to set
  }
}
const missing = required.filter(([name]) => !set.has(name));
if (missing.length === 0) {
  console.log("✓ secrets: all set");
} else {
  console.log(`\nSecrets still to set (${missing.length}):`);
  for (const [name, what, command] of missing) console.log(`  ${name}: ${what}\n    ${command}`);
}
console.log("\nNext: set PUBLIC_URL in wrangler.toml [vars], then `npm run deploy`. docs/deploy.md has the rest.");
