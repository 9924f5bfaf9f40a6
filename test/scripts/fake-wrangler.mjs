#!/usr/bin/env node
// A stand-in for the wrangler CLI at its command-line boundary, for the
// account-setup script's tests: the account (D1 databases, queues, applied
// migrations, secrets) lives in the JSON file FAKE_WRANGLER_STATE. It answers
// as wrangler 4.86 does where the script reads the answer: `d1 list --json`,
// `queues info` failing with 'Queue "x" does not exist', creates that refuse
// duplicates, `d1 migrations apply <binding> --remote` that needs the binding's database_id
// in wrangler.toml to exist and applies only new files of its migrations_dir, `secret list` failing
// before the Worker's first deploy.
import { readdirSync, readFileSync, writeFileSync } from "node:fs";

const statePath = process.env.FAKE_WRANGLER_STATE;
const state = JSON.parse(readFileSync(statePath, "utf8"));
state.calls ??= [];
const args = process.argv.slice(2);
state.calls.push(args.join(" "));
const save = () => writeFileSync(statePath, JSON.stringify(state, null, 2));
const out = (text, code = 0) => {
  save();
  (code === 0 ? process.stdout : process.stderr).write(`${text}\n`);
  process.exit(code);
};
const [a, b, c] = args;

if (a === "whoami") out(state.loggedIn ? "You are logged in with an API Token." : "You are not authenticated. Please run `wrangler login`.");
if (!state.loggedIn) out("✘ [ERROR] Not logged in.", 1);

if (a === "d1" && b === "list")
  out(
    JSON.stringify(
      state.databases.map((d) => ({ uuid: d.uuid, name: d.name, version: "production" })),
      null,
      2,
    ),
  );
if (a === "d1" && b === "create") {
  if (state.databases.some((d) => d.name === c)) out(`✘ [ERROR] A database with that name already exists [code: 7502]`, 1);
  const uuid = `${String(state.databases.length + 1).padStart(8, "0")}-aaaa-bbbb-cccc-${Date.now().toString(16).padStart(12, "0").slice(-12)}`;
  state.databases.push({ name: c, uuid, applied: [] });
  out(`✅ Successfully created DB '${c}'\n[[d1_databases]]\nbinding = "DB"\ndatabase_name = "${c}"\ndatabase_id = "${uuid}"`);
}
if (a === "d1" && b === "migrations" && c === "apply" && args.includes("--remote")) {
  const config = readFileSync(process.env.WRANGLER_CONFIG ?? "wrangler.toml", "utf8");
  // The [[d1_databases]] entry of the binding named (DB: the first one), and its migrations_dir.
  const block =
    args[3] === "DB" ? config : (new RegExp(`^\\[\\[d1_databases\\]\\]\\nbinding = "${args[3]}"\\n(?:[a-z_]+\\s*=.*\\n)*`, "m").exec(config)?.[0] ?? "");
  const id = /database_id\s*=\s*"([^"]*)"/.exec(block)?.[1];
  const db = state.databases.find((d) => d.uuid === id);
  if (!db) out(`✘ [ERROR] Couldn't find DB with id ${id}`, 1);
  const dir = args[3] === "DB" ? "migrations" : (/migrations_dir\s*=\s*"([^"]*)"/.exec(block)?.[1] ?? "migrations");
  const files = readdirSync(dir)
    .filter((f) => f.endsWith(".sql"))
    .sort();
  const pending = files.filter((f) => !db.applied.includes(f));
  if (pending.length === 0) out("✅ No migrations to apply!");
  db.applied.push(...pending);
  out(`Migrations to be applied:\n${pending.join("\n")}\n🤖 Using fallback value in non-interactive context: yes\n✅ Applied ${pending.length} migrations`);
}
if (a === "queues" && b === "info") {
  if (!state.queues.includes(c)) out(`✘ [ERROR] Queue "${c}" does not exist. To create it, run: wrangler queues create ${c}`, 1);
  out(`Queue Name: ${c}\nQueue ID: q-${c}`);
}
if (a === "queues" && b === "create") {
  if (state.queues.includes(c)) out(`✘ [ERROR] A queue with name ${c} already exists. [code: 11009]`, 1);
  state.queues.push(c);
  out(`✅ Created queue ${c}.`);
}
// R2: `r2 bucket info` failing for a missing bucket, lifecycle rules listed as wrangler prints them.
state.buckets ??= [];
const bucketOf = (name) => state.buckets.find((x) => x.name === name);
if (a === "r2" && b === "bucket" && c === "info") {
  if (!bucketOf(args[3])) out("✘ [ERROR] The specified bucket does not exist. [code: 10006]", 1);
  out(`name: ${args[3]}\nlocation: ENAM`);
}
if (a === "r2" && b === "bucket" && c === "create") {
  if (bucketOf(args[3])) out("✘ [ERROR] The bucket you tried to create already exists, and you own it. [code: 10004]", 1);
  state.buckets.push({ name: args[3], rules: [] });
  out(`✅ Created bucket '${args[3]}' with default storage class of Standard.`);
}
if (a === "r2" && b === "bucket" && c === "lifecycle") {
  const [, , , verb, name, id, prefix] = args;
  const target = bucketOf(name);
  if (!target) out("✘ [ERROR] The specified bucket does not exist. [code: 10006]", 1);
  if (verb === "list") {
    if (target.rules.length === 0) out(`There are no lifecycle rules for bucket '${name}'.`);
    out(
      target.rules
        .map((r) => `name:     ${r.id}\nenabled:  Yes\nprefix:   ${r.prefix || "(all prefixes)"}\naction:   Expire objects after ${r.days} days`)
        .join("\n\n"),
    );
  }
  if (verb === "add") {
    const days = Number(args[args.indexOf("--expire-days") + 1]);
    if (target.rules.some((r) => r.id === id)) out(`✘ [ERROR] A rule with id ${id} already exists`, 1);
    target.rules.push({ id, prefix, days });
    out(`✨ Added lifecycle rule '${id}' to bucket '${name}'.`);
  }
  if (verb === "remove") {
    const ruleId = args[args.indexOf("--name") + 1];
    target.rules = target.rules.filter((r) => r.id !== ruleId);
    out(`Lifecycle rule '${ruleId}' removed from bucket '${name}'.`);
  }
}
if (a === "secret" && b === "list") {
  if (!state.workerDeployed) out(`✘ [ERROR] This Worker does not exist on your account. [code: 10007]`, 1);
  out(JSON.stringify(state.secrets.map((name) => ({ name, type: "secret_text" }))));
}
out(`fake wrangler: unexpected command: ${args.join(" ")}`, 2);
