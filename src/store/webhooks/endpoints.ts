/**
 * The only writer of webhook_endpoints: an endpoint's URL, subscriptions and
 * sealed signing secrets, and the failure streak that disables it. Every
 * function returns a D1 statement with fixed SQL.
 */

const INSERT_ENDPOINT_SQL = `INSERT INTO webhook_endpoints (id, project_id, url, url_key, events, description, enabled, secret_encrypted, created_at, updated_at)
  SELECT ?1, ?2, ?3, ?10, ?4, ?5, ?6, ?7, ?8, ?8
  WHERE (SELECT count(*) FROM webhook_endpoints WHERE project_id = ?2) < ?9
  RETURNING *`;

/**
 * A new endpoint, unless the project already has `cap` (then it returns no
 * row). `urlKey` is unique per project (a duplicate fails on
 * webhook_endpoints_project_url_uq).
 */
export function insertEndpoint(
  d1: D1Database,
  row: {
    id: string;
    projectId: string;
    url: string;
    urlKey: string;
    events: string[];
    description: string | null;
    enabled: boolean;
    secretEncrypted: string;
    at: Date;
  },
  cap: number,
): D1PreparedStatement {
  return d1
    .prepare(INSERT_ENDPOINT_SQL)
    .bind(
      row.id,
      row.projectId,
      row.url,
      JSON.stringify(row.events),
      row.description,
      row.enabled ? 1 : 0,
      row.secretEncrypted,
      row.at.getTime(),
      cap,
      row.urlKey,
    );
}

/** The project's endpoints' ids and URLs (at most the endpoint cap), for the one-endpoint-per-URL check. */
export function endpointUrls(d1: D1Database, projectId: string): D1PreparedStatement {
  return d1.prepare(ENDPOINT_URLS_SQL).bind(projectId);
}
const ENDPOINT_URLS_SQL = "SELECT id, url, url_key, enabled FROM webhook_endpoints WHERE project_id = ?1";

const UPDATE_ENDPOINT_SQL = `UPDATE webhook_endpoints SET
    url = coalesce(?3, url),
    events = coalesce(?4, events),
    description = CASE WHEN ?5 THEN ?6 ELSE description END,
    enabled = coalesce(?7, enabled),
    -- Enabling again clears the reason and the failure streak.
    disabled_reason = CASE WHEN ?7 = 1 THEN NULL ELSE disabled_reason END,
    failing_since = CASE WHEN ?7 = 1 THEN NULL ELSE failing_since END,
    url_key = coalesce(?9, url_key),
    updated_at = ?8
  WHERE id = ?1 AND project_id = ?2
  RETURNING *`;

/** Changes the fields given; `urlKey` with a new URL (or to give a keyless duplicate its key when enabled). */
export function updateEndpoint(
  d1: D1Database,
  projectId: string,
  id: string,
  set: { url?: string; urlKey?: string; events?: string[]; description?: string | null; enabled?: boolean },
  at: Date,
): D1PreparedStatement {
  return d1
    .prepare(UPDATE_ENDPOINT_SQL)
    .bind(
      id,
      projectId,
      set.url ?? null,
      set.events ? JSON.stringify(set.events) : null,
      set.description !== undefined ? 1 : 0,
      set.description ?? null,
      set.enabled === undefined ? null : set.enabled ? 1 : 0,
      at.getTime(),
      set.urlKey ?? null,
    );
}

/** Deleting an endpoint keeps its deliveries until retention prunes them (nothing lists them any more). */
export function deleteEndpoint(d1: D1Database, projectId: string, id: string): D1PreparedStatement {
  return d1.prepare(DELETE_ENDPOINT_SQL).bind(id, projectId);
}
const DELETE_ENDPOINT_SQL = "DELETE FROM webhook_endpoints WHERE id = ?1 AND project_id = ?2 RETURNING id";

const ROTATE_SQL = `UPDATE webhook_endpoints SET
    previous_secret_encrypted = ?3, previous_secret_expires_at = ?4, secret_encrypted = ?5, updated_at = ?6
  WHERE id = ?1 AND project_id = ?2
  RETURNING *`;

/** A new secret; the previous one (sealed as it was, moved by the caller) keeps signing until `previousExpiresAt`. */
export function rotateEndpointSecret(
  d1: D1Database,
  projectId: string,
  id: string,
  secrets: { currentEncrypted: string; previousEncrypted: string; previousExpiresAt: Date },
  at: Date,
): D1PreparedStatement {
  return d1.prepare(ROTATE_SQL).bind(id, projectId, secrets.previousEncrypted, secrets.previousExpiresAt.getTime(), secrets.currentEncrypted, at.getTime());
}

/** A success ends the endpoints' failure streak. */
export function endpointsSucceeded(d1: D1Database, webhookIds: string[]): D1PreparedStatement {
  return d1.prepare(SUCCEEDED_SQL).bind(JSON.stringify(webhookIds));
}
const SUCCEEDED_SQL = "UPDATE webhook_endpoints SET failing_since = NULL WHERE id IN (SELECT value FROM json_each(?1)) AND failing_since IS NOT NULL";

/**
 * Failures start a streak (or continue it); an endpoint whose streak began at
 * or before `disableBefore` is disabled with `reason`.
 */
export function endpointsFailed(d1: D1Database, webhookIds: string[], at: Date, disableBefore: Date, reason: string): D1PreparedStatement[] {
  const ids = JSON.stringify(webhookIds);
  return [d1.prepare(FAILING_SQL).bind(ids, at.getTime()), d1.prepare(DISABLE_FAILING_SQL).bind(ids, disableBefore.getTime(), reason, at.getTime())];
}
const FAILING_SQL = "UPDATE webhook_endpoints SET failing_since = ?2 WHERE id IN (SELECT value FROM json_each(?1)) AND failing_since IS NULL";
const DISABLE_FAILING_SQL = `UPDATE webhook_endpoints SET enabled = 0, disabled_reason = ?3, updated_at = ?4
  WHERE id IN (SELECT value FROM json_each(?1)) AND enabled = 1 AND failing_since <= ?2`;

/** The module's fixed SQL, by name (test/store/statements.test.ts compiles each against the schema). */
export const FIXED_SQL = {
  INSERT_ENDPOINT_SQL,
  ENDPOINT_URLS_SQL,
  UPDATE_ENDPOINT_SQL,
  DELETE_ENDPOINT_SQL,
  ROTATE_SQL,
  SUCCEEDED_SQL,
  FAILING_SQL,
  DISABLE_FAILING_SQL,
};
