import type { ImportColumnRole, ImportColumnType, StoredColumnPlan } from "../../db/schema";
import { ApiError } from "../../lib/errors";
import type { ColumnMapping } from "../../schemas/contact-imports";
import {
  DATA_KEY,
  dataKeyOf,
  EMAIL_NAMES,
  IGNORED_NAMES,
  INFERRED_BOOLEAN,
  INFERRED_NUMBER,
  normalHeader as normal,
  SUBSCRIBED_NAMES,
} from "../../schemas/import-header";

/**
 * A CSV header read as a column plan: where the email is, and each column's role, data key
 * and type. The upload settles it (a `columns` mapping, else the header's names and every
 * cell's shape: ColumnTypes) and stores it with the job; each chunk reads its rows against it
 * (process.ts, readCell).
 */

/** Largest CSV record (characters): a contact's data is at most 64 KB, so a longer row cannot be stored. */
export const MAX_RECORD_CHARS = 128 * 1024;

/** The CSV parser's options, for the upload and for each chunk's byte range (which adds the header's record delimiter). */
export const CSV_OPTIONS = { relax_column_count: true, skip_empty_lines: true, max_record_size: MAX_RECORD_CHARS } as const;

/** Columns a header may have. */
export const MAX_COLUMNS = 200;

/**
 * What a column is for: the address, the subscription, the `data` JSON column of our own export,
 * a column left out (our export's id and timestamps, a blank name), or a data key.
 */
export type ColumnRole = ImportColumnRole;
/** A plan before its types are settled (the upload's scan infers the ones no mapping gave). */
export type ColumnPlan = Omit<StoredColumnPlan, "types"> & { types: (ImportColumnType | null)[] };

const mappingError = (message: string, code = "invalid_value") => ApiError.validation([{ field: "columns", message, code }]);

/** The mapping's entry for each header column (by its name as in the file, else compared as header names are), or 422 naming `columns`. */
function mappedColumns(header: string[], mapping: ColumnMapping): (ColumnMapping[string] | undefined)[] {
  const entries: (ColumnMapping[string] | undefined)[] = header.map(() => undefined);
  for (const [name, entry] of Object.entries(mapping)) {
    let at = header.findIndex((h) => h.trim() === name.trim());
    if (at < 0) {
      const matches = header.flatMap((h, i) => (normal(h) === normal(name) ? [i] : []));
      if (matches.length !== 1) {
        throw mappingError(
          `columns names "${name.slice(0, 128)}", which is not a column of the CSV's header (${header
            .map((h) => `"${h.trim().slice(0, 40)}"`)
            .join(", ")
            .slice(0, 500)})`,
          "unknown_column",
        );
      }
      at = matches[0];
    }
    if (entries[at]) throw mappingError(`columns maps the column "${header[at].trim()}" twice`);
    entries[at] = entry;
  }
  return entries;
}

/**
 * The header as a column plan: where the email is, and each column's role, data key and type
 * (null: inferred by the upload's scan). `mapping` (the `columns` query) overrides a column's
 * target (`email`, `subscribed`, `data.<key>`, `ignore`) and type; the other columns keep the
 * roles their names give.
 */
export function planColumns(header: string[], mapping?: ColumnMapping): ColumnPlan {
  if (header.length > MAX_COLUMNS) {
    throw ApiError.validation([{ field: "body", message: `The header has ${header.length} columns; at most ${MAX_COLUMNS}`, code: "too_big" }]);
  }
  for (const name of header) {
    if (name.trim().length > 128) throw ApiError.validation([{ field: "body", message: "Column names may be at most 128 characters", code: "too_big" }]);
  }
  const mapped = mapping ? mappedColumns(header, mapping) : header.map(() => undefined);
  const normals = header.map(normal);
  const targets = mapped.map((m) => m?.to);
  const count = (to: string) => targets.filter((t) => t === to).length;
  if (count("email") > 1) throw mappingError("columns maps more than one column to email");
  if (count("subscribed") > 1) throw mappingError("columns maps more than one column to subscribed");
  // A column the mapping gives another target loses the role its name gave it.
  const free = (i: number) => targets[i] === undefined;
  // The address: a mapped one, else a column named exactly "email", else the first of the other names tools use.
  let email = targets.indexOf("email");
  if (email < 0) email = normals.findIndex((n, i) => free(i) && n === "email");
  if (email < 0) email = normals.findIndex((n, i) => free(i) && EMAIL_NAMES.has(n));
  if (email < 0) {
    throw ApiError.validation([
      {
        field: "email",
        message:
          'The CSV has no email column: its first row must be a header naming one ("email", "Email Address", "E-mail", "email_address" or "mail", case-insensitive), or map one with columns={"<header>":{"to":"email"}}',
        code: "required",
      },
    ]);
  }
  let subscribed = targets.indexOf("subscribed");
  if (subscribed < 0) subscribed = normals.findIndex((n, i) => free(i) && i !== email && SUBSCRIBED_NAMES.has(n));
  const roles: ColumnRole[] = [];
  const keys: string[] = [];
  const types: (ImportColumnType | null)[] = [];
  const seen = new Set<string>();
  header.forEach((name, i) => {
    const to = targets[i];
    let role: ColumnRole;
    let dataKey = "";
    if (i === email) role = "email";
    else if (i === subscribed) role = "subscribed";
    else if (to === "ignore") role = "ignore";
    else if (to?.startsWith("data.")) {
      role = "key";
      dataKey = to.slice("data.".length);
      if (!DATA_KEY.test(dataKey)) throw mappingError(`columns maps "${name.trim()}" to "${to.slice(0, 80)}": a data key is 1-64 letters, digits, _ or -`);
    } else {
      dataKey = dataKeyOf(name);
      role = normals[i] === "data" ? "data" : IGNORED_NAMES.has(normals[i]) || dataKey === "" ? "ignore" : "key";
    }
    // What the column names: its data key, or its role (so a second "Email" is a duplicate, not a key `email`).
    const key = role === "key" ? dataKey : role === "ignore" ? "" : role;
    if (key !== "" && seen.has(key)) {
      throw ApiError.validation([
        {
          field: mapping ? "columns" : "body",
          message: `The column "${name.trim()}" appears twice in the header (as "${key}")${mapping ? "" : `: map one of them elsewhere with columns={"${name.trim()}":{"to":"data.<key>"}}`}`,
          code: "duplicate_column",
        },
      ]);
    }
    if (key !== "") seen.add(key);
    roles.push(role);
    keys.push(role === "key" ? dataKey : "");
    types.push(role === "key" ? (mapped[i]?.type ?? null) : "text");
  });
  return { email, roles, keys, types };
}

