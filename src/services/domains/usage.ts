/**
 * What keeps a domain from being deleted: things that send from it
 * (templates, which workflow steps send; SCHEDULED and SENDING campaigns).
 * A DRAFT campaign does not: sending it later answers DOMAIN_NOT_VERIFIED.
 */
import { and, eq, inArray, sql } from "drizzle-orm";
import type { Database } from "../../db/client";
import { campaigns, templates } from "../../db/schema";
import { likeContains } from "../../lib/sql";

/** A check returns a human-readable description of the first user found, or null. */
export type DomainUsageCheck = (db: Database, projectId: string, domain: string) => Promise<string | null>;

/** SQL condition "this address column is on `domain`" (case-insensitive, ends with @domain). */
export const addressOnDomain = (column: typeof templates.from | typeof campaigns.from, domain: string) => {
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

const campaignUsage: DomainUsageCheck = async (db, projectId, domain) => {
  const row = await db
    .select({ id: campaigns.id, name: campaigns.name, status: campaigns.status })
    .from(campaigns)
    .where(and(eq(campaigns.projectId, projectId), inArray(campaigns.status, ["SCHEDULED", "SENDING"]), addressOnDomain(campaigns.from, domain)))
    .limit(1)
    .get();
  return row ? `${row.status.toLowerCase()} campaign "${row.name}" (${row.id})` : null;
};

export const DOMAIN_USAGE_CHECKS: DomainUsageCheck[] = [templateUsage, campaignUsage];

export async function findDomainUsage(db: Database, projectId: string, domain: string): Promise<string | null> {
  for (const check of DOMAIN_USAGE_CHECKS) {
    const found = await check(db, projectId, domain);
    if (found) return found;
  }
  return null;
}
