import { getTableConfig, type SQLiteTable } from "drizzle-orm/sqlite-core";
import * as schema from "../db/schema";
import { inboundMessages } from "../db/inbound-schema";

/**
 * Moving a project between data shards (services/shards/move.ts): every table a shard holds,
 * named here, each with how its rows belong to a project and its key order. The SQL is
 * built from this list once, at load, so each table's statements are fixed text
 * (FIXED_SQL); test/shards/move-list.test.ts fails when the schema has a table this list
 * does not name. Rows cross databases as one JSON parameter per statement (json_each),
 * so a page of any width stays under D1's 100 bound parameters.
 */

/** How a moved table's rows are copied: `rows` keeps them as they are (INSERT OR IGNORE, so a repeated page adds nothing); `counter` rows are set from the source once every other table is copied (the target's triggers added to them meanwhile); `outbox` rows keep their integer id unless the target uses it. */
export type MoveKind = "rows" | "counter" | "outbox";

export interface MoveTable {
  readonly name: string;
  readonly kind: MoveKind;
  /** The SQL columns, in schema order (from src/db/schema.ts; the list test checks them against the migrated table). */
  readonly columns: readonly string[];
  /** Key columns the pages walk in order (unique within the project). */
  readonly key: readonly string[];
  /** The project's rows: a condition on the table's columns with ?1 the project id. */
  readonly scope: string;
  /** Rows read per page (large rows: fewer). */
  readonly pageRows: number;
}

const table = (t: SQLiteTable, kind: MoveKind, key: string[], scope = "project_id = ?1", pageRows = 200): MoveTable => {
  const config = getTableConfig(t);
  return { name: config.name, kind, columns: config.columns.map((c) => c.name), key, scope, pageRows };
};

/**
 * Every project-scoped table, in copy order: parents before children (the shards enforce
 * foreign keys), and contacts and events before workflows and executions, so the
 * workflow-trigger triggers find no enabled workflow on the target and add no outbox rows
 * while history is copied. Deletion from the source goes in the reverse order.
 */
export const MOVE_TABLES: readonly MoveTable[] = [
  table(schema.projects, "rows", ["id"], "id = ?1", 1),
  table(schema.contacts, "rows", ["id"]),
  table(schema.templates, "rows", ["id"]),
  table(schema.segments, "rows", ["id"]),
  table(schema.segmentMembers, "rows", ["segment_id", "contact_id"]),
  table(schema.topics, "rows", ["id"]),
  table(schema.contactTopics, "rows", ["contact_id", "topic_id"]),
  table(schema.campaigns, "rows", ["id"]),
  table(schema.sendHeaders, "rows", ["send_id"]),
  table(schema.emails, "rows", ["id"], "project_id = ?1", 100),
  table(schema.emailAttachments, "rows", ["id"], "EXISTS (SELECT 1 FROM emails e WHERE e.send_id = email_attachments.send_id AND e.project_id = ?1)"),
  table(schema.capturedMessages, "rows", ["id"]),
  // Attachments written before they went to R2 (migration 0030): a blob belongs to the attachment that names it; chunks are up to 1 MB each.
  table(
    schema.blobChunks,
    "rows",
    ["blob_id", "seq"],
    "EXISTS (SELECT 1 FROM email_attachments a JOIN emails e ON e.send_id = a.send_id WHERE a.blob_id = blob_chunks.blob_id AND e.project_id = ?1)",
    2,
  ),
  table(schema.events, "rows", ["id"]),
  table(schema.suppressions, "rows", ["email"]),
  table(schema.idempotencyKeys, "rows", ["key"]),
  table(schema.contactImports, "rows", ["id"]),
  table(schema.contactImportRanges, "rows", ["import_id", "first_row"], "import_id IN (SELECT id FROM contact_imports WHERE project_id = ?1)"),
  table(schema.contactImportChunks, "rows", ["import_id", "first_row"], "import_id IN (SELECT id FROM contact_imports WHERE project_id = ?1)"),
  table(inboundMessages, "rows", ["id"]),
  table(schema.webhookEndpoints, "rows", ["id"]),
  table(schema.webhookEvents, "rows", ["id"]),
  table(schema.webhookDeliveries, "rows", ["id"]),
  table(schema.r2Usage, "rows", ["prefix", "day"]),
  table(schema.archiveRuns, "rows", ["kind", "day", "part"]),
  table(schema.workflows, "rows", ["id"]),
  table(schema.workflowVersions, "rows", ["workflow_id", "version"], "workflow_id IN (SELECT id FROM workflows WHERE project_id = ?1)"),
  table(schema.workflowExecutions, "rows", ["id"]),
  table(schema.workflowTriggerOutbox, "outbox", ["id"]),
  table(schema.projectUsage, "counter", ["project_id"]),
  table(schema.projectDailyUsage, "counter", ["day"]),
  table(schema.projectReputation, "counter", ["day"]),
  table(schema.webhookPending, "counter", ["project_id"]),
];

