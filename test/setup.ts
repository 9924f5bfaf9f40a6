import { failTestsOnViolations } from "./fakes/violations";
import { applyD1Migrations } from "cloudflare:test";
import { env } from "cloudflare:workers";

// Storage is isolated per test file; migrations are applied once per file.
await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
// The second data shard (vitest.config.ts): the data tables only, from migrations-data/.
if (env.SHARD_1) await applyD1Migrations(env.SHARD_1, env.TEST_DATA_MIGRATIONS);

// A fake's finding (a malformed or badly signed request) fails the test that caused it.
failTestsOnViolations();
