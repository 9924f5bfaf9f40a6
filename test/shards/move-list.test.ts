import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { MOVE_TABLES, STAYING_TABLES } from "../../src/store/project-move";

/** The tables of a database, without SQLite's, D1's and Cloudflare's own. */
async function tablesOf(d1: D1Database): Promise<string[]> {
  const { results } = await d1
    .prepare(
      "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE 'd1_%' AND name NOT LIKE '_cf_%' ORDER BY name",
    )
    .all<{ name: string }>();
  return results.map((r) => r.name);
}

const moved = new Set(MOVE_TABLES.map((t) => t.name));
const named = (name: string) => moved.has(name) || Object.hasOwn(STAYING_TABLES, name);

describe("the move list (src/store/project-move.ts)", () => {
  it("names every table of the control database and shard 0 (DB): moved, or staying with a reason", async () => {
    const missing = (await tablesOf(env.DB)).filter((name) => !named(name));
    expect(missing, "tables a move would leave behind: add them to MOVE_TABLES (or STAYING_TABLES)").toEqual([]);
  });

  it("names every table of a data shard (SHARD_1), and moves every data table", async () => {
    const tables = await tablesOf(env.SHARD_1!);
    expect(tables.filter((name) => !named(name))).toEqual([]);
    expect(tables.filter((name) => STAYING_TABLES[name] === "control")).toEqual([]);
  });

  it("names no table twice and no table the schema lacks", async () => {
    const all = await tablesOf(env.DB);
    expect(MOVE_TABLES.length).toBe(moved.size);
    expect([...moved].filter((name) => !all.includes(name))).toEqual([]);
  });

  for (const t of MOVE_TABLES) {
    it(`${t.name}: copies every column, and its key is unique within a project`, async () => {
      const { results: columns } = await env.DB.prepare("SELECT name FROM pragma_table_info(?1)").bind(t.name).all<{ name: string }>();
      expect([...t.columns].sort()).toEqual(columns.map((c) => c.name).sort());
      // A unique index (or the primary key) within the key and project_id: keyset pages miss and repeat no row.
      const { results: indexes } = await env.DB.prepare('SELECT name FROM pragma_index_list(?1) WHERE "unique" = 1').bind(t.name).all<{ name: string }>();
      const uniques = await Promise.all(
        indexes.map(async (index) =>
          (await env.DB.prepare("SELECT name FROM pragma_index_info(?1)").bind(index.name).all<{ name: string }>()).results.map((c) => c.name),
        ),
      );
      const pk = (await env.DB.prepare("SELECT name FROM pragma_table_info(?1) WHERE pk > 0").bind(t.name).all<{ name: string }>()).results.map((c) => c.name);
      const allowed = new Set([...t.key, "project_id"]);
      const covered = [...uniques, pk].some((cols) => cols.length > 0 && cols.every((c) => allowed.has(c)));
      expect(covered, `${t.name}: no unique index within ${[...allowed].join(", ")}`).toBe(true);
    });
  }
});
