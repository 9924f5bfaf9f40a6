import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-pool-workers";
import { readFileSync } from "node:fs";
import { configDefaults, defineConfig } from "vitest/config";
// @ts-expect-error: a plain .mjs script without type declarations
import { copyDocsAssets } from "./scripts/docs-assets.mjs";
// @ts-expect-error: a plain .mjs script without type declarations
import { buildDashboard } from "./scripts/dashboard-build.mjs";

/**
 * wrangler.toml's [alias] entries as Vite aliases (exact specifiers only), so the
 * workerd tests run the modules the deployed bundle has.
 */
function wranglerAliases() {
  const toml = readFileSync("wrangler.toml", "utf8");
  const section = /^\[alias\]\s*$([\s\S]*?)(?=^\[|(?![\s\S]))/m.exec(toml)?.[1] ?? "";
  return [...section.matchAll(/^\s*"([^"]+)"\s*=\s*"([^"]+)"/gm)].map(([, find, replacement]) => ({
    find: new RegExp(`^${find.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")}$`),
    replacement: new URL(replacement, import.meta.url).pathname,
  }));
}

export default defineConfig(async () => {
  // Static assets (the /docs UI) must exist before wrangler.toml's [assets] directory is read.
  copyDocsAssets();
  // The dashboard's files (public/app/): skipped when its sources are unchanged.
  await buildDashboard();
  const migrations = await readD1Migrations("migrations");
  // The data shards' own history (src/db/shards.ts): the tests run with a second data shard, SHARD_1.
  const dataMigrations = await readD1Migrations("migrations-data");
  return {
    plugins: [
      cloudflareTest({
        wrangler: { configPath: "./wrangler.toml" },
        miniflare: {
          // Explicit bindings so tests never depend on a developer's .dev.vars.
          d1Databases: ["SHARD_1"],
          bindings: {
            TEST_MIGRATIONS: migrations,
            TEST_DATA_MIGRATIONS: dataMigrations,
            ENVIRONMENT: "test",
            RATE_LIMIT_PER_MINUTE: "1000",
            // At least 32 bytes: shorter link-signing secrets are refused.
            LINK_SIGNING_SECRET: "test-link-signing-secret-0123456789abcdef",
            // The SES feedback webhook accepts nothing until its topic allow-list is set.
            SES_SNS_TOPIC_ARNS: "arn:aws:sns:us-east-1:123456789012:ses-feedback",
            PUBLIC_URL: "http://edge-mail.test",
            INBOUND_DOMAIN: "in.edge-mail.test",
            // Sending domains and /v1/verify: tests fake DNS-over-HTTPS with vi.spyOn(globalThis, "fetch").
            DOH_URL: "https://doh.test/dns-query",
            DOH_TIMEOUT_MS: "300",
            DKIM_ENCRYPTION_KEY: "test-only-dkim-encryption-key-0123456789abcdef",
            EMAIL_PROVIDER: "capture",
          },
        },
      }),
    ],
    test: {
      projects: [
        // Everything that runs inside workerd, with the plugin above.
        {
          extends: true,
          resolve: { alias: wranglerAliases() },
          test: {
            name: "workers",
            sequence: { groupOrder: 0 },
            include: ["test/**/*.test.ts"],
            exclude: [...configDefaults.exclude, "test/browser/**", "test/scripts/**", "test/faults/**", "test/**/*.e2e.test.ts"],
            setupFiles: ["./test/setup.ts"],
            // Tests wait on events and injected clocks, never on wall time; this only
            // bounds a hung test, generously, since CI runners are shared and slow.
            testTimeout: 30_000,
            hookTimeout: 30_000,
          },
        },
        // Node side, no workerd pool: real headless Chromium and the Email Service simulation against `wrangler dev`, and the scripts.
        {
          test: {
            name: "node",
            // After the workerd suites, not beside them: wrangler dev and Chromium would compete for the CPU.
            sequence: { groupOrder: 1 },
            include: ["test/browser/**/*.browser.test.ts", "test/scripts/**/*.test.ts", "test/e2e/**/*.e2e.test.ts"],
            environment: "node",
            hookTimeout: 120_000,
            testTimeout: 60_000,
          },
        },
        // Fault tests (test/faults): kill a real `wrangler dev` and start it again; minutes each, so only with
        // `npm run test:faults` (FAULTS=1), which .ci/run runs after the suites above.
        ...(process.env.FAULTS === "1"
          ? [
              {
                test: {
                  name: "faults",
                  sequence: { groupOrder: 2 },
                  include: ["test/faults/**/*.faults.test.ts"],
                  environment: "node",
                  // Two files at a time: each has its own ports and state, and most of a file's time is waiting for a lease.
                  maxWorkers: 2,
                  hookTimeout: 300_000,
                  testTimeout: 480_000,
                },
              },
            ]
          : []),
      ],
    },
  };
});
