import { parseField, timestampOf, UNIT_MS, type Condition, type EmailActivity, type Filter } from "../../schemas/conditions";

/** The contact fields a condition reads (a Contact row fits). */
export interface ConditionContact {
  email: string;
  subscribed: boolean;
  data: Record<string, unknown> | null;
  createdAt: Date | number;
  updatedAt: Date | number;
}

/** What the contact did: events recorded and email activity (only the latest time per name matters). */
export interface ContactActivity {
  events?: { name: string; createdAt: Date | number }[];
  emailActivity?: { activity: EmailActivity; at: Date | number }[];
  /** The static segments the contact is a member of (ids). */
  segments?: string[];
}

const ms = (d: Date | number) => (typeof d === "number" ? d : d.getTime());

/** Lower-cases A-Z only, as SQLite's LIKE and lower() do. */
const asciiLower = (s: string) => s.replace(/[A-Z]/g, (c) => String.fromCharCode(c.charCodeAt(0) + 32));

/** SQLite's BINARY collation compares UTF-8 bytes, which is code point order (JS `<` compares UTF-16 units). */
function compareText(a: string, b: string): number {
  const x = [...a];
  const y = [...b];
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const d = x[i].codePointAt(0)! - y[i].codePointAt(0)!;
    if (d !== 0) return d;
  }
  return x.length - y.length;
}

/** A data value as SQLite's json_extract sees it: plain objects are descended into, arrays are not (keys are object keys). */
function dataValue(data: Record<string, unknown> | null, path: string[]): unknown {
  let current: unknown = data;
  for (const key of path) {
    if (current === null || typeof current !== "object" || Array.isArray(current) || !Object.hasOwn(current, key)) return undefined;
    current = (current as Record<string, unknown>)[key];
  }
  return current;
}

function compare(op: string, actual: unknown, expected: string | number): boolean {
  let d: number;
  if (typeof expected === "number") {
    if (typeof actual !== "number") return false;
    d = actual - expected;
  } else {
    if (typeof actual !== "string") return false;
    d = compareText(actual, expected);
  }
  switch (op) {
    case "greaterThan":
      return d > 0;
    case "lessThan":
      return d < 0;
    case "greaterThanOrEqual":
      return d >= 0;
    case "lessThanOrEqual":
      return d <= 0;
  }
  return false;
}

function dataFilter(filter: Filter, actual: unknown): boolean {
  const present = actual !== undefined && actual !== null;
  const value = filter.value;
  const equals = () => typeof actual === typeof value && actual === value;
  const contains = () => typeof actual === "string" && asciiLower(actual).includes(asciiLower(String(value)));
  switch (filter.operator) {
    case "exists":
      return present;
    case "notExists":
      return !present;
    case "equals":
      return equals();
    case "notEquals":
      return present && !equals();
    case "contains":
      return contains();
    case "notContains":
      return present && !contains();
    default:
      return compare(filter.operator, actual, value as string | number);
  }
}

function timestampFilter(filter: Filter, at: number, now: number): boolean {
  const cutoff = () => now - Number(filter.value) * UNIT_MS[filter.unit!];
  const value = timestampOf(filter.value);
  switch (filter.operator) {
    case "exists":
      return true;
    case "notExists":
      return false;
    case "within":
      return at >= cutoff();
    case "olderThan":
      return at < cutoff();
    case "equals":
      return at === value;
    case "notEquals":
      return at !== value;
    default:
      return compare(filter.operator, at, value!);
  }
}

function historyFilter(filter: Filter, times: number[], now: number): boolean {
  const latest = times.length > 0 ? Math.max(...times) : undefined;
  const cutoff = () => now - Number(filter.value) * UNIT_MS[filter.unit!];
  switch (filter.operator) {
    case "triggered":
      return latest !== undefined;
    case "notTriggered":
      return latest === undefined;
    case "triggeredWithin":
      return latest !== undefined && latest >= cutoff();
    case "triggeredOlderThan":
      return latest !== undefined && latest < cutoff();
  }
  return false;
}

function evaluateFilter(filter: Filter, contact: ConditionContact, activity: ContactActivity, now: number): boolean {
  const ref = parseField(filter.field);
  if (!ref) return false;
  switch (ref.kind) {
    case "email": {
      const email = contact.email.toLowerCase();
      const value = String(filter.value ?? "").toLowerCase();
      switch (filter.operator) {
        case "exists":
          return true;
        case "notExists":
          return false;
        case "equals":
          return email === value;
        case "notEquals":
          return email !== value;
        case "contains":
          return email.includes(value);
        case "notContains":
          return !email.includes(value);
      }
      return false;
    }
    case "subscribed":
      switch (filter.operator) {
        case "exists":
          return true;
        case "notExists":
          return false;
        case "equals":
          return contact.subscribed === filter.value;
        case "notEquals":
          return contact.subscribed !== filter.value;
      }
      return false;
    case "segment": {
      const member = (activity.segments ?? []).includes(String(filter.value));
      return filter.operator === "equals" ? member : filter.operator === "notEquals" ? !member : false;
    }
    case "timestamp":
      return timestampFilter(filter, ms(ref.column === "createdAt" ? contact.createdAt : contact.updatedAt), now);
    case "data":
      return dataFilter(filter, dataValue(contact.data, ref.path));
    case "event":
      return historyFilter(
        filter,
        (activity.events ?? []).filter((e) => e.name === ref.name).map((e) => ms(e.createdAt)),
        now,
      );
    case "activity":
      return historyFilter(
        filter,
        (activity.emailActivity ?? []).filter((e) => e.activity === ref.activity).map((e) => ms(e.at)),
        now,
      );
  }
}

/**
 * Evaluates a parsed condition against one contact in memory, with exactly the
 * meaning of `compileCondition` in SQL (the table test in
 * test/services/conditions/index.test.ts holds both to the same answers).
 */
export function evaluateCondition(condition: Condition, contact: ConditionContact, activity: ContactActivity = {}, now: Date | number = Date.now()): boolean {
  const at = ms(now);
  const groupMatches = condition.groups.map(
    (group) =>
      group.filters.every((f) => evaluateFilter(f, contact, activity, at)) &&
      (group.conditions === undefined || evaluateCondition(group.conditions, contact, activity, at)),
  );
  return condition.logic === "OR" ? groupMatches.some(Boolean) : groupMatches.every(Boolean);
}
