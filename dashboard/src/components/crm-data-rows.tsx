import { Field } from "./page";

/**
 * A contact's data as rows of key, value and type, so nobody has to write JSON: Text, Number and
 * Yes/No cover what a marketer stores; JSON is offered for a value that already is an object or a list.
 */
export type ValueType = "text" | "number" | "boolean" | "json";
export interface DataRow {
  key: string;
  value: string;
  type: ValueType;
}

const TYPES: [ValueType, string][] = [
  ["text", "Text"],
  ["number", "Number"],
  ["boolean", "Yes/No"],
  ["json", "JSON"],
];

export function rowsOf(data: Record<string, unknown>): DataRow[] {
  return Object.entries(data).map(([key, v]) => {
    if (typeof v === "number") return { key, value: String(v), type: "number" };
    if (typeof v === "boolean") return { key, value: String(v), type: "boolean" };
    if (typeof v === "string") return { key, value: v, type: "text" };
    return { key, value: JSON.stringify(v), type: "json" };
  });
}

/** The rows as a data object; throws a message naming the row that is wrong. Blank rows are left out. */
export function dataOf(rows: DataRow[]): Record<string, unknown> {
  const data: Record<string, unknown> = {};
  for (const r of rows) {
    const key = r.key.trim();
    if (key === "" && r.value.trim() === "") continue;
    if (key === "") throw new Error(`A data value ("${r.value}") has no key.`);
    if (key in data) throw new Error(`The data key "${key}" is there twice.`);
    if (r.type === "number") {
      const n = Number(r.value.trim());
      if (r.value.trim() === "" || !Number.isFinite(n)) throw new Error(`"${key}" is not a number.`);
      data[key] = n;
    } else if (r.type === "boolean") data[key] = r.value === "true";
    else if (r.type === "json") {
      try {
        data[key] = JSON.parse(r.value);
      } catch {
        throw new Error(`"${key}" is not valid JSON.`);
      }
    } else data[key] = r.value;
  }
  return data;
}

/** Key, value and type inputs per row, each row a labelled group, with Add and Remove. */
export function DataRows(props: { rows: DataRow[]; onChange: (rows: DataRow[]) => void }) {
  const { rows, onChange } = props;
  const set = (i: number, change: Partial<DataRow>) => onChange(rows.map((r, j) => (j === i ? { ...r, ...change } : r)));
  return (
    <div class="crm-data">
      {rows.length === 0 && <p>No data yet.</p>}
      {rows.map((r, i) => (
        <fieldset class="crm-data-row" aria-label={`Data field ${i + 1}`}>
          <Field label="Key">{(id) => <input id={id} value={r.key} onInput={(e) => set(i, { key: e.currentTarget.value })} />}</Field>
          <Field label="Value">
            {(id) =>
              r.type === "boolean" ? (
                <select id={id} value={r.value === "true" ? "true" : "false"} onChange={(e) => set(i, { value: e.currentTarget.value })}>
                  <option value="true">Yes</option>
                  <option value="false">No</option>
                </select>
              ) : (
                <input
                  id={id}
                  value={r.value}
                  inputMode={r.type === "number" ? "decimal" : undefined}
                  onInput={(e) => set(i, { value: e.currentTarget.value })}
                />
              )
            }
          </Field>
          <Field label="Type">
            {(id) => (
              <select
                id={id}
                value={r.type}
                onChange={(e) => {
                  const type = e.currentTarget.value as ValueType;
                  set(i, { type, value: type === "boolean" ? (r.value === "true" ? "true" : "false") : r.value });
                }}
              >
                {TYPES.map(([value, text]) => (
                  <option value={value}>{text}</option>
                ))}
              </select>
            )}
          </Field>
          <button type="button" class="small" aria-label={`Remove data field ${r.key || i + 1}`} onClick={() => onChange(rows.filter((_, j) => j !== i))}>
            Remove
          </button>
        </fieldset>
      ))}
      <button type="button" class="small" onClick={() => onChange([...rows, { key: "", value: "", type: "text" }])}>
        Add data field
      </button>
    </div>
  );
}
