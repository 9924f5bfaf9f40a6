import { existsSync } from "node:fs";

const CANDIDATES = [
  "/usr/bin/chromium",
  "/usr/bin/chromium-browser",
  "/usr/bin/google-chrome",
  "/usr/bin/google-chrome-stable",
  "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome",
  "/Applications/Chromium.app/Contents/MacOS/Chromium",
];

export const CHROMIUM_MISSING = [
  "The browser tests need Chromium and did not find it.",
  "  Debian/Ubuntu: sudo apt-get update && sudo apt-get install -y chromium",
  "  elsewhere: install Chromium or Chrome and set CHROMIUM_PATH=/path/to/the/binary",
  `  looked at: ${["$CHROMIUM_PATH", ...CANDIDATES].join(", ")}`,
].join("\n");

/** The Chromium binary to drive (CHROMIUM_PATH first), or null. playwright-core downloads no browser of its own. */
export function findChromium(): string | null {
  const fromEnv = process.env.CHROMIUM_PATH;
  if (fromEnv) return existsSync(fromEnv) ? fromEnv : null;
  return CANDIDATES.find((path) => existsSync(path)) ?? null;
}
