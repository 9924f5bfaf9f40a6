import type { BatchItem } from "drizzle-orm/batch";
import { drizzle } from "drizzle-orm/d1";
import * as schema from "./schema";

export type Database = ReturnType<typeof getDb>;

export function getDb(d1: D1Database) {
  return drizzle(d1, { schema });
}

/** db.batch() for a list built at run time (one atomic transaction); returns each statement's result. */
export async function runBatch(db: Database, items: BatchItem<"sqlite">[]): Promise<unknown[]> {
  if (items.length === 0) return [];
  return db.batch(items as [BatchItem<"sqlite">, ...BatchItem<"sqlite">[]]);
}
