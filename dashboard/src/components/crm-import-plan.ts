/**
 * The import page's column mapping: what the server does with a CSV header when it is given no mapping
 * (CONTRACT.md "Contact import as exported"), so the page can show it, let the user change it, and send
 * `columns` only when something was changed.
 */

import {
  DATA_KEY,
  dataKeyOf,
  EMAIL_NAMES,
  IGNORED_NAMES,
  INFERRED_BOOLEAN,
  INFERRED_NUMBER,
  normalHeader as normal,
  SUBSCRIBED_NAMES,
} from "../../../src/schemas/import-header";

// How the server reads a header and guesses types comes from src/schemas/import-header.ts, shared with it.

export type Target = "email" | "subscribed" | "data" | "json" | "ignore";
export type ColumnType = "text" | "number" | "boolean" | "date";

/** One column of the file as the page maps it. `json` is the `data` column of our own export (a JSON object, merged). */
export interface ColumnMap {
  header: string;
  to: Target;
  key: string;
  type: ColumnType;
}

/** The mapping as `POST /contacts/imports?columns=` takes it. */
export type Columns = Record<string, { to: string; type?: ColumnType }>;

/** The type the server guesses for a column: every non-empty cell a number → number, all true/false → boolean, else text. */
export function guessType(cells: string[]): ColumnType {
  const filled = cells.map((c) => c.trim()).filter((c) => c !== "");
  if (filled.length === 0) return "text";
  if (filled.every((c) => INFERRED_NUMBER.test(c))) return "number";
  if (filled.every((c) => INFERRED_BOOLEAN.test(c))) return "boolean";
  return "text";
}

/** The mapping the server would use without one: the email column, the subscription column, data keys, ignored columns. */
export function defaultMapping(header: string[], rows: string[][]): ColumnMap[] {
  const normals = header.map(normal);
  const exact = normals.indexOf("email");
  const email = exact >= 0 ? exact : normals.findIndex((n) => EMAIL_NAMES.has(n));
  const subscribed = normals.findIndex((n) => SUBSCRIBED_NAMES.has(n));
  return header.map((name, i) => {
    const key = dataKeyOf(name);
    const to: Target =
      i === email
        ? "email"
        : i === subscribed
          ? "subscribed"
          : normals[i] === "data"
            ? "json"
            : IGNORED_NAMES.has(normals[i]) || key === ""
              ? "ignore"
              : "data";
    const type = to === "data" ? guessType(rows.map((r) => r[i] ?? "")) : to === "subscribed" ? "boolean" : "text";
    return { header: name, to, key, type };
  });
}

const same = (a: ColumnMap, b: ColumnMap) => a.to === b.to && a.type === b.type && (a.to !== "data" || a.key === b.key);

/**
 * What to send as `columns`: the columns the user changed from the server's own choice, each with its target (and
 * a data key's type); nothing when nothing was changed. The server keeps what their names give for the columns left out
 * (and guesses their types over the whole file).
 */
export function columnsToSend(mapping: ColumnMap[], defaults: ColumnMap[]): Columns | undefined {
  const columns: Columns = {};
  mapping.forEach((m, i) => {
    if (same(m, defaults[i]) || m.to === "json") return;
    // A type only for a data key: the email, the subscription and an ignored column have none to choose.
    columns[m.header] = m.to === "data" ? { to: `data.${m.key.trim()}`, type: m.type } : { to: m.to };
  });
  return Object.keys(columns).length ? columns : undefined;
}

/** What is wrong with a mapping before it is sent: no email column, two of one target, empty or repeated keys. */
export function mappingProblem(mapping: ColumnMap[]): string | null {
  const emails = mapping.filter((m) => m.to === "email").length;
  if (emails !== 1) return emails === 0 ? "Choose the column that holds the email address." : "Only one column can be the email address.";
  if (mapping.filter((m) => m.to === "subscribed").length > 1) return "Only one column can be the subscription.";
  const keys = new Set<string>();
  for (const m of mapping.filter((x) => x.to === "data")) {
    const key = m.key.trim();
    if (key === "") return `Give the column "${m.header}" a data key, or ignore it.`;
    if (!DATA_KEY.test(key)) return `The data key "${key}" of "${m.header}" may have only letters, digits, _ and - (at most 64).`;
    if (keys.has(key)) return `Two columns would both be stored as "${key}": give one another key or ignore it.`;
    keys.add(key);
  }
  return null;
}
