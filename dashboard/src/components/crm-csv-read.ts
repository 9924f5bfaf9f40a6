/**
 * Reads a CSV file in the browser for the import page's mapping step, with csv-parse (loaded on the first
 * file, so it is not in the first page's script): the whole file up to WHOLE_BYTES, else its first
 * PART_BYTES cut at a line end (the server reads the whole file itself; the page only needs the header,
 * a preview and the type guess).
 */

export const WHOLE_BYTES = 5 * 1024 * 1024;
const PART_BYTES = 512 * 1024;

export interface CsvPreview {
  header: string[];
  rows: string[][];
  /** Every row of the file was read (false: the first rows of a large file). */
  complete: boolean;
}

/** The parser's options as the server sets them (rows of any length, blank lines skipped), and a UTF-8 BOM dropped. */
const OPTIONS = { relax_column_count: true, skip_empty_lines: true, bom: true } as const;

export async function readCsv(file: File): Promise<CsvPreview> {
  const { parse } = await import("csv-parse/browser/esm/sync");
  const complete = file.size <= WHOLE_BYTES;
  let text = await file.slice(0, complete ? file.size : PART_BYTES).text();
  let records: string[][] | undefined;
  for (let attempt = 0; records === undefined; attempt++) {
    if (!complete) text = text.slice(0, Math.max(0, text.lastIndexOf("\n")));
    try {
      records = parse(text, OPTIONS) as string[][];
    } catch (err) {
      // A part may end inside a quoted field that spans lines: cut at an earlier line end and try again.
      if (complete || attempt >= 20 || text === "") throw new Error(`The file is not a CSV file the import can read: ${(err as Error).message}`);
    }
  }
  const [header = [], ...rows] = records;
  if (header.length === 0) throw new Error("The file is empty: its first row must be a header naming the columns.");
  return { header, rows, complete };
}
