import { sql, type SQL } from "drizzle-orm";
import { contacts } from "../../db/schema";
import { likeContains } from "../../lib/sql";
import { parseField, timestampOf, UNIT_MS, type Condition, type EmailActivity, type Filter } from "../../schemas/conditions";

/** The email column that records each activity (any email to the contact reached that state). */
export const ACTIVITY_COLUMNS: Record<EmailActivity, string> = {
  sent: "sent_at",
  delivered: "delivered_at",
  opened: "opened_at",
  clicked: "clicked_at",
  bounced: "bounced_at",
  complained: "complained_at",
};

/** JSON path of a validated `data.<key>` (keys are [A-Za-z0-9_-]); still bound as a parameter, never spliced. */
export const jsonPath = (path: string[]) => `$${path.map((key) => `."${key}"`).join("")}`;

export const spanCutoff = (filter: Filter, now: number) => now - Number(filter.value) * UNIT_MS[filter.unit!];

const TRUE = sql`1`;
const FALSE = sql`0`;

function dataFilter(filter: Filter, path: string): SQL {
  const type = sql`json_type(${contacts.data}, ${path})`;
  const present = sql`COALESCE(${type}, 'null') <> 'null'`;
  const value = filter.value;
  const typed = (compare: (extracted: SQL) => SQL): SQL => {
    const extracted = sql`json_extract(${contacts.data}, ${path})`;
    if (typeof value === "number") return sql`(${type} IN ('integer', 'real') AND ${compare(extracted)})`;
    return sql`(${type} = 'text' AND ${compare(extracted)})`;
  };
  const equals = () => (typeof value === "boolean" ? sql`${type} = ${value ? "true" : "false"}` : typed((x) => sql`${x} = ${value}`));
  const contains = () => sql`(${type} = 'text' AND json_extract(${contacts.data}, ${path}) LIKE ${likeContains(String(value))} ESCAPE '\\')`;
  switch (filter.operator) {
    case "exists":
      return present;
    case "notExists":
      return sql`COALESCE(${type}, 'null') = 'null'`;
    case "equals":
      return equals();
    case "notEquals":
      return sql`(${present} AND NOT ${equals()})`;
    case "contains":
      return contains();
    case "notContains":
      return sql`(${present} AND NOT ${contains()})`;
    case "greaterThan":
      return typed((x) => sql`${x} > ${value}`);
    case "lessThan":
      return typed((x) => sql`${x} < ${value}`);
    case "greaterThanOrEqual":
      return typed((x) => sql`${x} >= ${value}`);
    case "lessThanOrEqual":
      return typed((x) => sql`${x} <= ${value}`);
    default:
      throw new Error(`unreachable: ${filter.operator} on data`);
  }
}

function timestampFilter(filter: Filter, column: SQL, now: number): SQL {
  switch (filter.operator) {
    case "exists":
      return TRUE;
    case "notExists":
      return FALSE;
    case "within":
      return sql`${column} >= ${spanCutoff(filter, now)}`;
    case "olderThan":
      return sql`${column} < ${spanCutoff(filter, now)}`;
  }
  const at = timestampOf(filter.value)!;
  const op = { equals: "=", notEquals: "<>", greaterThan: ">", lessThan: "<", greaterThanOrEqual: ">=", lessThanOrEqual: "<=" }[filter.operator as "equals"];
  return sql`${column} ${sql.raw(op)} ${at}`;
}

/** triggered / notTriggered / triggeredWithin / triggeredOlderThan over one contact's rows of `from` where `match` holds. */
function historyFilter(filter: Filter, from: SQL, at: SQL, match: SQL, now: number): SQL {
  switch (filter.operator) {
    case "triggered":
      return sql`EXISTS (SELECT 1 FROM ${from} WHERE ${match})`;
    case "notTriggered":
      return sql`NOT EXISTS (SELECT 1 FROM ${from} WHERE ${match})`;
    case "triggeredWithin":
      return sql`EXISTS (SELECT 1 FROM ${from} WHERE ${match} AND ${at} >= ${spanCutoff(filter, now)})`;
    case "triggeredOlderThan":
      // Had it, but not since: the latest occurrence is before the cutoff (NULL, never had it, does not match).
      return sql`COALESCE((SELECT max(${at}) FROM ${from} WHERE ${match}) < ${spanCutoff(filter, now)}, 0)`;
    default:
      throw new Error(`unreachable: ${filter.operator} on history`);
  }
}

function compileFilter(filter: Filter, now: number): SQL {
  const ref = parseField(filter.field);
  if (!ref) throw new Error(`unvalidated field ${filter.field}`);
  switch (ref.kind) {
    case "email": {
      const value = String(filter.value ?? "").toLowerCase();
      switch (filter.operator) {
        case "exists":
          return TRUE;
        case "notExists":
          return FALSE;
        case "equals":
          return sql`${contacts.email} = ${value}`;
        case "notEquals":
          return sql`${contacts.email} <> ${value}`;
        case "contains":
          return sql`${contacts.email} LIKE ${likeContains(value)} ESCAPE '\\'`;
        case "notContains":
          return sql`${contacts.email} NOT LIKE ${likeContains(value)} ESCAPE '\\'`;
      }
      break;
    }
    case "subscribed":
      switch (filter.operator) {
        case "exists":
          return TRUE;
        case "notExists":
          return FALSE;
        case "equals":
          return sql`${contacts.subscribed} = ${filter.value ? 1 : 0}`;
        case "notEquals":
          return sql`${contacts.subscribed} <> ${filter.value ? 1 : 0}`;
      }
      break;
    case "segment": {
      // A static segment's members (segment_members' primary key answers it); any other id matches nobody.
      const member = sql`EXISTS (SELECT 1 FROM segment_members AS cond_sm WHERE cond_sm.segment_id = ${String(filter.value)} AND cond_sm.contact_id = ${contacts.id})`;
      if (filter.operator === "equals") return member;
      if (filter.operator === "notEquals") return sql`NOT ${member}`;
      break;
    }
    case "timestamp":
      return timestampFilter(filter, ref.column === "createdAt" ? sql`${contacts.createdAt}` : sql`${contacts.updatedAt}`, now);
    case "data":
      return dataFilter(filter, jsonPath(ref.path));
    case "event":
      return historyFilter(
        filter,
        sql`events AS cond_ev`,
        sql`cond_ev.created_at`,
        sql`cond_ev.contact_id = ${contacts.id} AND cond_ev.name = ${ref.name}`,
        now,
      );
    case "activity": {
      const column = sql.raw(`cond_em.${ACTIVITY_COLUMNS[ref.activity]}`);
      return historyFilter(filter, sql`emails AS cond_em`, column, sql`cond_em.contact_id = ${contacts.id} AND ${column} IS NOT NULL`, now);
    }
  }
  throw new Error(`unvalidated operator ${filter.operator} on ${filter.field}`);
}

/**
 * The condition as one SQL boolean over the `contacts` table (use it in a
 * WHERE on `contacts`, unaliased). Every value, data key path and event name is
 * a bound parameter; only fixed operators and column names are SQL text.
 */
export function compileCondition(condition: Condition, now: Date | number = Date.now()): SQL {
  const at = typeof now === "number" ? now : now.getTime();
  const groups = condition.groups.map((group) => {
    const parts = group.filters.map((f) => sql`(${compileFilter(f, at)})`);
    if (group.conditions) parts.push(sql`(${compileCondition(group.conditions, at)})`);
    return sql`(${sql.join(parts, sql` AND `)})`;
  });
  return sql`(${sql.join(groups, condition.logic === "OR" ? sql` OR ` : sql` AND `)})`;
}
