/**
 * The day archives (issue 34, the hot window): records older than EMAIL_HOT_DAYS leave D1 as
 * gzipped NDJSON parts in R2, one object per project, kind, UTC day and part:
 *   archive/<kind>/<projectId>/<yyyy-mm-dd>/<first id of the part>.ndjson.gz
 * Each line is one row as D1 holds it (column names, stored values; events add the contact's
 * address as `contact_email`). A part is committed by the D1 batch that deletes its rows and
 * writes its archive_runs row (migration 0031), so a record is in D1 or in a committed part, never
 * both: an object put before a crash is put again with the same key by the next tick (its key
 * is named by the part's first id), or left unreferenced if those rows went meanwhile.
 */

import { addObjectBytes } from "./usage";

export const ARCHIVE_KINDS = ["emails", "events", "webhook-deliveries"] as const;
export type ArchiveKind = (typeof ARCHIVE_KINDS)[number];

interface KindSql {
  /** The oldest archivable row with ?2 <= id < ?1 (older ones are retention's to delete): its project and id. */
  oldest: string;
  /** One project's archivable rows of one id range [?2, ?3), oldest first, at most ?4. */
  rows: string;
  /** Aborts the batch (quota_checks) when a listed row [id, updated_at] changed or went since it was read. */
  unchanged: string;
  /** Deletes the listed rows ([id, ...]) of project ?2. */
  remove: string;
  /** Every row of a project with ?2 < id < ?3 (an export's hot part), oldest first, at most ?4. */
  page: string;
}

/** A row of each kind may be archived once it is final: mail no longer QUEUED/SENDING, deliveries no longer PENDING. */
function kindSql(table: string, final: string, changed: string, select = "SELECT t.*", join = ""): KindSql {
  return {
    oldest: `SELECT project_id AS projectId, id FROM ${table} AS t WHERE id < ?1 AND id >= ?2${final} ORDER BY id LIMIT 1`,
    rows: `${select} FROM ${table} AS t${join} WHERE t.project_id = ?1 AND t.id >= ?2 AND t.id < ?3${final} ORDER BY t.id LIMIT ?4`,
    unchanged: `INSERT INTO quota_checks (quota, used, quota_limit)
  SELECT 'ARCHIVE_ROWS_CHANGED', (SELECT count(*) FROM json_each(?1)) - (SELECT count(*) FROM json_each(?1) AS j
    JOIN ${table} AS t ON t.id = json_extract(j.value, '$[0]')${changed}), 0`,
    remove: `DELETE FROM ${table} WHERE id IN (SELECT json_extract(value, '$[0]') FROM json_each(?1)) AND project_id = ?2`,
    page: `${select} FROM ${table} AS t${join} WHERE t.project_id = ?1 AND t.id > ?2 AND t.id < ?3 ORDER BY t.id LIMIT ?4`,
  };
}

const KIND_SQL: Record<ArchiveKind, KindSql> = {
  emails: kindSql("emails", " AND t.status NOT IN ('QUEUED', 'SENDING')", " AND t.updated_at IS json_extract(j.value, '$[1]')"),
  // Events keep their contact's address: an export still says who after the contact is deleted.
  events: kindSql("events", "", "", "SELECT t.*, c.email AS contact_email", " LEFT JOIN contacts AS c ON c.id = t.contact_id"),
  "webhook-deliveries": kindSql("webhook_deliveries", " AND t.status != 'PENDING'", " AND t.updated_at IS json_extract(j.value, '$[1]')"),
};

/** The R2 key prefix of a kind's archives (store/objects/prefixes.ts registers them). */
export const archivePrefix = (kind: ArchiveKind) => `archive/${kind}/`;

const DAY_MS = 86_400_000;
/** yyyy-mm-dd of a UTC day number. */
export const dayName = (day: number) => new Date(day * DAY_MS).toISOString().slice(0, 10);

/** The object key of a part: named by its first id, so writing the same rows again writes the same key. */
export const partKey = (kind: ArchiveKind, projectId: string, day: number, firstId: string) =>
  `${archivePrefix(kind)}${projectId}/${dayName(day)}/${firstId}.ndjson.gz`;

