/**
 * What each project keeps in R2, per prefix and UTC day of writing (table r2_usage,
 * migration 0027; triggers keep projects.r2_stored_bytes). A writer of objects adds the
 * bytes it wrote in the same D1 batch as the rows that refer to them; the expiry job
 * drops the days whose objects expired.
 */

const DAY_MS = 86_400_000;

export interface ObjectBytes {
  projectId: string;
  /** An ObjectPrefix's prefix (./prefixes.ts). */
  prefix: string;
  /** Bytes written (negative for bytes deleted before they expire). */
  bytes: number;
}

/** The UTC day number of a moment, as r2_usage counts it. */
export const usageDay = (at: Date | number) => Math.floor((typeof at === "number" ? at : at.getTime()) / DAY_MS);

const ADD_SQL = (rows: number) =>
  `INSERT INTO r2_usage (project_id, prefix, day, bytes) VALUES ${Array.from({ length: rows }, () => "(?, ?, ?, ?)").join(", ")}
  ON CONFLICT (project_id, prefix, day) DO UPDATE SET bytes = bytes + excluded.bytes`;

/** One statement adding every entry's bytes to its project's day (entries of one project and prefix merged); null when there is nothing to add. */
export function addObjectBytes(d1: D1Database, entries: ObjectBytes[], at: Date | number): D1PreparedStatement | null {
  const merged = new Map<string, ObjectBytes>();
  for (const entry of entries) {
    const key = `${entry.projectId}\n${entry.prefix}`;
    const seen = merged.get(key);
    if (seen) seen.bytes += entry.bytes;
    else merged.set(key, { ...entry });
  }
  const rows = [...merged.values()].filter((e) => e.bytes !== 0);
  if (rows.length === 0) return null;
  const day = usageDay(at);
  // 25 rows × 4 parameters stays under D1's 100 bound parameters.
  if (rows.length > 25) throw new RangeError("addObjectBytes: at most 25 projects per statement");
  return d1.prepare(ADD_SQL(rows.length)).bind(...rows.flatMap((e) => [e.projectId, e.prefix, day, e.bytes]));
}

/** Drops up to `limit` days of `prefix` written before `beforeDay` (their objects expired); the triggers take the bytes off. */
export function expireObjectBytes(d1: D1Database, prefix: string, beforeDay: number, limit: number): D1PreparedStatement {
  return d1.prepare(EXPIRE_SQL).bind(prefix, beforeDay, limit);
}
const EXPIRE_SQL = `DELETE FROM r2_usage WHERE (project_id, prefix, day) IN
  (SELECT project_id, prefix, day FROM r2_usage WHERE prefix = ?1 AND day < ?2 LIMIT ?3)`;

/** The fixed SQL of this module (test/store/statements.test.ts compiles it). */
export const FIXED_SQL = { ADD_ONE: ADD_SQL(1), ADD_MANY: ADD_SQL(25), EXPIRE: EXPIRE_SQL };
