import { getDb } from "../db/client";
import { suppressions } from "../db/schema";

/** The project's suppression list (permanent bounces and complaints), keyed by the lower-cased address. */

export type SuppressionReason = "BOUNCE" | "COMPLAINT";

/** Adds an address to the list; the first reason recorded is kept (for the caller's batch). */
export function insertSuppression(d1: D1Database, projectId: string, email: string, reason: SuppressionReason, detail: string | null, now = new Date()) {
  return getDb(d1)
    .insert(suppressions)
    .values({ projectId, email: email.trim().toLowerCase(), reason, detail, createdAt: now })
    .onConflictDoNothing({ target: [suppressions.projectId, suppressions.email] });
}

/** The module's fixed SQL, by name (none here: suppressionsOf and the send's guard are in guards.ts). */
export const FIXED_SQL = {};
