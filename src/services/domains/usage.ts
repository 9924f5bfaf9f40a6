/**
 * What keeps a domain from being deleted: things that send from it.
 * Extension point: when campaigns exist, add a check here for unsent
 * campaigns (DRAFT, SCHEDULED, SENDING) whose `from` is on the domain.
 */
import { and, eq, sql } from "drizzle-orm";
import type { Database } from "../../db/client";
import { templates } from "../../db/schema";
import { likeContains } from "../../lib/sql";

/** A check returns a human-readable description of the first user found, or null. */
export type DomainUsageCheck = (db: Database, projectId: string, domain: string) => Promise<string | null>;

/** SQL condition "this address column is on `domain`" (case-insensitive, ends with @domain). */
export const addressOnDomain = (column: typeof templates.from, domain: string) => {
  const pattern = likeContains(`@${domain}`).slice(0, -1);
  return sql`(lower(${column}) LIKE ${pattern} ESCAPE '\\' OR lower(${column}) LIKE ${`${pattern}>`} ESCAPE '\\')`;
};

const templateUsage: DomainUsageCheck = async (db, projectId, domain) => {
  const row = await db
    .select({ id: templates.id, name: templates.name })
    .from(templates)
    .where(and(eq(templates.projectId, projectId), addressOnDomain(templates.from, domain)))
    .limit(1)
    .get();
  return row ? `template "${row.name}" (${row.id})` : null;
};

export const DOMAIN_USAGE_CHECKS: DomainUsageCheck[] = [templateUsage];

export async function findDomainUsage(db: Database, projectId: string, domain: string): Promise<string | null> {
  for (const check of DOMAIN_USAGE_CHECKS) {
    const found = await check(db, projectId, domain);
    if (found) return found;
  }
  return null;
}
