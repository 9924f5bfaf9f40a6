import {
  clearCounterRows,
  countRows,
  deleteRows,
  insertRows,
  MOVE_TABLES,
  type MoveTable,
  readPage,
  readProjectCounters,
  setProjectCounters,
} from "../../store/project-move";

/**
 * Moving a project's rows from one data shard to another (`npm run project -- move`;
 * the durable steps are src/entrypoints/project-move.ts). Every function here takes the
 * source and target D1 and does a bounded amount of work, so a step that is retried
 * repeats at most one call: copies are INSERT OR IGNORE by key, deletes are by scope.
 */

/** Rows one copy or delete call handles at most (a step's work). */
export const MOVE_ROWS_PER_CALL = 5_000;
/** A statement's JSON parameter stays under this many characters (D1 keeps values under 2 MB). */
const MAX_JSON_CHARS = 900_000;

/** The last copied row's key values (keys are text or integers). */
export type Cursor = (string | number | null)[] | null;

export interface CopyProgress {
  /** Where the next call goes on; null once the table is copied. */
  cursor: Cursor;
  copied: number;
}

/** The moved table called `name`. */
export function moveTable(name: string): MoveTable {
  const t = MOVE_TABLES.find((m) => m.name === name);
  if (!t) throw new Error(`no moved table ${name}`);
  return t;
}

/** The tables copied row by row (counters are set at the end: copyCounters). */
export const ROW_TABLES = MOVE_TABLES.filter((t) => t.kind !== "counter");
export const COUNTER_TABLES = MOVE_TABLES.filter((t) => t.kind === "counter");

/** Statements inserting `rows`, each with a JSON parameter under MAX_JSON_CHARS (a larger row goes alone). */
function insertStatements(target: D1Database, t: MoveTable, rows: readonly Record<string, unknown>[]): D1PreparedStatement[] {
  const statements: D1PreparedStatement[] = [];
  let group: string[] = [];
  let chars = 0;
  const flush = () => {
    if (group.length > 0) statements.push(...insertRows(target, t, `[${group.join(",")}]`));
    group = [];
    chars = 0;
  };
  for (const row of rows) {
    const json = JSON.stringify(row);
    if (chars + json.length > MAX_JSON_CHARS) flush();
    group.push(json);
    chars += json.length + 1;
  }
  flush();
  return statements;
}

/**
 * Copies up to `budget` of the project's rows of one table after `cursor`, page by page in
 * key order; a row the target already has is left as it is, so running a call again
 * (a retried step) copies nothing twice.
 */
export async function copyTable(
  source: D1Database,
  target: D1Database,
  t: MoveTable,
  projectId: string,
  cursor: Cursor,
  budget = MOVE_ROWS_PER_CALL,
): Promise<CopyProgress> {
  let copied = 0;
  let at = cursor;
  while (copied < budget) {
    const limit = Math.min(t.pageRows, budget - copied);
    const { results } = await readPage(source, t, projectId, at, limit).all<Record<string, unknown>>();
    if (results.length === 0) return { cursor: null, copied };
    await target.batch(insertStatements(target, t, results));
    copied += results.length;
    const last = results.at(-1)!;
    at = t.key.map((k) => last[k] as string | number | null);
    if (results.length < limit) return { cursor: null, copied };
  }
  return { cursor: at, copied };
}

/**
 * Sets the counter tables and the project's stored-bytes counters on the target to the
 * source's: the target's insert triggers added to them while rows were copied.
 */
export async function copyCounters(source: D1Database, target: D1Database, projectId: string): Promise<void> {
  const statements: D1PreparedStatement[] = [];
  for (const t of COUNTER_TABLES) {
    const { results } = await readPage(source, t, projectId, null, 10_000).all<Record<string, unknown>>();
    statements.push(clearCounterRows(target, t, projectId), ...insertStatements(target, t, results));
  }
  const counters = await readProjectCounters(source, projectId).first<{ stored_bytes: number; r2_stored_bytes: number }>();
  if (counters) statements.push(setProjectCounters(target, projectId, counters.stored_bytes, counters.r2_stored_bytes));
  await target.batch(statements);
}

export interface TableCount {
  table: string;
  source: number;
  target: number;
}

/** Each moved table's rows of the project on both shards (one batch per shard). */
export async function countBoth(source: D1Database, target: D1Database, projectId: string): Promise<TableCount[]> {
  const count = async (d1: D1Database) =>
    (await d1.batch(MOVE_TABLES.map((t) => countRows(d1, t, projectId)))).map((r) => Number((r.results[0] as { n: number }).n));
  const [from, to] = await Promise.all([count(source), count(target)]);
  return MOVE_TABLES.map((t, i) => ({ table: t.name, source: from[i], target: to[i] }));
}

/** A copy that does not match its source: the move stops before it switches anything. */
export class MoveVerifyError extends Error {
  constructor(readonly differences: readonly TableCount[]) {
    super(`the copy differs from the source: ${differences.map((d) => `${d.table} ${d.source} -> ${d.target}`).join(", ")}`);
    this.name = "MoveVerifyError";
  }
}

/** Throws MoveVerifyError unless every table holds as many of the project's rows on the target as on the source. */
export async function verifyCopy(source: D1Database, target: D1Database, projectId: string): Promise<TableCount[]> {
  const counts = await countBoth(source, target, projectId);
  const differences = counts.filter((c) => c.source !== c.target);
  if (differences.length > 0) throw new MoveVerifyError(differences);
  return counts;
}

/**
 * Deletes up to `budget` of the project's rows of one table; answers how many went (0: the
 * table has none left). The `projects` row stays when `keepProjectRow` (the control
 * database is shard 0: its row is the project's registry entry).
 */
export async function deleteTable(d1: D1Database, t: MoveTable, projectId: string, keepProjectRow: boolean, budget = MOVE_ROWS_PER_CALL): Promise<number> {
  if (t.name === "projects" && keepProjectRow) return 0;
  let deleted = 0;
  while (deleted < budget) {
    const result = await deleteRows(d1, t, projectId, Math.min(500, budget - deleted)).run();
    const changes = result.meta.changes ?? 0;
    deleted += changes;
    if (changes === 0) break;
  }
  return deleted;
}

/** The tables in the order their rows are deleted: children before parents. */
export const DELETE_ORDER = [...MOVE_TABLES].reverse();
