import { fromRow } from "../db/client";
import { domains, type Domain, type DomainDnsRecord } from "../db/schema";

/**
 * The writes of sending domains that must hold under concurrency: the insert
 * that keeps the project's domain count under its cap (the count is a
 * condition of the INSERT itself, so two concurrent adds cannot both pass),
 * and the record of a name given up without being verified (squatting).
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

/** The module's fixed SQL, by name (test/store/statements.test.ts compiles each against the schema). */
export const FIXED_SQL = { INSERT_DOMAIN_WITHIN_CAP_SQL, RECORD_RELEASE_SQL, RECENT_RELEASE_SQL, PRUNE_RELEASES_SQL };
