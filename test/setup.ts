import { failTestsOnViolations } from "./fakes/violations";
import { applyD1Migrations } from "cloudflare:test";
import { env } from "cloudflare:workers";

// Storage is isolated per test file; migrations are applied once per file.
await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);

// A fake's finding (a malformed or badly signed request) fails the test that caused it.
failTestsOnViolations();
