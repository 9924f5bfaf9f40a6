#!/usr/bin/env node
// Builds the dashboard (dashboard/, Preact + Vite) into public/app/, which Workers
// static assets serve at /app next to the Worker ([assets] in wrangler.toml).
//
// Run by `npm install` (postinstall, with --optional), by wrangler before `dev` and
// `deploy` ([build] in wrangler.toml) and by vitest.config.ts. The output is
// git-ignored. A build whose sources (dashboard/, DASHBOARD_SHARED and the lock file) are unchanged
// is skipped, so wrangler's rebuilds on every change of src/ stay instant.
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const source = join(root, "dashboard");
export const DASHBOARD_OUT = join(root, "public", "app");
/**
 * The Worker's modules the dashboard imports (zod-free, dependency-free): the template `??` default and the
 * condition grammar. Nothing else of src/ may be imported (test/scripts/dashboard-imports.test.ts).
 */
export const DASHBOARD_SHARED = ["src/lib/template-defaults.ts", "src/schemas/condition-grammar.ts", "src/schemas/import-header.ts"];
const stampFile = join(DASHBOARD_OUT, ".source-hash");

function files(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === "node_modules" ? [] : files(path);
    return [path];
  });
}

/** A hash of everything the build reads: the dashboard's files, the shared modules and the pinned dependency versions. */
function sourceHash() {
  const hash = createHash("sha256");
  for (const file of [...files(source), ...DASHBOARD_SHARED.map((f) => join(root, f)), join(root, "package-lock.json")].sort()) {
    hash.update(relative(root, file));
    hash.update(readFileSync(file));
  }
  return hash.digest("hex");
}

export async function buildDashboard({ force = false } = {}) {
  const hash = sourceHash();
  if (!force && existsSync(join(DASHBOARD_OUT, "index.html")) && existsSync(stampFile) && readFileSync(stampFile, "utf8") === hash) return false;
  const { build } = await import("vite");
  await build({ configFile: join(source, "vite.config.ts"), logLevel: "warn" });
  writeFileSync(stampFile, hash);
  return true;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  try {
    const built = await buildDashboard({ force: process.argv.includes("--force") });
    if (built) console.log(`dashboard built into ${relative(root, DASHBOARD_OUT)}/ (${statSync(join(DASHBOARD_OUT, "index.html")).size} B index.html)`);
  } catch (err) {
    console.error(err instanceof Error ? err.message : err);
    // postinstall of an install without devDependencies (no vite): say so, but do not fail the install.
    process.exit(process.argv.includes("--optional") ? 0 : 1);
  }
}
