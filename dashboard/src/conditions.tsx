import type { Condition } from "./api/client";
import { Field } from "./ui";

type Group = Condition["groups"][number];
type Filter = Group["filters"][number];
type Operator = Filter["operator"];

/** Field kinds and the operators each takes, as the API's Condition schema documents them. */
const KINDS = {
  email: { label: "Email address", ops: ["equals", "notEquals", "contains", "notContains", "exists", "notExists"] },
  subscribed: { label: "Subscribed", ops: ["equals", "notEquals"] },
  createdAt: { label: "Created", ops: ["within", "olderThan", "greaterThan", "lessThan"] },
  updatedAt: { label: "Updated", ops: ["within", "olderThan", "greaterThan", "lessThan"] },
  data: { label: "Contact data", ops: ["equals", "notEquals", "contains", "notContains", "greaterThan", "lessThan", "exists", "notExists"] },
  event: { label: "Event", ops: ["triggered", "notTriggered", "triggeredWithin", "triggeredOlderThan"] },
  activity: { label: "Email activity", ops: ["triggered", "notTriggered", "triggeredWithin", "triggeredOlderThan"] },
} satisfies Record<string, { label: string; ops: Operator[] }>;
type Kind = keyof typeof KINDS;

const OP_LABELS: Record<string, string> = {
  equals: "is",
  notEquals: "is not",
  contains: "contains",
  notContains: "does not contain",
  greaterThan: "is greater than / after",
  lessThan: "is less than / before",
  exists: "is set",
  notExists: "is not set",
  within: "within the last",
  olderThan: "more than … ago",
  triggered: "happened",
  notTriggered: "never happened",
  triggeredWithin: "happened within the last",
  triggeredOlderThan: "last happened more than … ago",
};
const ACTIVITIES = ["sent", "delivered", "opened", "clicked", "bounced", "complained"];
const SPAN_OPS = new Set(["within", "olderThan", "triggeredWithin", "triggeredOlderThan"]);
const NO_VALUE = new Set(["exists", "notExists", "triggered", "notTriggered"]);

function kindOf(field: string): { kind: Kind; name: string } {
  if (field === "email" || field === "subscribed" || field === "createdAt" || field === "updatedAt") return { kind: field, name: "" };
  if (field.startsWith("data.")) return { kind: "data", name: field.slice(5) };
  if (field.startsWith("event.")) return { kind: "event", name: field.slice(6) };
  if (field.startsWith("email.")) return { kind: "activity", name: field.slice(6) };
  return { kind: "data", name: field };
}

function fieldOf(kind: Kind, name: string): string {
  if (kind === "data") return `data.${name}`;
  if (kind === "event") return `event.${name}`;
  if (kind === "activity") return `email.${name || "opened"}`;
  return kind;
}

export const emptyCondition = (): Condition => ({ logic: "AND", groups: [{ filters: [{ field: "data.plan", operator: "equals", value: "pro" }] }] });

/** A filter's value as typed: numbers stay numbers, true/false booleans (the API compares by JSON type). */
function typed(text: string, kind: Kind, operator: string): string | number | boolean {
  if (SPAN_OPS.has(operator)) return Number(text);
  if (kind === "subscribed") return text === "true";
  if (kind === "data" && ["greaterThan", "lessThan"].includes(operator) && text.trim() !== "" && !Number.isNaN(Number(text))) return Number(text);
  if (kind === "data" && text === "true") return true;
  if (kind === "data" && text === "false") return false;
  return text;
}

function FilterRow(props: { filter: Filter; onChange: (f: Filter) => void; onRemove: () => void; n: number }) {
  const { filter } = props;
  const { kind, name } = kindOf(filter.field);
  const ops = KINDS[kind].ops as Operator[];
  const set = (patch: Partial<Filter>) => {
    const next = { ...filter, ...patch } as Filter;
    if (NO_VALUE.has(next.operator)) delete next.value;
    if (SPAN_OPS.has(next.operator)) next.unit ??= "days";
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
              const op = KINDS[k].ops[0] as Operator;
              set({ field: fieldOf(k, k === "activity" ? "opened" : name), operator: op, value: k === "subscribed" ? true : SPAN_OPS.has(op) ? 7 : "" });
            }}
          >
            {Object.entries(KINDS).map(([k, v]) => (
              <option value={k}>{v.label}</option>
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
              {ACTIVITIES.map((a) => (
                <option value={a}>{a}</option>
              ))}
            </select>
          )}
        </Field>
      )}
      <Field label="Operator">
        {(id) => (
          <select id={id} value={filter.operator} onChange={(e) => set({ operator: e.currentTarget.value as Operator })}>
            {ops.map((o) => (
              <option value={o}>{OP_LABELS[o]}</option>
            ))}
          </select>
        )}
      </Field>
      {!NO_VALUE.has(filter.operator) &&
        (kind === "subscribed" ? (
          <Field label="Value">
            {(id) => (
              <select id={id} value={String(filter.value)} onChange={(e) => set({ value: e.currentTarget.value === "true" })}>
                <option value="true">yes</option>
                <option value="false">no</option>
              </select>
            )}
          </Field>
        ) : (
          <Field label={SPAN_OPS.has(filter.operator) ? "Amount" : "Value"}>
            {(id) => (
              <input
                id={id}
                type="text"
                inputMode={SPAN_OPS.has(filter.operator) ? "numeric" : "text"}
                value={filter.value === undefined ? "" : String(filter.value)}
                onInput={(e) => set({ value: typed(e.currentTarget.value, kind, filter.operator) })}
              />
            )}
          </Field>
        ))}
      {SPAN_OPS.has(filter.operator) && (
        <Field label="Unit">
          {(id) => (
            <select id={id} value={filter.unit} onChange={(e) => set({ unit: e.currentTarget.value as Filter["unit"] })}>
              <option value="minutes">minutes</option>
              <option value="hours">hours</option>
              <option value="days">days</option>
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
