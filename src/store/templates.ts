import { and, eq, not, sql } from "drizzle-orm";
import { getDb } from "../db/client";
import { projects, templates } from "../db/schema";

/** Templates. Their stored bytes are counted by the triggers of migration 0019. */

export type TemplateChange = Partial<Pick<typeof templates.$inferInsert, "name" | "subject" | "body" | "type" | "from" | "fromName" | "replyTo" | "updatedAt">>;

/** The insert, returning the row (for a batch behind the quota guards). */
export function insertTemplate(d1: D1Database, row: typeof templates.$inferInsert) {
  return getDb(d1).insert(templates).values(row).returning();
}

/** Applies the change to the project's template, returning the row (none when there is no such template). */
export function updateTemplate(d1: D1Database, projectId: string, id: string, set: TemplateChange) {
  return getDb(d1)
    .update(templates)
    .set(set)
    .where(and(eq(templates.id, id), eq(templates.projectId, projectId)))
    .returning();
}

/**
 * Deletes the project's template unless it is the project's double opt-in
 * confirmation while that is on; returns the deleted id, none otherwise.
 */
export function deleteTemplateUnlessConfirmation(d1: D1Database, projectId: string, id: string) {
  const inUse = sql`EXISTS (SELECT 1 FROM ${projects} WHERE ${projects.id} = ${projectId} AND ${projects.doubleOptIn} = 1 AND ${projects.doubleOptInTemplateId} = ${id})`;
  return getDb(d1)
    .delete(templates)
    .where(and(eq(templates.id, id), eq(templates.projectId, projectId), not(inUse)))
    .returning({ id: templates.id });
}

/** The module's fixed SQL, by name (none: drizzle builds its statements). */
export const FIXED_SQL = {};
