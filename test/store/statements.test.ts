import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { FIXED_SQL as CONTACTS_SQL } from "../../src/store/contacts";
import { FIXED_SQL as DOMAINS_SQL } from "../../src/store/domains";
import { FIXED_SQL as EMAILS_SQL } from "../../src/store/emails";
import { FIXED_SQL as EVENTS_SQL } from "../../src/store/events";
import { FIXED_SQL as GUARDS_SQL } from "../../src/store/guards";
import { FIXED_SQL as REPUTATION_SQL } from "../../src/store/reputation";
import { FIXED_SQL as WORKFLOWS_SQL } from "../../src/store/workflows";

const all = { ...CONTACTS_SQL, ...DOMAINS_SQL, ...EMAILS_SQL, ...EVENTS_SQL, ...GUARDS_SQL, ...REPUTATION_SQL, ...WORKFLOWS_SQL };

/** How many parameters a statement takes: the highest ?N, or the number of bare ?. */
function parameterCount(sql: string): number {
  const numbered = [...sql.matchAll(/\?(\d+)/g)].map((m) => Number(m[1]));
  return numbered.length > 0 ? Math.max(...numbered) : (sql.match(/\?/g) ?? []).length;
}

describe("the store's fixed SQL", () => {
  it("names at least one statement of each module", () => {
    for (const group of [CONTACTS_SQL, DOMAINS_SQL, EMAILS_SQL, EVENTS_SQL, GUARDS_SQL, REPUTATION_SQL, WORKFLOWS_SQL])
      expect(Object.keys(group).length).toBeGreaterThan(0);
  });

  // EXPLAIN compiles a statement against the migrated schema without running it:
  // a column, table, index or conflict target that does not exist fails here.
  for (const [name, sql] of Object.entries(all)) {
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
