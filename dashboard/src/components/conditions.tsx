import {
  EMAIL_ACTIVITIES,
  FIELD_PREFIXES,
  type FieldRef,
  OPERATOR_VALUES,
  type Operator,
  parseField,
  TIME_UNITS,
  type ValueKind,
} from "../../../src/schemas/condition-grammar";
import type { Condition } from "../api/client";
import { Field } from "./page";

type Group = Condition["groups"][number];
type Filter = Group["filters"][number];

/** The builder's field kinds: the grammar's, with its timestamp kind as two (createdAt, updatedAt). */
const KINDS = {
  email: "Email address",
  subscribed: "Subscribed",
  createdAt: "Created",
  updatedAt: "Updated",
  data: "Contact data",
  event: "Event",
  activity: "Email activity",
  segment: "In a list (static segment id)",
} as const;
type Kind = keyof typeof KINDS;

const grammarKind = (kind: Kind): FieldRef["kind"] => (kind === "createdAt" || kind === "updatedAt" ? "timestamp" : kind);
/** The operators a kind of field takes, as the server's grammar says. */
const opsOf = (kind: Kind) => Object.keys(OPERATOR_VALUES[grammarKind(kind)]) as Operator[];
/** What value `operator` on a `kind` field expects ("none" when the server would refuse the pair). */
const valueKind = (kind: Kind, operator: Operator): ValueKind | "none" => OPERATOR_VALUES[grammarKind(kind)][operator] ?? "none";

const OP_LABELS: Record<Operator, string> = {
  equals: "is",
  notEquals: "is not",
  contains: "contains",
  notContains: "does not contain",
  greaterThan: "is greater than / after",
  lessThan: "is less than / before",
  greaterThanOrEqual: "is at least / on or after",
  lessThanOrEqual: "is at most / on or before",
  exists: "is set",
  notExists: "is not set",
  within: "within the last",
  olderThan: "more than … ago",
  triggered: "happened",
  notTriggered: "never happened",
  triggeredWithin: "happened within the last",
  triggeredOlderThan: "last happened more than … ago",
};

/** A field's kind and name, parsed as the server parses it; a data key or event name still being typed counts by its prefix. */
function kindOf(field: string): { kind: Kind; name: string } {
  const ref = parseField(field);
  if (ref?.kind === "timestamp") return { kind: ref.column, name: "" };
  if (ref?.kind === "email" || ref?.kind === "subscribed" || ref?.kind === "segment") return { kind: ref.kind, name: "" };
  for (const kind of ["event", "activity", "data"] as const) {
    if (field.startsWith(FIELD_PREFIXES[kind])) return { kind, name: field.slice(FIELD_PREFIXES[kind].length) };
  }
  return { kind: "data", name: field };
}

function fieldOf(kind: Kind, name: string): string {
  if (kind === "activity") return FIELD_PREFIXES.activity + (name || "opened");
  if (kind === "data" || kind === "event") return FIELD_PREFIXES[kind] + name;
  return kind;
}

export const emptyCondition = (): Condition => ({ logic: "AND", groups: [{ filters: [{ field: "data.plan", operator: "equals", value: "pro" }] }] });

/** A filter's value as typed, in the JSON type the operator expects (the API compares data by JSON type). */
function typed(text: string, expects: ValueKind): string | number | boolean {
  if (expects === "span") return Number(text);
  if (expects === "boolean") return text === "true";
  if (expects === "ordered" && text.trim() !== "" && !Number.isNaN(Number(text))) return Number(text);
  if (expects === "scalar" && (text === "true" || text === "false")) return text === "true";
  return text;
}

