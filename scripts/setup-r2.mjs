// The R2 part of `npm run setup:cloudflare` (scripts/setup-cloudflare.mjs): the bucket that
// wrangler.toml binds as STORAGE, and one lifecycle rule per key prefix of
// src/store/objects/prefixes.ts, which expires the prefix's objects after its keepDays
// (computed from wrangler.toml's [vars], e.g. EMAIL_HTML_RETENTION_DAYS, with the Worker's own
// defaults from src/lib/config.ts: the prefixes and their days have one source, read through
// tsx). Locally there are no rules: the cron deletes what they would (src/services/storage/expiry.ts).

/** The [vars] of wrangler.toml as plain strings (KEY = "value" lines; the file is ours). */
export function readVars(text) {
  const section = /^\[vars\]\s*$([\s\S]*?)(?=^\[|(?![\s\S]))/m.exec(text)?.[1] ?? "";
  return Object.fromEntries([...section.matchAll(/^\s*([A-Z0-9_]+)\s*=\s*"([^"]*)"/gm)].map((m) => [m[1], m[2]]));
}

/** Every prefix with the rule that expires it: [{ name, prefix, days }]. */
export async function lifecycleRules(vars) {
  const { tsImport } = await import("tsx/esm/api");
  const { OBJECT_PREFIXES } = await tsImport("../src/store/objects/prefixes.ts", import.meta.url);
  const { readConfig } = await tsImport("../src/lib/config.ts", import.meta.url);
  // Only the day settings matter here (the rest of [vars] is checked where the Worker runs).
  const config = readConfig(Object.fromEntries(Object.entries(vars).filter(([key]) => key.endsWith("_DAYS"))));
  return Object.entries(OBJECT_PREFIXES).map(([key, { prefix, keepDays }]) => ({
    name: `expire-${key}`,
    prefix,
    days: Math.max(1, Math.ceil(keepDays(config))),
  }));
}

/** `wrangler r2 bucket lifecycle list` as [{ name, prefix, days }] (days null when the rule does not expire by age). */
export function parseLifecycleList(out) {
  return out
    .replace(/\x1b\[[0-9;]*m/g, "")
    .split(/\n\s*\n/)
    .map((block) => ({
      name: /^\s*name:\s*(\S+)/m.exec(block)?.[1],
      prefix: /^\s*prefix:\s*(\S+)/m.exec(block)?.[1],
      days: Number(/Expire objects after (\d+(?:\.\d+)?) days/.exec(block)?.[1] ?? Number.NaN),
    }))
    .filter((rule) => rule.name)
    .map((rule) => ({ ...rule, days: Number.isFinite(rule.days) ? rule.days : null }));
}

/**
 * Creates the bucket when missing and makes its lifecycle rules match `rules`: a missing rule is
 * added, one with other days or another prefix replaced; rules of other names are left alone.
 * A second run changes nothing. `wrangler(args)` returns {status, out}; `fail(message, out)` exits.
 */
export async function setupBucket({ bucket, vars, wrangler, fail }) {
  const info = wrangler(["r2", "bucket", "info", bucket]);
  if (info.status === 0) {
    console.log(`✓ R2 bucket ${bucket} exists`);
  } else {
    if (!/does not exist|not found|10006/i.test(info.out)) fail(`wrangler r2 bucket info ${bucket} failed`, info.out);
    const created = wrangler(["r2", "bucket", "create", bucket]);
    if (created.status !== 0) fail(`wrangler r2 bucket create ${bucket} failed`, created.out);
    console.log(`+ created R2 bucket ${bucket}`);
  }
  const listed = wrangler(["r2", "bucket", "lifecycle", "list", bucket]);
  if (listed.status !== 0) fail(`wrangler r2 bucket lifecycle list ${bucket} failed`, listed.out);
  const existing = new Map(parseLifecycleList(listed.out).map((rule) => [rule.name, rule]));
  for (const rule of await lifecycleRules(vars)) {
    const now = existing.get(rule.name);
    if (now && now.prefix === rule.prefix && now.days === rule.days) {
      console.log(`✓ R2 lifecycle rule ${rule.name}: ${rule.prefix} expires after ${rule.days} days`);
      continue;
    }
    if (now) {
      const removed = wrangler(["r2", "bucket", "lifecycle", "remove", bucket, "--name", rule.name]);
      if (removed.status !== 0) fail(`wrangler r2 bucket lifecycle remove ${bucket} --name ${rule.name} failed`, removed.out);
    }
    const added = wrangler(["r2", "bucket", "lifecycle", "add", bucket, rule.name, rule.prefix, "--expire-days", String(rule.days), "--force"]);
    if (added.status !== 0) fail(`wrangler r2 bucket lifecycle add ${bucket} ${rule.name} failed`, added.out);
    console.log(`+ R2 lifecycle rule ${rule.name}: ${rule.prefix} expires after ${rule.days} days${now ? ` (was ${now.prefix}, ${now.days} days)` : ""}`);
  }
}
