/**
 * The condition language's grammar: which fields a filter names, how a field is parsed, which
 * operators each kind of field takes and what value each expects. Zod-free and dependency-free:
 * the API's schema (schemas/conditions.ts), the evaluators (services/conditions/) and the
 * dashboard's condition builder (dashboard/src/components/conditions.tsx) import this one copy.
 */

/** The longest event name (the same bound as schemas/events.ts; a test keeps the two equal). */
export const MAX_EVENT_NAME = 100;

export const OPERATORS = [
  "equals",
  "notEquals",
  "contains",
  "notContains",
  "greaterThan",
  "lessThan",
  "greaterThanOrEqual",
  "lessThanOrEqual",
  "exists",
  "notExists",
  "within",
  "olderThan",
  "triggered",
  "notTriggered",
  "triggeredWithin",
  "triggeredOlderThan",
] as const;
export type Operator = (typeof OPERATORS)[number];

export const TIME_UNITS = ["minutes", "hours", "days"] as const;
export type TimeUnit = (typeof TIME_UNITS)[number];
export const UNIT_MS: Record<TimeUnit, number> = { minutes: 60_000, hours: 3_600_000, days: 86_400_000 };

export const EMAIL_ACTIVITIES = ["sent", "delivered", "opened", "clicked", "bounced", "complained"] as const;
export type EmailActivity = (typeof EMAIL_ACTIVITIES)[number];

/** How a field names a data key, an event and an email activity: `data.plan`, `event.signed-up`, `email.opened`. */
export const FIELD_PREFIXES = { data: "data.", event: "event.", activity: "email." } as const;

/** `data.<key>`: letters, digits, `_` and `-`, with `.` for nesting. */
const DATA_FIELD = /^data\.([A-Za-z0-9_-]{1,64})(\.[A-Za-z0-9_-]{1,64}){0,7}$/;

/** What a filter's `field` names, once parsed. */
export type FieldRef =
  | { kind: "email" }
  | { kind: "subscribed" }
  | { kind: "segment" }
  | { kind: "timestamp"; column: "createdAt" | "updatedAt" }
  | { kind: "data"; path: string[] }
  | { kind: "event"; name: string }
  | { kind: "activity"; activity: EmailActivity };

export function parseField(field: string): FieldRef | undefined {
  if (field === "email") return { kind: "email" };
  if (field === "subscribed") return { kind: "subscribed" };
  if (field === "segment") return { kind: "segment" };
  if (field === "createdAt" || field === "updatedAt") return { kind: "timestamp", column: field };
  if (DATA_FIELD.test(field)) return { kind: "data", path: field.slice(FIELD_PREFIXES.data.length).split(".") };
  if (field.startsWith(FIELD_PREFIXES.event)) {
    const name = field.slice(FIELD_PREFIXES.event.length).trim();
    if (name.length >= 1 && name.length <= MAX_EVENT_NAME && !/[\u0000-\u001f\u007f]/.test(name)) return { kind: "event", name };
    return undefined;
  }
  if (field.startsWith(FIELD_PREFIXES.activity)) {
    const activity = field.slice(FIELD_PREFIXES.activity.length);
    if ((EMAIL_ACTIVITIES as readonly string[]).includes(activity)) return { kind: "activity", activity: activity as EmailActivity };
  }
  return undefined;
}

/**
 * What an operator's `value` must be: none; a non-empty string; a boolean; a string, number or boolean
 * (scalar); a string or number (ordered); a date (ISO 8601 or epoch milliseconds); a positive number
 * of `unit`s (span).
 */
export type ValueKind = "none" | "string" | "boolean" | "scalar" | "ordered" | "date" | "span";

/** Which operators each kind of field takes, and what `value` each expects. */
export const OPERATOR_VALUES: Record<FieldRef["kind"], Partial<Record<Operator, ValueKind>>> = {
  email: { equals: "string", notEquals: "string", contains: "string", notContains: "string", exists: "none", notExists: "none" },
  subscribed: { equals: "boolean", notEquals: "boolean", exists: "none", notExists: "none" },
  /** `segment equals <id>`: the contact is a member of that static segment (notEquals: is not). */
  segment: { equals: "string", notEquals: "string" },
  timestamp: {
    equals: "date",
    notEquals: "date",
    greaterThan: "date",
    lessThan: "date",
    greaterThanOrEqual: "date",
    lessThanOrEqual: "date",
    exists: "none",
    notExists: "none",
    within: "span",
    olderThan: "span",
  },
  data: {
    equals: "scalar",
    notEquals: "scalar",
    contains: "string",
    notContains: "string",
    greaterThan: "ordered",
    lessThan: "ordered",
    greaterThanOrEqual: "ordered",
    lessThanOrEqual: "ordered",
    exists: "none",
    notExists: "none",
  },
  event: { triggered: "none", notTriggered: "none", triggeredWithin: "span", triggeredOlderThan: "span" },
  activity: { triggered: "none", notTriggered: "none", triggeredWithin: "span", triggeredOlderThan: "span" },
};

export const FIELD_HELP =
  "email, subscribed, segment (a static segment's id: its members), createdAt, updatedAt, data.<key> (letters, digits, _ and -, . for nesting), event.<name>, or email.<sent|delivered|opened|clicked|bounced|complained>";

/** A date value as milliseconds since the epoch: an ISO 8601 string or a number of milliseconds. */
export function timestampOf(value: unknown): number | undefined {
  if (typeof value === "number") return Number.isFinite(value) ? value : undefined;
  if (typeof value !== "string" || !/^\d{4}-\d{2}-\d{2}([T ][\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(value)) return undefined;
  const ms = Date.parse(value);
  return Number.isFinite(ms) ? ms : undefined;
}
