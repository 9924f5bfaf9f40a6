import type { Database } from "../db/client";
import { suppressionsOf } from "../store/guards";
import { insertSuppression, type SuppressionReason } from "../store/suppressions";

export type { SuppressionReason };

/**
 * Which of `emails` are suppressed in the project (permanent bounce or
 * complaint), keyed by the lower-cased address.
 */
export async function findSuppressed(db: Database, projectId: string, emails: string[]): Promise<Map<string, SuppressionReason>> {
  const unique = [...new Set(emails.map((e) => e.trim().toLowerCase()).filter(Boolean))];
  const { results } = await suppressionsOf(db.$client, projectId, unique).all<{ email: string; reason: SuppressionReason }>();
  return new Map(results.map((row) => [row.email, row.reason]));
}

/** Adds an address to the project's suppression list; the first reason recorded is kept. */
export function buildSuppression(db: Database, projectId: string, email: string, reason: SuppressionReason, detail?: string | null) {
  return insertSuppression(db.$client, projectId, email, reason, detail ?? null);
}
