import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { z as zod } from "zod";
// The stand-in the deployed bundle uses for "zod" (wrangler.toml [alias]); the workerd
// tests import the real package, so this checks the stand-in against the source.
import * as standIn from "../../scripts/bundle/zod.mjs";

/** zod names the source uses only as types: erased before bundling, so the stand-in needs none of them. */
const TYPE_ONLY = new Set(["infer", "input", "output", "ZodRawShape", "ZodTypeAny", "ZodSchema"]);

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return /\.tsx?$/.test(entry.name) ? [path] : [];
  });
}

describe("scripts/bundle/zod.mjs, the deployed bundle's zod", () => {
  it("has every z.<name> that src/ uses, as zod's own function or class", () => {
    const used = new Set<string>();
    for (const file of sourceFiles("src")) {
      for (const match of readFileSync(file, "utf8").matchAll(/\bz\s*\.\s*([A-Za-z_$][\w$]*)/g)) used.add(match[1]);
    }
    expect(used.size).toBeGreaterThan(10);
    const lean = standIn.z as Record<string, unknown>;
    const real = zod as unknown as Record<string, unknown>;
    const missing = [...used].filter((name) => !TYPE_ONLY.has(name) && lean[name] === undefined);
    expect(missing).toEqual([]);
    for (const name of used) if (!TYPE_ONLY.has(name)) expect(lean[name], name).toBe(real[name]);
  });

  it("has what @hono/zod-openapi takes from z: the ZodType it extends with .openapi()", () => {
    expect(standIn.z.ZodType).toBe(zod.ZodType);
    expect(standIn.default).toBe(standIn.z);
  });
});
