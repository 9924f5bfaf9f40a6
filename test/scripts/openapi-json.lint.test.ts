import { execFileSync, spawnSync } from "node:child_process";
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/**
 * GET /openapi.json, built from the real app (scripts/openapi-json.ts, in its own
 * process as the dashboard's type generator does), is clean under Redocly's
 * `recommended` rules with the committed redocly.yaml and .redocly.lint-ignore.yaml:
 * no error and no warning. Generated clients name their methods after operationId.
 */
const root = resolve(__dirname, "../..");
let dir: string;
let document: { servers?: { url: string }[]; paths: Record<string, Record<string, { operationId?: string; security?: unknown[] }>> };

interface LintReport {
  totals: { errors: number; warnings: number; ignored: number };
  problems: { ruleId: string; severity: string; message: string; location: { pointer: string }[] }[];
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "edge-mail-openapi-"));
  execFileSync("npx", ["tsx", "scripts/openapi-json.ts", join(dir, "openapi.json")], { cwd: root, encoding: "utf8" });
  // The ignore file names the document by its path beside the config, as in the repository root.
  for (const file of ["redocly.yaml", ".redocly.lint-ignore.yaml"]) copyFileSync(join(root, file), join(dir, file));
  document = JSON.parse(readFileSync(join(dir, "openapi.json"), "utf8"));
}, 60_000);

afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("the OpenAPI document under Redocly's recommended lint", () => {
  it("has no error and no warning", () => {
    const run = spawnSync(process.execPath, [join(root, "node_modules/@redocly/cli/bin/cli.js"), "lint", "openapi.json", "--format", "json"], {
      cwd: dir,
      encoding: "utf8",
      env: { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true", NO_COLOR: "1" },
    });
    const report = JSON.parse(run.stdout) as LintReport;
    const problems = report.problems.map((p) => `${p.severity} ${p.ruleId} ${p.location[0]?.pointer}: ${p.message}`);
    expect(problems).toEqual([]);
    expect(report.totals).toMatchObject({ errors: 0, warnings: 0 });
    expect(run.status).toBe(0);
  });

  it("names a server, and every operation has a unique camelCase operationId; the key-less ones say security: []", () => {
    expect(document.servers?.length).toBeGreaterThan(0);
    const operations = Object.entries(document.paths).flatMap(([path, item]) => Object.entries(item).map(([method, op]) => ({ path, method, ...op })));
    const ids = operations.map((op) => op.operationId);
    expect(ids.filter((id) => !/^[a-z][A-Za-z]+$/.test(id ?? ""))).toEqual([]);
    expect(new Set(ids).size).toBe(ids.length);
    const byId = Object.fromEntries(operations.map((op) => [op.operationId, op]));
    expect(byId.sendEmail).toMatchObject({ method: "post", path: "/v1/send" });
    expect(byId.listContacts).toMatchObject({ method: "get", path: "/contacts" });
    expect(byId.getContact).toMatchObject({ method: "get", path: "/contacts/{id}" });
    const keyless = operations.filter((op) => op.security?.length === 0).map((op) => `${op.method.toUpperCase()} ${op.path}`);
    expect(keyless.sort()).toEqual(
      [
        "GET /health",
        "GET /t/o/{emailId}",
        "GET /t/c/{emailId}",
        "GET /unsubscribe/{token}",
        "POST /unsubscribe/{token}",
        "GET /confirm/{token}",
        "POST /confirm/{token}",
        "GET /preferences/{token}",
        "POST /preferences/{token}",
        "POST /webhooks/ses",
      ].sort(),
    );
  });
});
