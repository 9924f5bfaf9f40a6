#!/usr/bin/env node
// Copies the API reference UI (Swagger UI's prebuilt bundle, from the pinned
// swagger-ui-dist package in node_modules) into public/docs-assets/vendor/,
// which Workers static assets serve next to the Worker ([assets] in
// wrangler.toml). GET /docs then needs nothing from a CDN: it renders offline
// in `npm run dev` and behind a CSP that allows only this origin.
//
// Run by `npm install` (postinstall, with --optional), by wrangler before `dev` and `deploy`
// ([build] in wrangler.toml) and by vitest.config.ts. The copies are
// git-ignored: ~1.9 MB that the lockfile already pins, so they are not vendored.
import { copyFileSync, existsSync, mkdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const source = join(root, "node_modules", "swagger-ui-dist");
const target = join(root, "public", "docs-assets", "vendor");
export const DOCS_UI_FILES = ["swagger-ui-bundle.js", "swagger-ui.css", "LICENSE"];

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
  return target;
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
