/// <reference types="vite/client" />
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";

// Every module under src/store/, found here rather than listed: a new store file is compiled without touching this test.
const modules = import.meta.glob<{ FIXED_SQL?: Record<string, string> }>("../../src/store/**/*.ts", { eager: true });

/** module path (relative to src/store/) -> its FIXED_SQL, undefined when it exports none. */
const groups = Object.entries(modules).map(([path, module]) => [path.replace("../../src/store/", ""), module.FIXED_SQL] as const);

const all = groups.flatMap(([module, sql]) => Object.entries(sql ?? {}).map(([name, text]) => [`${module} ${name}`, text] as const));

/** How many parameters a statement takes: the highest ?N, or the number of bare ?. */
function parameterCount(sql: string): number {
  const numbered = [...sql.matchAll(/\?(\d+)/g)].map((m) => Number(m[1]));
  return numbered.length > 0 ? Math.max(...numbered) : (sql.match(/\?/g) ?? []).length;
}

describe("the store's fixed SQL", () => {
  it("finds the store's modules", () => {
    expect(groups.map(([module]) => module)).toEqual(
      expect.arrayContaining(["contacts.ts", "emails.ts", "webhooks/events.ts", "webhooks/endpoints.ts", "webhooks/deliveries.ts"]),
    );
  });

  it("every store module exports FIXED_SQL (an empty object when it has none)", () => {
    const without = groups.filter(([, sql]) => typeof sql !== "object" || sql === null).map(([module]) => module);
    expect(without).toEqual([]);
  });

  // EXPLAIN compiles a statement against the migrated schema without running it:
  // a column, table, index or conflict target that does not exist fails here.
  for (const [name, sql] of all) {
    it(`${name} compiles against the migrated schema`, async () => {
      const nulls = Array.from({ length: parameterCount(sql) }, () => null);
      await expect(
        env.DB.prepare(`EXPLAIN ${sql}`)
          .bind(...nulls)
          .all(),
      ).resolves.toBeDefined();
    });
  }
});