/** A number a `number` column accepts. */
const ANY_NUMBER = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;
const TRUE_CELL = new Set(["true", "1", "yes", "y"]);
const FALSE_CELL = new Set(["false", "0", "no", "n"]);
/** A date a `date` column accepts: ISO 8601, or `YYYY-MM-DD HH:MM[:SS]` as Mailchimp writes it (UTC when no zone is given). */
const DATE_TIME = /^(\d{4}-\d{2}-\d{2})(?:[T ](\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?)\s*(Z|[+-]\d{2}:?\d{2})?)?$/i;

/**
 * The upload's scan: for every data column the mapping gave no type, whether each non-empty cell
 * so far is a number or a boolean. `types()` settles the plan: number, boolean, or text.
 */
export class ColumnTypes {
  private readonly numbers: boolean[];
  private readonly booleans: boolean[];
  private readonly seen: boolean[];
  constructor(private readonly plan: ColumnPlan) {
    this.numbers = plan.types.map((t) => t === null);
    this.booleans = plan.types.map((t) => t === null);
    this.seen = plan.types.map(() => false);
  }
  see(cells: readonly string[]) {
    for (let i = 0; i < this.numbers.length; i++) {
      if (!this.numbers[i] && !this.booleans[i]) continue;
      const cell = (cells[i] ?? "").trim();
      if (cell === "") continue;
      this.seen[i] = true;
      if (this.numbers[i] && !INFERRED_NUMBER.test(cell)) this.numbers[i] = false;
      if (this.booleans[i] && !INFERRED_BOOLEAN.test(cell)) this.booleans[i] = false;
    }
  }
  types(): StoredColumnPlan {
    const types = this.plan.types.map(
      (t, i): ImportColumnType => t ?? (!this.seen[i] ? "text" : this.numbers[i] ? "number" : this.booleans[i] ? "boolean" : "text"),
    );
    return { ...this.plan, types };
  }
}

/** A data cell as its column's type stores it, or the reason it cannot be (the row fails with it). */
export function readCell(cell: string, type: ImportColumnType, column: string): { value: unknown } | { error: string } {
  if (type === "text") return { value: cell };
  const value = cell.trim();
  if (value === "") return { value: cell };
  const quoted = `"${value.slice(0, 60)}"`;
  if (type === "number") {
    const n = Number(value);
    return ANY_NUMBER.test(value) && Number.isFinite(n) ? { value: n } : { error: `${column} must be a number, not ${quoted}` };
  }
  if (type === "boolean") {
    const lower = value.toLowerCase();
    if (TRUE_CELL.has(lower)) return { value: true };
    if (FALSE_CELL.has(lower)) return { value: false };
    return { error: `${column} must be true/false, yes/no or 1/0, not ${quoted}` };
  }
  const parts = DATE_TIME.exec(value);
  const zone = (parts?.[3] ?? "Z").toUpperCase().replace(/^([+-]\d{2})(\d{2})$/, "$1:$2");
  const [y, m, d] = (parts?.[1] ?? "0-0-0").split("-").map(Number);
  // Date.parse rolls 2024-02-30 over to March; a day the month does not have is refused.
  const realDay = new Date(Date.UTC(y, m - 1, d)).getUTCDate() === d;
  const at = parts && realDay ? Date.parse(`${parts[1]}T${parts[2] ?? "00:00"}${zone}`) : Number.NaN;
  return Number.isNaN(at)
    ? { error: `${column} must be a date (ISO 8601, e.g. 2024-03-05 or 2024-03-05T10:30:00Z), not ${quoted}` }
    : { value: new Date(at).toISOString() };
}

/** A job's plan: the one its upload stored, or (a job from before migration 0035) the header's, every data column text. */
export function storedPlan(job: { columnPlan: StoredColumnPlan | null; columns: string[] }): StoredColumnPlan {
  if (job.columnPlan) return job.columnPlan;
  const plan = planColumns(job.columns);
  return { ...plan, types: plan.types.map(() => "text") };
}
