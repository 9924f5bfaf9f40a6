/**
 * The condition language (CONTRACT.md "Audience filter and segments"), used by
 * segments, FILTERED campaign audiences and workflow CONDITION steps:
 * `{logic: "AND"|"OR", groups: [{filters: [{field, operator, value?, unit?}], conditions?}]}`.
 *
 * - `ConditionSchema` (zod): parses and validates a condition. Nest it in a body
 *   schema under the key whose name should prefix 422 paths, e.g.
 *   `condition.groups.0.filters.1.operator`. `Condition` is the parsed type.
 * - `compileCondition(condition, now)`: one parameterised SQL boolean over the
 *   `contacts` table (Drizzle `SQL`), for `WHERE contacts.project_id = ? AND <it>`.
 *   At most ~80 bound parameters (20 filters, at most 4 each).
 * - `evaluateCondition(condition, contact, {events, emailActivity}, now)`: the same
 *   meaning in memory for one contact; `loadContactActivity(db, contactId)`
 *   reads the activity it needs (latest time per event name and email activity).
 * - `contactMatches(db, condition, projectId, contactId, now)`: the SQL answer for one contact.
 *
 * Semantics: filters in a group AND, groups combine by `logic`, a nested
 * condition ANDs with its group's filters. `email` compares case-insensitively;
 * `data.<key>` values compare by JSON type (numbers as numbers, strings as
 * strings by code point, booleans as booleans; a number never equals a
 * string); `contains` is case-insensitive for A-Z; `notEquals`/`notContains`
 * (and every comparison) never match a missing or null field.
 */
export {
  ConditionSchema,
  FilterSchema,
  OPERATORS,
  TIME_UNITS,
  EMAIL_ACTIVITIES,
  MAX_FILTERS_TOTAL,
  MAX_DEPTH,
  parseField,
  type Condition,
  type ConditionGroup,
  type Filter,
  type Operator,
  type EmailActivity,
} from "../../schemas/conditions";
export { compileCondition } from "./sql";
export { evaluateCondition, type ConditionContact, type ContactActivity } from "./evaluate";
export { loadContactActivity, contactMatches } from "./activity";
