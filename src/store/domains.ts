import { and, asc, eq, inArray, isNull, lte } from "drizzle-orm";
import { fromRow, getDb } from "../db/client";
import { domains, type Domain, type DomainDnsRecord } from "../db/schema";

/**
 * The writes of sending domains (domains, domain_releases). Those that must
 * hold under concurrency are fixed SQL: the insert that keeps the project's
 * domain count under its cap (the count is a condition of the INSERT itself,
 * so two concurrent adds cannot both pass), and the record of a name given up
 * without being verified (squatting). The DNS checks' writes and the deletes
 * are built by drizzle.
 */

export interface NewDomain {
  id: string;
  projectId: string;
  name: string;
  dkimSelector: string;
  dkimPublicKey: string;
  dkimPrivateKeyEncrypted: string;
  records: DomainDnsRecord[];
  nextCheckAt: Date;
  now: Date;
}

/** Inserts the domain only while the project has fewer than `cap` domains and nobody holds the name; returns its row, none otherwise. */
export function insertDomainWithinCap(d1: D1Database, row: NewDomain, cap: number): D1PreparedStatement {
  return d1
    .prepare(INSERT_DOMAIN_WITHIN_CAP_SQL)
    .bind(
      row.id,
      row.projectId,
      row.name,
      row.dkimSelector,
      row.dkimPublicKey,
      row.dkimPrivateKeyEncrypted,
      JSON.stringify(row.records),
      row.nextCheckAt.getTime(),
      row.now.getTime(),
      cap,
    );
}
const INSERT_DOMAIN_WITHIN_CAP_SQL = `INSERT INTO domains (id, project_id, name, status, dkim_selector, dkim_public_key, dkim_private_key_encrypted, records,
    check_attempts, next_check_at, created_at, updated_at)
  SELECT ?1, ?2, ?3, 'PENDING', ?4, ?5, ?6, ?7, 0, ?8, ?9, ?9
  WHERE (SELECT count(*) FROM domains WHERE project_id = ?2) < ?10
  ON CONFLICT (name) DO NOTHING
  RETURNING *`;

/** The domain row an insertDomainWithinCap returned, as drizzle maps it. */
export const domainFromRow = (row: Record<string, unknown>): Domain => fromRow(domains, row);

/**
 * Records that the project gave up a name it never verified (`claimedAt`: when
 * its hold began). A release within `cooldownStart` (the cooldown) keeps the
 * earlier claim time, so deleting and re-adding never restarts the clock.
 */
export function recordDomainRelease(
  d1: D1Database,
  release: { name: string; projectId: string; claimedAt: Date; releasedAt: Date },
  cooldownStart: Date,
): D1PreparedStatement {
  return d1
    .prepare(RECORD_RELEASE_SQL)
    .bind(release.name, release.projectId, release.claimedAt.getTime(), release.releasedAt.getTime(), cooldownStart.getTime());
}
const RECORD_RELEASE_SQL = `INSERT INTO domain_releases (name, project_id, claimed_at, released_at) VALUES (?1, ?2, ?3, ?4)
  ON CONFLICT (name, project_id) DO UPDATE SET
    claimed_at = CASE WHEN domain_releases.released_at > ?5 THEN min(domain_releases.claimed_at, excluded.claimed_at) ELSE excluded.claimed_at END,
    released_at = excluded.released_at`;

/** The project's release of this name since `cooldownStart`, if any: `{claimed_at, released_at}` in ms. */
export function recentDomainRelease(d1: D1Database, projectId: string, name: string, cooldownStart: Date): D1PreparedStatement {
  return d1.prepare(RECENT_RELEASE_SQL).bind(name, projectId, cooldownStart.getTime());
}
const RECENT_RELEASE_SQL = "SELECT claimed_at, released_at FROM domain_releases WHERE name = ?1 AND project_id = ?2 AND released_at > ?3";

/** Drops up to 100 releases older than `cooldownStart` (the cron). */
export function pruneDomainReleases(d1: D1Database, cooldownStart: Date): D1PreparedStatement {
  return d1.prepare(PRUNE_RELEASES_SQL).bind(cooldownStart.getTime());
}
const PRUNE_RELEASES_SQL = "DELETE FROM domain_releases WHERE rowid IN (SELECT rowid FROM domain_releases WHERE released_at <= ?1 LIMIT 100)";

/** The outcome of a DNS check (status, records, schedule), returning the row. */
export function saveDomainCheck(d1: D1Database, id: string, update: Partial<typeof domains.$inferInsert>) {
  return getDb(d1).update(domains).set(update).where(eq(domains.id, id)).returning();
}

/**
 * Claims up to `limit` domains whose check is due (PENDING, and VERIFIED ones
 * for their periodic re-check) by moving their next check to `leaseUntil`, in
 * one conditional UPDATE, so overlapping cron runs never check a domain twice.
 * Returns the claimed rows.
 */
export function claimDueDomainChecks(d1: D1Database, now: Date, leaseUntil: Date, limit: number) {
  const db = getDb(d1);
  const due = db
    .select({ id: domains.id })
    .from(domains)
    .where(and(inArray(domains.status, ["PENDING", "VERIFIED"]), lte(domains.nextCheckAt, now)))
    .orderBy(asc(domains.nextCheckAt))
    .limit(limit);
  return db
    .update(domains)
    .set({ nextCheckAt: leaseUntil })
    .where(and(inArray(domains.id, due), lte(domains.nextCheckAt, now)))
    .returning();
}

/** The project's domain (the owner's delete). */
export function deleteDomain(d1: D1Database, projectId: string, id: string) {
  return getDb(d1)
    .delete(domains)
    .where(and(eq(domains.id, id), eq(domains.projectId, projectId)));
}

/** The domain, only while it was never verified (the cron's release; a domain just inserted whose SES registration failed). */
export function deleteUnverifiedDomain(d1: D1Database, id: string) {
  return getDb(d1)
    .delete(domains)
    .where(and(eq(domains.id, id), isNull(domains.verifiedAt)));
}

/**
 * The local dev project's domain (`npm run project -- ensure-dev`): inserted,
 * or, when an older dev project holds the name, moved to this one with `values`.
 */
export function upsertSeededDomain(
  d1: D1Database,
  row: { id: string; name: string; createdAt: Date },
  values: Omit<typeof domains.$inferInsert, "id" | "name" | "createdAt">,
) {
  return getDb(d1)
    .insert(domains)
    .values({ ...row, ...values })
    .onConflictDoUpdate({ target: domains.name, set: values });
}

/** A domain's tracking settings (PATCH /domains/{id}); returns the row, none when the project has no such domain. */
export function updateDomainTracking(d1: D1Database, projectId: string, id: string, set: Partial<typeof domains.$inferInsert>) {
  return getDb(d1)
    .update(domains)
    .set(set)
    .where(and(eq(domains.id, id), eq(domains.projectId, projectId)))
    .returning();
}

/** The module's fixed SQL, by name (test/store/statements.test.ts compiles each against the schema). */
export const FIXED_SQL = { INSERT_DOMAIN_WITHIN_CAP_SQL, RECORD_RELEASE_SQL, RECENT_RELEASE_SQL, PRUNE_RELEASES_SQL };
