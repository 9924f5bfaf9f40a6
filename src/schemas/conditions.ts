import * as z from "../lib/zod";
import { FIELD_HELP, OPERATOR_VALUES, OPERATORS, parseField, TIME_UNITS, timestampOf, UNIT_MS } from "./condition-grammar";

// The grammar (fields, operators, value kinds) is zod-free in condition-grammar.ts, shared with the dashboard.
export {
  EMAIL_ACTIVITIES,
  type EmailActivity,
  type FieldRef,
  MAX_EVENT_NAME,
  type Operator,
  OPERATORS,
  parseField,
  TIME_UNITS,
  type TimeUnit,
  timestampOf,
  UNIT_MS,
} from "./condition-grammar";

/** Limits that keep a compiled condition under D1's 100 bound parameters (at most 4 per filter). */
export const MAX_GROUPS = 10;
export const MAX_FILTERS_PER_GROUP = 20;
export const MAX_FILTERS_TOTAL = 20;
export const MAX_DEPTH = 3;
export const MAX_STRING_VALUE = 1000;
/** A relative time span may reach back at most ten years. */
const MAX_SPAN_DAYS = 3650;

export const FilterSchema = z
  .object({
    field: z.string().min(1).max(200).openapi({ example: "data.plan", description: FIELD_HELP }),
    operator: z.enum(OPERATORS),
    value: z
      .union([z.string().max(MAX_STRING_VALUE), z.number().finite(), z.boolean()])
      .optional()
      .openapi({
        description: "String, number or boolean, compared by its JSON type; a number of units for within/olderThan/triggeredWithin/triggeredOlderThan",
      }),
    unit: z.enum(TIME_UNITS).optional().openapi({ description: "Required for within, olderThan, triggeredWithin and triggeredOlderThan" }),
  })
  .strict()
  .superRefine((filter, ctx) => {
    const ref = parseField(filter.field);
    if (!ref) {
      ctx.addIssue({ code: "custom", path: ["field"], message: `Unknown field; use ${FIELD_HELP}` });
      return;
    }
    const allowed = OPERATOR_VALUES[ref.kind];
    const expects = allowed[filter.operator];
    if (!expects) {
      ctx.addIssue({
        code: "custom",
        path: ["operator"],
        message: `Operator ${filter.operator} does not apply to ${filter.field}; use one of ${Object.keys(allowed).join(", ")}`,
      });
      return;
    }
    const value = filter.value;
    const bad = (message: string) => ctx.addIssue({ code: "custom", path: ["value"], message });
    switch (expects) {
      case "none":
        break;
      case "string":
        if (typeof value !== "string" || value.length === 0) bad(`${filter.operator} on ${filter.field} needs a non-empty string value`);
        break;
      case "boolean":
        if (typeof value !== "boolean") bad(`${filter.operator} on ${filter.field} needs a boolean value`);
        break;
      case "scalar":
        if (value === undefined) bad(`${filter.operator} needs a string, number or boolean value`);
        break;
      case "ordered":
        if (typeof value !== "string" && typeof value !== "number") bad(`${filter.operator} needs a number or string value`);
        break;
      case "date":
        if (timestampOf(value) === undefined) bad(`${filter.operator} on ${filter.field} needs an ISO 8601 date-time or milliseconds since the epoch`);
        break;
      case "span":
        if (typeof value !== "number" || !(value > 0)) bad(`${filter.operator} needs a positive number of ${filter.unit ?? "units"}`);
        else if (filter.unit && value * UNIT_MS[filter.unit] > MAX_SPAN_DAYS * UNIT_MS.days)
          bad(`${filter.operator} may reach back at most ${MAX_SPAN_DAYS} days`);
        if (!filter.unit) ctx.addIssue({ code: "custom", path: ["unit"], message: `${filter.operator} needs a unit: ${TIME_UNITS.join(", ")}` });
        break;
    }
  });

export type Filter = z.infer<typeof FilterSchema>;
export interface ConditionGroup {
  filters: Filter[];
  conditions?: Condition;
}
export interface Condition {
  logic: "AND" | "OR";
  groups: ConditionGroup[];
}

/** The condition schema for one nesting level; the deepest level's groups cannot nest further. */
function conditionAt(level: number): z.ZodType<Condition> {
  const group = z
    .object({
      filters: z.array(FilterSchema).max(MAX_FILTERS_PER_GROUP).default([]),
      conditions:
        level < MAX_DEPTH
          ? conditionAt(level + 1).optional()
          : z
              .unknown()
              .refine((v) => v === undefined, { message: `Conditions nest at most ${MAX_DEPTH} levels deep` })
              .optional()
              .openapi({ description: `Not allowed: conditions nest at most ${MAX_DEPTH} levels deep` }),
    })
    .strict()
    .refine((g) => g.filters.length > 0 || g.conditions !== undefined, {
      message: "A group needs at least one filter or a nested condition",
      path: ["filters"],
    });
  return z
    .object({
      logic: z.enum(["AND", "OR"]).default("AND").openapi({ description: "How groups combine; filters in a group are ANDed" }),
      groups: z.array(group).min(1).max(MAX_GROUPS),
    })
    .strict() as unknown as z.ZodType<Condition>;
}

export function countFilters(condition: Condition): number {
  return condition.groups.reduce((n, g) => n + g.filters.length + (g.conditions ? countFilters(g.conditions) : 0), 0);
}

export const ConditionSchema = conditionAt(1)
  .superRefine((condition, ctx) => {
    if (countFilters(condition) > MAX_FILTERS_TOTAL) {
      ctx.addIssue({ code: "custom", path: ["groups"], message: `A condition may have at most ${MAX_FILTERS_TOTAL} filters in all` });
    }
  })
  .openapi("Condition", {
    description:
      "`{logic, groups: [{filters: [{field, operator, value?, unit?}], conditions?}]}`: filters in a group are ANDed, groups combine by `logic`; a group may nest a condition (ANDed with its filters), at most 3 levels deep; at most 10 groups per level and 20 filters in all.",
    example: { logic: "AND", groups: [{ filters: [{ field: "data.plan", operator: "equals", value: "pro" }] }] },
  });
