import type { BatchItem } from "drizzle-orm/batch";
import { getTableColumns, type AnyColumn, type Table } from "drizzle-orm";
import { drizzle } from "drizzle-orm/d1";
import * as schema from "./schema";

const build = (d1: D1Database) => drizzle(d1, { schema });
export type Database = ReturnType<typeof build>;

// drizzle() walks the whole schema for its relational queries on every call,
// so each D1 binding gets one instance, built on first use in the isolate.
const instances = new WeakMap<D1Database, Database>();

export function getDb(d1: D1Database): Database {
  let db = instances.get(d1);
  if (!db) {
    db = build(d1);
    instances.set(d1, db);
  }
  return db;
}

/** db.batch() for a list built at run time (one atomic transaction); returns each statement's result. */
export async function runBatch(db: Database, items: BatchItem<"sqlite">[]): Promise<unknown[]> {
  if (items.length === 0) return [];
  return db.batch(items as [BatchItem<"sqlite">, ...BatchItem<"sqlite">[]]);
}

/**
 * One atomic D1 batch of query-builder statements and plain prepared
 * statements (fixed SQL bound per use), in order; returns each statement's
 * rows as D1 gives them (column names, driver values: no mapping).
 */
export async function runStatements(db: Database, items: (BatchItem<"sqlite"> | D1PreparedStatement)[]): Promise<Record<string, unknown>[][]> {
  if (items.length === 0) return [];
  const d1 = db.$client;
  const statements = items.map((item) => {
    if (!("toSQL" in item)) return item as D1PreparedStatement;
    const query = (item as unknown as { toSQL(): { sql: string; params: unknown[] } }).toSQL();
    return d1.prepare(query.sql).bind(...query.params);
  });
  const results = await d1.batch<Record<string, unknown>>(statements);
  return results.map((result) => result.results ?? []);
}

const columnsOfTable = new WeakMap<Table, [key: string, column: AnyColumn][]>();

/**
 * A row as D1 returns it (SQL column names, driver values), mapped to the
 * table's record type the way drizzle maps its own results (timestamps to
 * Date, booleans, JSON columns): for rows read with fixed SQL (`SELECT *`).
 */
export function fromRow<T extends Table>(table: T, row: Record<string, unknown>): T["$inferSelect"] {
  let columns = columnsOfTable.get(table);
  if (!columns) {
    columns = Object.entries(getTableColumns(table)) as [string, AnyColumn][];
    columnsOfTable.set(table, columns);
  }
  const record: Record<string, unknown> = {};
  for (const [key, column] of columns) {
    const value = row[column.name];
    record[key] = value === null || value === undefined ? null : column.mapFromDriverValue(value);
  }
  return record as T["$inferSelect"];
}