/**
 * Tables a move leaves where they are: the control database's (it is shard 0 too, and
 * they are reached through controlDb whatever the project's shard), and quota_checks,
 * which never holds a row (a guard inserts and its trigger drops it).
 */
export const STAYING_TABLES: Readonly<Record<string, string>> = {
  api_keys: "control",
  domains: "control",
  domain_releases: "control",
  project_shards: "control",
  quota_checks: "never holds a row",
};

/** The counter columns of the project's data-side row, set from the source after the copy (the target's triggers added to them). */
export const PROJECT_COUNTER_COLUMNS = ["stored_bytes", "r2_stored_bytes"] as const;

/** Column names quoted (some are keywords: `key`, `row`). */
const list = (columns: readonly string[]) => columns.map((c) => `"${c}"`).join(", ");

/** `(a, b) > (?2, ?3)`: after the cursor, in key order. */
function after(t: MoveTable): string {
  const params = t.key.map((_, i) => `?${i + 2}`);
  return t.key.length === 1 ? `${t.key[0]} > ${params[0]}` : `(${list(t.key)}) > (${params.join(", ")})`;
}

function statementsOf(t: MoveTable) {
  const limit = `?${t.key.length + 2}`;
  const order = `ORDER BY ${list(t.key)}`;
  const rows = `SELECT ${t.columns.map((c) => `json_extract(value, '$.${c}') AS "${c}"`).join(", ")} FROM json_each(?1)`;
  // A row the target has is filtered out before it is inserted, not ignored on conflict: a BEFORE INSERT
  // trigger (the workflow trigger on events) would fire for an ignored row too.
  const sameKey = [...t.key, ...(t.columns.includes("project_id") && !t.key.includes("project_id") ? ["project_id"] : [])]
    .map((c) => `x."${c}" = r."${c}"`)
    .join(" AND ");
  const copied = `NOT EXISTS (SELECT 1 FROM ${t.name} x WHERE ${sameKey})`;
  // Outbox rows: already copied when the same trigger row is there; an id the target uses for another row gets a new one.
  const sameTrigger = `EXISTS (SELECT 1 FROM ${t.name} o WHERE o.project_id = r.project_id AND o.contact_id = r.contact_id AND o.kind = r.kind
    AND o.event_id IS r.event_id AND o.event_name IS r.event_name AND o.created_at = r.created_at)`;
  const others = t.columns
    .slice(1)
    .map((c) => `r."${c}"`)
    .join(", ");
  const insert =
    t.kind === "outbox"
      ? [
          `INSERT INTO ${t.name} (${list(t.columns)}) SELECT r.* FROM (${rows}) r
  WHERE NOT ${sameTrigger} AND NOT EXISTS (SELECT 1 FROM ${t.name} o WHERE o.id = r.id)`,
          `INSERT INTO ${t.name} (${list(t.columns.slice(1))}) SELECT ${others} FROM (${rows}) r WHERE NOT ${sameTrigger}`,
        ]
      : [`INSERT OR IGNORE INTO ${t.name} (${list(t.columns)}) SELECT r.* FROM (${rows}) r WHERE ${copied}`];
  return {
    first: `SELECT ${list(t.columns)} FROM ${t.name} WHERE ${t.scope} ${order} LIMIT ?2`,
    next: `SELECT ${list(t.columns)} FROM ${t.name} WHERE ${t.scope} AND ${after(t)} ${order} LIMIT ${limit}`,
    insert: insert[0],
    ...(insert[1] ? { renumber: insert[1] } : {}),
    count: `SELECT count(*) AS n FROM ${t.name} WHERE ${t.scope}`,
    // By key within the scope (some tables are WITHOUT ROWID; a key such as an address is unique only within the project).
    delete: `DELETE FROM ${t.name} WHERE ${t.scope} AND (${list(t.key)}) IN (SELECT ${list(t.key)} FROM ${t.name} WHERE ${t.scope} ${order} LIMIT ?2)`,
    // Counters: the target's rows go, the source's come in (one batch).
    clear: `DELETE FROM ${t.name} WHERE ${t.scope}`,
  };
}