/** A row as D1 holds it (column names). */
export type RawRow = Record<string, unknown> & { id: string };

/** The oldest archivable row with fromId <= id < beforeId (any project), or null. */
export async function oldestArchivable(d1: D1Database, kind: ArchiveKind, fromId: string, beforeId: string): Promise<{ projectId: string; id: string } | null> {
  return d1.prepare(KIND_SQL[kind].oldest).bind(beforeId, fromId).first<{ projectId: string; id: string }>();
}

/** Up to `limit` archivable rows of one project with fromId <= id < toId, oldest first. */
export async function archivableRows(d1: D1Database, kind: ArchiveKind, projectId: string, fromId: string, toId: string, limit: number): Promise<RawRow[]> {
  const { results } = await d1.prepare(KIND_SQL[kind].rows).bind(projectId, fromId, toId, limit).all<RawRow>();
  return results;
}

/** A page of a project's rows still in D1 with afterId < id < beforeId, oldest first (archivable or not). */
export async function hotRows(d1: D1Database, kind: ArchiveKind, projectId: string, afterId: string, beforeId: string, limit: number): Promise<RawRow[]> {
  const { results } = await d1.prepare(KIND_SQL[kind].page).bind(projectId, afterId, beforeId, limit).all<RawRow>();
  return results;
}

/** The number of the next part of a project's day (0 for its first). */
export async function nextPart(d1: D1Database, kind: ArchiveKind, projectId: string, day: number): Promise<number> {
  const row = await d1.prepare(NEXT_PART_SQL).bind(projectId, kind, day).first<{ next: number }>();
  return row?.next ?? 0;
}
const NEXT_PART_SQL = `SELECT coalesce(max(part) + 1, 0) AS next FROM archive_runs WHERE project_id = ?1 AND kind = ?2 AND day = ?3`;

