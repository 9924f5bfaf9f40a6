import { and, eq } from "drizzle-orm";
import { getDb } from "../db/client";
import { segments } from "../db/schema";

/** Segments: a named condition over a project's contacts (members are computed when read). */

export type SegmentChange = Partial<Pick<typeof segments.$inferInsert, "name" | "description" | "condition" | "updatedAt">>;

/** The insert, returning the row (for a batch behind the QUOTA_SEGMENTS guard). */
export function insertSegment(d1: D1Database, row: typeof segments.$inferInsert) {
  return getDb(d1).insert(segments).values(row).returning();
}

/** Applies the change to the project's segment; returns the row, none when there is no such segment. */
export function updateSegment(d1: D1Database, projectId: string, id: string, set: SegmentChange) {
  return getDb(d1)
    .update(segments)
    .set(set)
    .where(and(eq(segments.id, id), eq(segments.projectId, projectId)))
    .returning();
}

export function deleteSegment(d1: D1Database, projectId: string, id: string) {
  return getDb(d1)
    .delete(segments)
    .where(and(eq(segments.id, id), eq(segments.projectId, projectId)));
}

/** The module's fixed SQL, by name (none: drizzle builds its statements). */
export const FIXED_SQL = {};