for (const t of MOVE_TABLES) if (t.kind === "outbox" && t.columns[0] !== "id") throw new Error(`${t.name}: the outbox copy expects id first`);

const SQL = new Map(MOVE_TABLES.map((t) => [t.name, statementsOf(t)]));
const sqlOf = (t: MoveTable) => SQL.get(t.name)!;

/** A page of the project's rows after `cursor` (the last page's last key; null: from the start). */
export function readPage(
  d1: D1Database,
  t: MoveTable,
  projectId: string,
  cursor: readonly (string | number | null)[] | null,
  limit = t.pageRows,
): D1PreparedStatement {
  return cursor ? d1.prepare(sqlOf(t).next).bind(projectId, ...cursor, limit) : d1.prepare(sqlOf(t).first).bind(projectId, limit);
}

/** Inserts rows read by readPage (as a JSON array of objects); a row already there is left as it is. Outbox rows: a second statement gives the rows whose id the target uses a new one. */
export function insertRows(d1: D1Database, t: MoveTable, rowsJson: string): D1PreparedStatement[] {
  const sql = sqlOf(t);
  return [d1.prepare(sql.insert).bind(rowsJson), ...("renumber" in sql && sql.renumber ? [d1.prepare(sql.renumber).bind(rowsJson)] : [])];
}

/** The project's rows in the table. */
export function countRows(d1: D1Database, t: MoveTable, projectId: string): D1PreparedStatement {
  return d1.prepare(sqlOf(t).count).bind(projectId);
}

/** Deletes up to `limit` of the project's rows (meta.changes says how many; triggers and cascades may delete more). */
export function deleteRows(d1: D1Database, t: MoveTable, projectId: string, limit: number): D1PreparedStatement {
  return d1.prepare(sqlOf(t).delete).bind(projectId, limit);
}

/** Deletes every row of the project in a counter table (before the source's are inserted, in one batch). */
export function clearCounterRows(d1: D1Database, t: MoveTable, projectId: string): D1PreparedStatement {
  if (t.kind !== "counter") throw new Error(`${t.name} is not a counter table`);
  return d1.prepare(sqlOf(t).clear).bind(projectId);
}

/** The project's data-side counters, read from the source. */
export function readProjectCounters(d1: D1Database, projectId: string): D1PreparedStatement {
  return d1.prepare(READ_COUNTERS_SQL).bind(projectId);
}
const READ_COUNTERS_SQL = `SELECT ${list(PROJECT_COUNTER_COLUMNS)} FROM projects WHERE id = ?1`;

/** Sets the target's project counters to the source's. */
export function setProjectCounters(d1: D1Database, projectId: string, storedBytes: number, r2StoredBytes: number): D1PreparedStatement {
  return d1.prepare(SET_COUNTERS_SQL).bind(projectId, storedBytes, r2StoredBytes);
}
const SET_COUNTERS_SQL = "UPDATE projects SET stored_bytes = ?2, r2_stored_bytes = ?3 WHERE id = ?1";

/** The module's fixed SQL, by name: each moved table's statements and the counters'. */
export const FIXED_SQL: Record<string, string> = {
  READ_COUNTERS_SQL,
  SET_COUNTERS_SQL,
  ...Object.fromEntries(MOVE_TABLES.flatMap((t) => Object.entries(sqlOf(t)).map(([what, sql]) => [`${t.name}.${what}`, sql]))),
};