/** Gzipped NDJSON of these rows. */
export async function gzipNdjson(rows: readonly unknown[]): Promise<Uint8Array> {
  const text = rows.map((row) => `${JSON.stringify(row)}\n`).join("");
  const stream = new Blob([text]).stream().pipeThrough(new CompressionStream("gzip"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/** Puts a part's object (before its commit: see the module comment). */
export async function putPart(bucket: R2Bucket, key: string, body: Uint8Array, rows: number): Promise<void> {
  await bucket.put(key, body, {
    httpMetadata: { contentType: "application/x-ndjson", contentEncoding: "gzip" },
    customMetadata: { rows: String(rows) },
  });
}

export interface CommittedPart {
  kind: ArchiveKind;
  projectId: string;
  day: number;
  part: number;
  key: string;
  rows: readonly RawRow[];
  bytes: number;
}

/**
 * The statements that commit a part, for one batch: abort if a row changed or went since it was
 * read (the next tick archives it again), record the part, count its bytes in r2_usage, delete the rows.
 */
export function commitPart(d1: D1Database, part: CommittedPart, now: Date): D1PreparedStatement[] {
  const sql = KIND_SQL[part.kind];
  const listed = JSON.stringify(part.rows.map((r) => [r.id, r.updated_at ?? null]));
  const first = part.rows[0].id;
  const last = (part.rows.at(-1) as RawRow).id;
  const statements = [
    d1.prepare(sql.unchanged).bind(listed),
    d1.prepare(INSERT_RUN_SQL).bind(part.projectId, part.kind, part.day, part.part, part.key, first, last, part.rows.length, part.bytes, now.getTime()),
    addObjectBytes(d1, [{ projectId: part.projectId, prefix: archivePrefix(part.kind), bytes: part.bytes }], now),
    d1.prepare(sql.remove).bind(listed, part.projectId),
  ];
  return statements.filter((s): s is D1PreparedStatement => s !== null);
}
const INSERT_RUN_SQL = `INSERT INTO archive_runs (project_id, kind, day, part, r2_key, first_id, last_id, rows, bytes, created_at)
  VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)`;

/** The committed parts of a project's day that may hold `id`, in part order. */
export async function partsHolding(d1: D1Database, kind: ArchiveKind, projectId: string, day: number, id: string): Promise<string[]> {
  const { results } = await d1.prepare(PARTS_HOLDING_SQL).bind(projectId, kind, day, id).all<{ key: string }>();
  return results.map((r) => r.key);
}
const PARTS_HOLDING_SQL = `SELECT r2_key AS key FROM archive_runs
  WHERE project_id = ?1 AND kind = ?2 AND day = ?3 AND first_id <= ?4 AND last_id >= ?4 ORDER BY part`;

export interface PartRef {
  day: number;
  part: number;
  key: string;
  firstId: string;
  rows: number;
}

/** A page of a project's committed parts of days [fromDay, toDay] after (day, part), in (day, part) order. */
export async function partsInRange(
  d1: D1Database,
  kind: ArchiveKind,
  projectId: string,
  range: { fromDay: number; toDay: number },
  after: { day: number; part: number },
  limit: number,
): Promise<PartRef[]> {
  const { results } = await d1.prepare(PARTS_IN_RANGE_SQL).bind(projectId, kind, range.fromDay, range.toDay, after.day, after.part, limit).all<PartRef>();
  return results;
}
const PARTS_IN_RANGE_SQL = `SELECT day, part, r2_key AS key, first_id AS firstId, rows FROM archive_runs
  WHERE project_id = ?1 AND kind = ?2 AND day BETWEEN ?3 AND ?4 AND (day > ?5 OR (day = ?5 AND part > ?6))
  ORDER BY day, part LIMIT ?7`;

/** How many committed parts a project has in days [fromDay, toDay]. */
export async function countParts(d1: D1Database, kind: ArchiveKind, projectId: string, fromDay: number, toDay: number): Promise<number> {
  const row = await d1.prepare(COUNT_PARTS_SQL).bind(projectId, kind, fromDay, toDay).first<{ n: number }>();
  return row?.n ?? 0;
}
const COUNT_PARTS_SQL = `SELECT count(*) AS n FROM archive_runs WHERE project_id = ?1 AND kind = ?2 AND day BETWEEN ?3 AND ?4`;

/**
 * Deletes up to `limit` part rows of `kind` for record days before `beforeDay` (past the kind's
 * retention: their objects expire by the bucket's lifecycle rule at about that age).
 */
export function pruneRuns(d1: D1Database, kind: ArchiveKind, beforeDay: number, limit: number): D1PreparedStatement {
  return d1.prepare(PRUNE_RUNS_SQL).bind(kind, beforeDay, limit);
}
const PRUNE_RUNS_SQL = `DELETE FROM archive_runs WHERE (project_id, kind, day, part) IN
  (SELECT project_id, kind, day, part FROM archive_runs WHERE kind = ?1 AND day < ?2 LIMIT ?3)`;

/** The lines of a part object (decompressed, one JSON row each), as they stream; nothing when it is gone. */
export async function* partLines(bucket: R2Bucket, key: string): AsyncGenerator<string> {
  const object = await bucket.get(key);
  if (!object) return;
  const reader = object.body.pipeThrough(new DecompressionStream("gzip")).pipeThrough(new TextDecoderStream()).getReader();
  let pending = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    pending += value;
    let newline = pending.indexOf("\n");
    while (newline >= 0) {
      const line = pending.slice(0, newline);
      pending = pending.slice(newline + 1);
      if (line) yield line;
      newline = pending.indexOf("\n");
    }
  }
  if (pending) yield pending;
}

/** The module's fixed SQL, by name (test/store/statements.test.ts compiles each against the schema). */
export const FIXED_SQL = {
  ...Object.fromEntries(
    Object.entries(KIND_SQL).flatMap(([kind, sql]) => Object.entries(sql).map(([name, text]) => [`${kind}.${name}`, text] as [string, string])),
  ),
  NEXT_PART_SQL,
  INSERT_RUN_SQL,
  PARTS_HOLDING_SQL,
  PARTS_IN_RANGE_SQL,
  COUNT_PARTS_SQL,
  PRUNE_RUNS_SQL,
};
