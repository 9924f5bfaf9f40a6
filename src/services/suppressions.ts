import type { Database } from "../db/client";
import { raisedMessage } from "../lib/errors";
import { suppressions } from "../db/schema";

export type SuppressionReason = "BOUNCE" | "COMPLAINT";

/**
 * Which of `emails` are suppressed in the project (permanent bounce or
 * complaint), keyed by the lower-cased address.
 */
export async function findSuppressed(db: Database, projectId: string, emails: string[]): Promise<Map<string, SuppressionReason>> {
  const unique = [...new Set(emails.map((e) => e.trim().toLowerCase()).filter(Boolean))];
  const { results } = await suppressionsOf(db.$client, projectId, unique).all<{ email: string; reason: SuppressionReason }>();
  return new Map(results.map((row) => [row.email, row.reason]));
}

/** The project's suppressions among these addresses (lower-case), as a statement not yet run: the list is one JSON parameter, whatever its length. */
export function suppressionsOf(d1: D1Database, projectId: string, addresses: string[]): D1PreparedStatement {
  return d1.prepare(SUPPRESSIONS_OF_SQL).bind(projectId, JSON.stringify(addresses));
}
// Fixed SQL (the list as one JSON parameter): /v1/send reads it on every request.
const SUPPRESSIONS_OF_SQL = "SELECT email, reason FROM suppressions WHERE project_id = ?1 AND email IN (SELECT value FROM json_each(?2))";

/**
 * A write batch's first statement when it did not read the suppressions
 * first: aborts the whole batch (nothing written) when any of these addresses
 * is suppressed, through the quota_checks guard (migration 0014). Tell the
 * abort apart with isSuppressedAbort.
 */
export function abortIfSuppressed(d1: D1Database, projectId: string, addresses: string[]): D1PreparedStatement {
  return d1.prepare(ABORT_IF_SUPPRESSED_SQL).bind(projectId, JSON.stringify(addresses));
}
// Counts what SUPPRESSIONS_OF_SQL reads, with the same parameters.
const ABORT_IF_SUPPRESSED_SQL = `INSERT INTO quota_checks (quota, used, quota_limit) SELECT 'SUPPRESSED_RECIPIENTS', count(*), 0 FROM (${SUPPRESSIONS_OF_SQL})`;

/** Whether a batch was aborted by its abortIfSuppressed statement. */
export const isSuppressedAbort = (err: unknown): boolean => raisedMessage(err, /SEND_HAS_SUPPRESSED_RECIPIENTS/) !== null;

/** Adds an address to the project's suppression list; the first reason recorded is kept. */
export function buildSuppression(db: Database, projectId: string, email: string, reason: SuppressionReason, detail?: string | null) {
  return db
    .insert(suppressions)
    .values({ projectId, email: email.trim().toLowerCase(), reason, detail: detail ?? null, createdAt: new Date() })
    .onConflictDoNothing({ target: [suppressions.projectId, suppressions.email] });
}
