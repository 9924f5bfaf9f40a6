#!/usr/bin/env node
// Copies the API reference UI (Swagger UI's prebuilt bundle, from the pinned
// swagger-ui-dist package in node_modules) into public/docs-assets/vendor/,
// which Workers static assets serve next to the Worker ([assets] in
// wrangler.toml). GET /docs then needs nothing from a CDN: it renders offline
// in `npm run dev` and behind a CSP that allows only this origin.
//
// It also writes public/data/disposable-domains.json, the disposable-domain list of
// the pinned disposable-email-domains-js package, which the Worker reads through its
// ASSETS binding on the first /v1/verify (data, so it stays out of the Worker bundle).
//
// Run by `npm install` (postinstall, with --optional), by wrangler before `dev` and `deploy`
// ([build] in wrangler.toml) and by vitest.config.ts. The copies are
// git-ignored: ~1.9 MB that the lockfile already pins, so they are not vendored.
import { copyFileSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const source = join(root, "node_modules", "swagger-ui-dist");
const target = join(root, "public", "docs-assets", "vendor");
export const DOCS_UI_FILES = ["swagger-ui-bundle.js", "swagger-ui.css", "LICENSE"];
const disposableSource = join(root, "node_modules", "disposable-email-domains-js", "dist", "dict", "disposable_email_blocklist.json");
export const DISPOSABLE_DOMAINS_FILE = join(root, "public", "data", "disposable-domains.json");

export function copyDocsAssets() {
  if (!existsSync(join(source, "package.json"))) {
    throw new Error("node_modules/swagger-ui-dist is missing: run `npm install` first (it provides the /docs UI).");
  }
  mkdirSync(target, { recursive: true });
  for (const file of DOCS_UI_FILES) {
    const from = join(source, file);
    const to = join(target, file);
    // Unchanged files are left alone so `wrangler dev`'s watcher sees no change.
    if (existsSync(to) && statSync(to).size === statSync(from).size && readFileSync(to).equals(readFileSync(from))) continue;
    copyFileSync(from, to);
  }
  copyDisposableDomains();
  return target;
}

function copyDisposableDomains() {
  if (!existsSync(disposableSource)) throw new Error("node_modules/disposable-email-domains-js is missing: run `npm install` first.");
  const list = JSON.parse(readFileSync(disposableSource, "utf8"));
  if (!Array.isArray(list) || list.length < 1000 || !list.every((d) => typeof d === "string")) {
    throw new Error(`${disposableSource} is not the expected list of domain names`);
  }
  const text = JSON.stringify(list.map((d) => d.trim().toLowerCase()).filter(Boolean));
  if (existsSync(DISPOSABLE_DOMAINS_FILE) && readFileSync(DISPOSABLE_DOMAINS_FILE, "utf8") === text) return;
  mkdirSync(dirname(DISPOSABLE_DOMAINS_FILE), { recursive: true });
  writeFileSync(DISPOSABLE_DOMAINS_FILE, text);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  try {
    copyDocsAssets();
  } catch (err) {
    console.error(err instanceof Error ? err.message : err);
    // postinstall of an install without devDependencies: say so, but do not fail the install.
    process.exit(process.argv.includes("--optional") ? 0 : 1);
  }
}
