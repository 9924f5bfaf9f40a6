import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";
// @ts-expect-error: a plain .mjs script without type declarations
import { DASHBOARD_SHARED } from "../../scripts/dashboard-build.mjs";

/**
 * The dashboard shares three of the Worker's languages instead of copying them: the template `??` default
 * (src/lib/template-defaults.ts), the condition grammar (src/schemas/condition-grammar.ts) and how an import
 * reads a CSV header (src/schemas/import-header.ts). It may import
 * those and nothing else from src/ (no zod, no Worker code in the browser bundle), and they import nothing.
 */
const root = resolve(__dirname, "../..");
const dashboard = join(root, "dashboard", "src");

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sources(path);
    return /\.(ts|tsx)$/.test(e.name) && !e.name.endsWith(".d.ts") ? [path] : [];
  });
}

/** The module specifiers a file imports (static, re-exports, side effects, dynamic). */
function specifiers(text: string): string[] {
  const found = text.matchAll(
    /(?:^|[\s;])(?:import|export)\s[^;]*?from\s*["']([^"']+)["']|import\s*\(\s*["']([^"']+)["']\s*\)|^\s*import\s*["']([^"']+)["']/gm,
  );
  return [...found].map((m) => m[1] ?? m[2] ?? m[3]);
}

function resolveFile(from: string, specifier: string): string {
  const base = resolve(dirname(from), specifier);
  for (const candidate of [base, `${base}.ts`, `${base}.tsx`, join(base, "index.ts")])
    if (existsSync(candidate) && statSync(candidate).isFile()) return candidate;
  return base;
}

/** Every file of src/ a set of files imports, with the importer: `src/x.ts <- dashboard/src/y.tsx`. */
function srcImports(files: string[], text: (file: string) => string): string[] {
  const out: string[] = [];
  for (const file of files) {
    for (const spec of specifiers(text(file))) {
      if (!spec.startsWith(".")) continue;
      const target = relative(root, resolveFile(file, spec));
      if (target.startsWith("src/")) out.push(`${target} <- ${relative(root, file)}`);
    }
  }
  return out;
}

describe("the dashboard's imports from src/", () => {
  const read = (file: string) => readFileSync(file, "utf8");

  it("are only the shared zod-free modules", () => {
    const imported = srcImports(sources(dashboard), read);
    const outside = imported.filter((line) => !DASHBOARD_SHARED.includes(line.split(" <- ")[0]));
    expect(outside).toEqual([]);
    // All are in use: the preview's `??` rewrite, the condition builder's grammar, the import's mapping step.
    expect(new Set(imported.map((line) => line.split(" <- ")[0]))).toEqual(new Set(DASHBOARD_SHARED));
  });

  it("and those import nothing: no package (zod among them), no other module", () => {
    for (const file of DASHBOARD_SHARED) expect(specifiers(read(join(root, file))), file).toEqual([]);
  });

  it("would catch a dashboard file that imports the zod schema (the check itself)", () => {
    const file = join(dashboard, "components", "conditions.tsx");
    const text = 'import { ConditionSchema } from "../../../src/schemas/conditions";\nconst x = await import("../../../src/lib/zod");';
    expect(srcImports([file], () => text)).toEqual([
      "src/schemas/conditions.ts <- dashboard/src/components/conditions.tsx",
      "src/lib/zod.ts <- dashboard/src/components/conditions.tsx",
    ]);
  });
});
