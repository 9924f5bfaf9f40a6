import { getTableColumns } from "drizzle-orm";
import type { SQLiteTable } from "drizzle-orm/sqlite-core";
import { type Email, emails } from "../../db/schema";
import { type ArchiveKind, partLines, partsHolding, type RawRow } from "../../store/objects/archive";
import { dayOfId } from "./run";

/**
 * An archived row back as the table's model (as drizzle reads it: Dates, booleans, parsed JSON);
 * a column the row lacks (added after it was archived) is null.
 */
export function modelOf<T extends SQLiteTable>(table: T, raw: RawRow): T["$inferSelect"] {
  const model: Record<string, unknown> = {};
  for (const [key, column] of Object.entries(getTableColumns(table))) {
    const value = raw[column.name];
    model[key] = value === null || value === undefined ? null : column.mapFromDriverValue(value);
  }
  return model as T["$inferSelect"];
}

/** One archived row by id: its UUIDv7 gives the day, the day's committed parts whose id range holds it are read. */
export async function readArchivedRow(d1: D1Database, bucket: R2Bucket, kind: ArchiveKind, projectId: string, id: string): Promise<RawRow | null> {
  const day = dayOfId(id);
  if (day === null) return null;
  const quoted = JSON.stringify(id);
  for (const key of await partsHolding(d1, kind, projectId, day, id)) {
    for await (const line of partLines(bucket, key)) {
      if (!line.includes(quoted)) continue;
      const row = JSON.parse(line) as RawRow;
      if (row.id === id) return row;
    }
  }
  return null;
}

/** An archived email of the project, or null (never archived, or past its retention). */
export async function readArchivedEmail(d1: D1Database, bucket: R2Bucket, projectId: string, id: string): Promise<Email | null> {
  const row = await readArchivedRow(d1, bucket, "emails", projectId, id);
  return row && row.project_id === projectId ? modelOf(emails, row) : null;
}
