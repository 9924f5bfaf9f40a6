import { and, eq } from "drizzle-orm";
import { getDb } from "../db/client";
import { segments } from "../db/schema";

/**
 * Segments: a named condition over a project's contacts (DYNAMIC, members computed when read), or a
 * list of contacts (STATIC, its segment_members rows, added and removed by address).
 */

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

/**
 * Adds the project's contacts with these (lower-case) addresses to the static segment, each once
 * (ON CONFLICT: a member stays as it was). Returns the `contact_id` of each row it added.
 */
export function addSegmentMembers(d1: D1Database, projectId: string, segmentId: string, addresses: readonly string[], now: Date): D1PreparedStatement {
  return d1.prepare(ADD_MEMBERS_SQL).bind(segmentId, projectId, now.getTime(), JSON.stringify(addresses));
}
const ADD_MEMBERS_SQL = `INSERT INTO segment_members (segment_id, contact_id, project_id, created_at)
  SELECT ?1, c.id, ?2, ?3 FROM contacts AS c WHERE c.project_id = ?2 AND c.email IN (SELECT value FROM json_each(?4)) AND true
  ON CONFLICT (segment_id, contact_id) DO NOTHING
  RETURNING contact_id`;

/** The addresses among these (lower-case) that are a contact of the project (read in the batch, after any contact it creates). */
export function existingAddresses(d1: D1Database, projectId: string, addresses: readonly string[]): D1PreparedStatement {
  return d1.prepare(EXISTING_ADDRESSES_SQL).bind(projectId, JSON.stringify(addresses));
}
const EXISTING_ADDRESSES_SQL = "SELECT email FROM contacts WHERE project_id = ?1 AND email IN (SELECT value FROM json_each(?2))";

/** Removes the contacts with these (lower-case) addresses from the static segment; returns the `contact_id` of each row removed. */
export function removeSegmentMembers(d1: D1Database, projectId: string, segmentId: string, addresses: readonly string[]): D1PreparedStatement {
  return d1.prepare(REMOVE_MEMBERS_SQL).bind(segmentId, projectId, JSON.stringify(addresses));
}
const REMOVE_MEMBERS_SQL = `DELETE FROM segment_members WHERE segment_id = ?1 AND contact_id IN
  (SELECT id FROM contacts WHERE project_id = ?2 AND email IN (SELECT value FROM json_each(?3)))
  RETURNING contact_id`;

/** The module's fixed SQL, by name (test/store/statements.test.ts compiles each against the schema). */
export const FIXED_SQL = { ADD_MEMBERS_SQL, EXISTING_ADDRESSES_SQL, REMOVE_MEMBERS_SQL };
