import { ApiError } from "../../lib/errors";

/**
 * A CSV header read as a column plan: where the email is and what each other
 * column means. The upload checks the header with it; each chunk reads its
 * rows against it (process.ts).
 */

/** Largest CSV record (characters): a contact's data is at most 64 KB, so a longer row cannot be stored. */
export const MAX_RECORD_CHARS = 128 * 1024;

/** The CSV parser's options, for the upload and for each chunk's byte range (which adds the header's record delimiter). */
export const CSV_OPTIONS = { relax_column_count: true, skip_empty_lines: true, max_record_size: MAX_RECORD_CHARS } as const;

/** Columns a header may have. */
const MAX_COLUMNS = 200;

export type ColumnPlan = ReturnType<typeof planColumns>;

/** The header as a column plan: where the email is, and what each other column means. */
export function planColumns(header: string[]) {
  if (header.length > MAX_COLUMNS) {
    throw ApiError.validation([{ field: "body", message: `The header has ${header.length} columns; at most ${MAX_COLUMNS}`, code: "too_big" }]);
  }
  const seen = new Set<string>();
  for (const name of header.map((h) => h.trim().toLowerCase())) {
    if (name === "") continue;
    if (seen.has(name)) throw ApiError.validation([{ field: "body", message: `The column "${name}" appears twice in the header`, code: "duplicate_column" }]);
    if (name.length > 128) throw ApiError.validation([{ field: "body", message: "Column names may be at most 128 characters", code: "too_big" }]);
    seen.add(name);
  }
  const lower = header.map((h) => h.trim().toLowerCase());
  const email = lower.indexOf("email");
  if (email < 0) {
    throw ApiError.validation([
      { field: "email", message: "The CSV has no email column: its first row must be a header naming one (case-insensitive)", code: "required" },
    ]);
  }
  return { email, lower, names: header.map((h) => h.trim()) };
}