function FilterRow(props: { filter: Filter; onChange: (f: Filter) => void; onRemove: () => void; n: number }) {
  const { filter } = props;
  const { kind, name } = kindOf(filter.field);
  const expects = valueKind(kind, filter.operator);
  const set = (patch: Partial<Filter>) => {
    const next = { ...filter, ...patch } as Filter;
    const nextExpects = valueKind(kindOf(next.field).kind, next.operator);
    if (nextExpects === "none") delete next.value;
    if (nextExpects === "span") next.unit ??= "days";
    else delete next.unit;
    props.onChange(next);
  };
  return (
    <fieldset class="filter">
      <legend>Filter {props.n}</legend>
      <Field label="Field">
        {(id) => (
          <select
            id={id}
            value={kind}
            onChange={(e) => {
              const k = e.currentTarget.value as Kind;
              // Dates start as "within the last 7 days", every other kind with its first operator.
              const op = grammarKind(k) === "timestamp" ? "within" : opsOf(k)[0];
              const v = valueKind(k, op);
              set({ field: fieldOf(k, k === "activity" ? "opened" : name), operator: op, value: v === "boolean" ? true : v === "span" ? 7 : "" });
            }}
          >
            {Object.entries(KINDS).map(([k, label]) => (
              <option value={k}>{label}</option>
            ))}
          </select>
        )}
      </Field>
      {(kind === "data" || kind === "event") && (
        <Field label={kind === "data" ? "Data key" : "Event name"}>
          {(id) => <input id={id} value={name} required onInput={(e) => set({ field: fieldOf(kind, e.currentTarget.value) })} />}
        </Field>
      )}
      {kind === "activity" && (
        <Field label="Activity">
          {(id) => (
            <select id={id} value={name} onChange={(e) => set({ field: fieldOf(kind, e.currentTarget.value) })}>
              {EMAIL_ACTIVITIES.map((a) => (
                <option value={a}>{a}</option>
              ))}
            </select>
          )}
        </Field>
      )}
      <Field label="Operator">
        {(id) => (
          <select id={id} value={filter.operator} onChange={(e) => set({ operator: e.currentTarget.value as Operator })}>
            {opsOf(kind).map((o) => (
              <option value={o}>{OP_LABELS[o]}</option>
            ))}
          </select>
        )}
      </Field>
      {expects !== "none" &&
        (expects === "boolean" ? (
          <Field label="Value">
            {(id) => (
              <select id={id} value={String(filter.value)} onChange={(e) => set({ value: e.currentTarget.value === "true" })}>
                <option value="true">yes</option>
                <option value="false">no</option>
              </select>
            )}
          </Field>
        ) : (
          <Field label={expects === "span" ? "Amount" : "Value"}>
            {(id) => (
              <input
                id={id}
                type="text"
                inputMode={expects === "span" ? "numeric" : "text"}
                value={filter.value === undefined ? "" : String(filter.value)}
                onInput={(e) => set({ value: typed(e.currentTarget.value, expects) })}
              />
            )}
          </Field>
        ))}
      {expects === "span" && (
        <Field label="Unit">
          {(id) => (
            <select id={id} value={filter.unit} onChange={(e) => set({ unit: e.currentTarget.value as Filter["unit"] })}>
              {TIME_UNITS.map((u) => (
                <option value={u}>{u}</option>
              ))}
            </select>
          )}
        </Field>
      )}
      <button type="button" class="small" aria-label={`Remove filter ${props.n}`} onClick={props.onRemove}>
        Remove
      </button>
    </fieldset>
  );
}

/**
 * Edits a Condition: groups combined by AND/OR, filters in a group ANDed. Nested
 * conditions made through the API are kept as they are (shown, not edited here).
 */
export function ConditionBuilder(props: { value: Condition; onChange: (c: Condition) => void; label?: string }) {
  const { value, onChange } = props;
  const setGroup = (i: number, g: Group) => onChange({ ...value, groups: value.groups.map((old, j) => (j === i ? g : old)) });
  return (
    <fieldset class="condition">
      <legend>{props.label ?? "Condition"}</legend>
      <Field label="Groups combine with">
        {(id) => (
          <select id={id} value={value.logic ?? "AND"} onChange={(e) => onChange({ ...value, logic: e.currentTarget.value as "AND" | "OR" })}>
            <option value="AND">AND (every group matches)</option>
            <option value="OR">OR (any group matches)</option>
          </select>
        )}
      </Field>
      {value.groups.map((group, gi) => (
        <div class="group">
          <h3>
            Group {gi + 1} <small>(all of its filters match)</small>
          </h3>
          {(group.filters ?? []).map((filter, fi) => (
            <FilterRow
              n={fi + 1}
              filter={filter}
              onChange={(f) => setGroup(gi, { ...group, filters: group.filters!.map((old, j) => (j === fi ? f : old)) })}
              onRemove={() => setGroup(gi, { ...group, filters: group.filters!.filter((_, j) => j !== fi) })}
            />
          ))}
          {group.conditions && <pre class="nested">Nested condition (edit through the API): {JSON.stringify(group.conditions)}</pre>}
          <div class="actions">
            <button
              type="button"
              class="small"
              onClick={() => setGroup(gi, { ...group, filters: [...(group.filters ?? []), { field: "email", operator: "contains", value: "" }] })}
            >
              Add filter to group {gi + 1}
            </button>
            {value.groups.length > 1 && (
              <button type="button" class="small" onClick={() => onChange({ ...value, groups: value.groups.filter((_, j) => j !== gi) })}>
                Remove group {gi + 1}
              </button>
            )}
          </div>
        </div>
      ))}
      <button
        type="button"
        class="small"
        onClick={() => onChange({ ...value, groups: [...value.groups, { filters: [{ field: "email", operator: "contains", value: "" }] }] })}
      >
        Add group
      </button>
    </fieldset>
  );
}
