/**
 * A move's marks in the control database's project_shards (the shard map src/db/shards.ts reads):
 * moving_to while a project's rows are copied (services/shards/moving.ts holds its writes,
 * messages and cron jobs back), the switch, and the end. The copy's SQL is store/project-move.ts.
 */

/** The project's registry row and its route (shard 0 without a project_shards row); no row: no such project. */
export function readRoute(control: D1Database, projectId: string): D1PreparedStatement {
  return control.prepare(READ_ROUTE_SQL).bind(projectId);
}
const READ_ROUTE_SQL = `SELECT p.id, coalesce(s.shard, 0) AS shard, s.moving_to AS movingTo
  FROM projects p LEFT JOIN project_shards s ON s.project_id = p.id WHERE p.id = ?1`;

/** Marks the project moving from `from` to `to` (writes refused, its messages wait, the cron leaves both shards); nothing when it is elsewhere or moving to another shard. */
export function markMoving(control: D1Database, projectId: string, from: number, to: number): D1PreparedStatement {
  return control.prepare(MARK_MOVING_SQL).bind(projectId, from, to);
}
const MARK_MOVING_SQL = `INSERT INTO project_shards (project_id, shard, moving_to) VALUES (?1, ?2, ?3)
  ON CONFLICT (project_id) DO UPDATE SET moving_to = ?3 WHERE shard = ?2 AND (moving_to IS NULL OR moving_to = ?3)
  RETURNING shard`;

/** Points the project at `to` (still moving: writes stay refused until finishMove). */
export function switchShard(control: D1Database, projectId: string, to: number, now: number): D1PreparedStatement {
  return control.prepare(SWITCH_SQL).bind(projectId, to, now);
}
const SWITCH_SQL = "UPDATE project_shards SET shard = ?2, moved_at = ?3 WHERE project_id = ?1 AND moving_to = ?2 RETURNING shard";

/** Ends the move (done, or given up before the switch): the project takes writes again on its shard. */
export function clearMoving(control: D1Database, projectId: string): D1PreparedStatement {
  return control.prepare(CLEAR_MOVING_SQL).bind(projectId);
}
const CLEAR_MOVING_SQL = "UPDATE project_shards SET moving_to = NULL WHERE project_id = ?1";

/** The shards some move is copying from or to (the cron leaves their project-scoped jobs until it ends). */
export function movingShards(control: D1Database): D1PreparedStatement {
  return control.prepare(MOVING_SHARDS_SQL);
}
const MOVING_SHARDS_SQL = "SELECT project_id AS projectId, shard, moving_to AS movingTo FROM project_shards WHERE moving_to IS NOT NULL";

/** The module's fixed SQL, by name. */
export const FIXED_SQL = { READ_ROUTE_SQL, MARK_MOVING_SQL, SWITCH_SQL, CLEAR_MOVING_SQL, MOVING_SHARDS_SQL };
