import { env } from "cloudflare:workers";
import { and, eq } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { getDb } from "../../../src/db/client";
import { contacts, emails, events } from "../../../src/db/schema";
import { fieldErrorsFromZod } from "../../../src/lib/errors";
import { newId } from "../../../src/lib/ids";
import { compileCondition, ConditionSchema, contactMatches, evaluateCondition, loadContactActivity, type Condition } from "../../../src/services/conditions";
import { newProject } from "../../support/http";

const db = getDb(env.DB);
const NOW = Date.UTC(2026, 5, 1, 12, 0, 0);
const MIN = 60_000;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;

// label -> contact; emails are stored lower-cased as every write path does.
const PEOPLE = {
  ada: {
    email: "ada@example.com",
    subscribed: true,
    data: { plan: "pro", age: 36, score: 7.5, vip: true, name: "Ada Lovelace", nested: { tier: "gold" }, tags: ["x"], note: "100%_off", "dash-key": "d" },
    createdAt: NOW - 10 * DAY,
  },
  bob: {
    email: "bob@test.org",
    subscribed: false,
    data: { plan: "free", age: "36", vip: false, name: "bob", nested: { tier: 1 }, note: "50% off", zero: 0 },
    createdAt: NOW - 2 * HOUR,
  },
  carol: { email: "carol@example.com", subscribed: true, data: { plan: null, age: 17, name: "ÉLODIE", note: "a\\b" }, createdAt: NOW - 40 * DAY },
  dave: { email: "dave@sub.example.com", subscribed: true, data: {}, createdAt: NOW - 1 * MIN },
  eve: {
    email: "eve@x.io",
    subscribed: true,
    data: { plan: "PRO", age: 36.0, score: 10, name: "élodie", "a'b": 1, emoji: "😀", bmp: "\uffff" },
    createdAt: NOW - 5 * DAY,
  },
} as const;
type Label = keyof typeof PEOPLE;
const LABELS = Object.keys(PEOPLE) as Label[];

let projectId = "";
const idOf = {} as Record<Label, string>;

beforeAll(async () => {
  const project = await newProject("conditions");
  projectId = project.id;
  const other = await newProject("other");
  for (const label of LABELS) {
    const p = PEOPLE[label];
    idOf[label] = newId();
    await db.insert(contacts).values({
      id: idOf[label],
      projectId,
      email: p.email,
      subscribed: p.subscribed,
      data: p.data as Record<string, unknown>,
      createdAt: new Date(p.createdAt),
      updatedAt: new Date(p.createdAt + MIN),
    });
  }
  // A look-alike in another project never matches.
  await db.insert(contacts).values({ id: newId(), projectId: other.id, email: "ada@example.com", data: { plan: "pro" } });
  const event = (label: Label, name: string, ago: number) =>
    db.insert(events).values({ id: newId(), projectId, contactId: idOf[label], name, createdAt: new Date(NOW - ago) });
  await event("ada", "signed-up", DAY);
  await event("ada", "purchase", 20 * DAY);
  await event("bob", "signed-up", 3 * HOUR);
  await event("carol", "purchase", 2 * DAY);
  await event("carol", "purchase", 30 * DAY);
  await event("eve", "x' OR '1'='1", 3 * HOUR);
  const email = (label: Label, times: Partial<Record<"sentAt" | "deliveredAt" | "openedAt" | "clickedAt" | "bouncedAt" | "complainedAt", number>>) => {
    const id = newId();
    return db.insert(emails).values({
      id,
      projectId,
      contactId: idOf[label],
      sendId: id,
      fromAddress: "a@b.test",
      toAddress: PEOPLE[label].email,
      subject: "s",
      html: "h",
      messageId: id,
      ...Object.fromEntries(Object.entries(times).map(([k, v]) => [k, new Date(NOW - v!)])),
    });
  };
  await email("ada", { sentAt: HOUR, deliveredAt: HOUR, openedAt: 30 * MIN });
  await email("bob", { sentAt: 10 * DAY, bouncedAt: 10 * DAY });
  await email("carol", { sentAt: 40 * DAY, deliveredAt: 40 * DAY });
  await email("carol", { sentAt: 3 * DAY });
});

const parse = (condition: unknown): Condition => {
  const parsed = ConditionSchema.safeParse(condition);
  if (!parsed.success) throw new Error(JSON.stringify(fieldErrorsFromZod(parsed.error, "condition")));
  return parsed.data;
};

async function sqlMatches(condition: Condition): Promise<Label[]> {
  const rows = await db
    .select({ id: contacts.id })
    .from(contacts)
    .where(and(eq(contacts.projectId, projectId), compileCondition(condition, NOW)));
  const ids = new Set(rows.map((r) => r.id));
  return LABELS.filter((l) => ids.has(idOf[l]));
}

async function memoryMatches(condition: Condition): Promise<Label[]> {
  const rows = await db.select().from(contacts).where(eq(contacts.projectId, projectId));
  const out: Label[] = [];
  for (const label of LABELS) {
    const contact = rows.find((r) => r.id === idOf[label])!;
    if (evaluateCondition(condition, contact, await loadContactActivity(db, contact.id), NOW)) out.push(label);
  }
  return out;
}

const one = (field: string, operator: string, value?: unknown, unit?: string) => ({
  logic: "AND",
  groups: [{ filters: [{ field, operator, ...(value === undefined ? {} : { value }), ...(unit ? { unit } : {}) }] }],
});

// [description, condition, expected matches]: every field kind with every operator it takes.
const TABLE: [string, unknown, Label[]][] = [
  // email: case-insensitive
  ["email equals, other case", one("email", "equals", "ADA@Example.COM"), ["ada"]],
  ["email notEquals", one("email", "notEquals", "Ada@example.com"), ["bob", "carol", "dave", "eve"]],
  ["email contains, case-insensitive", one("email", "contains", "EXAMPLE.com"), ["ada", "carol", "dave"]],
  ["email notContains", one("email", "notContains", "example"), ["bob", "eve"]],
  ["email contains a LIKE wildcard literally", one("email", "contains", "%"), []],
  ["email contains _ literally", one("email", "contains", "_"), []],
  ["email exists", one("email", "exists"), ["ada", "bob", "carol", "dave", "eve"]],
  ["email notExists", one("email", "notExists"), []],
  ["email equals an injection attempt", one("email", "equals", "' OR 1=1 --"), []],
  // subscribed
  ["subscribed equals true", one("subscribed", "equals", true), ["ada", "carol", "dave", "eve"]],
  ["subscribed equals false", one("subscribed", "equals", false), ["bob"]],
  ["subscribed notEquals true", one("subscribed", "notEquals", true), ["bob"]],
  ["subscribed exists", one("subscribed", "exists"), ["ada", "bob", "carol", "dave", "eve"]],
  ["subscribed notExists", one("subscribed", "notExists"), []],
  // timestamps
  ["createdAt within 1 day", one("createdAt", "within", 1, "days"), ["bob", "dave"]],
  ["createdAt within 90 minutes", one("createdAt", "within", 90, "minutes"), ["dave"]],
  ["createdAt olderThan 7 days", one("createdAt", "olderThan", 7, "days"), ["ada", "carol"]],
  ["createdAt olderThan 1 hours", one("createdAt", "olderThan", 1, "hours"), ["ada", "bob", "carol", "eve"]],
  ["createdAt greaterThan ISO date", one("createdAt", "greaterThan", new Date(NOW - 6 * DAY).toISOString()), ["bob", "dave", "eve"]],
  ["createdAt lessThan ISO date", one("createdAt", "lessThan", new Date(NOW - 6 * DAY).toISOString()), ["ada", "carol"]],
  ["createdAt greaterThanOrEqual exact ms", one("createdAt", "greaterThanOrEqual", NOW - 5 * DAY), ["bob", "dave", "eve"]],
  ["createdAt lessThanOrEqual exact ms", one("createdAt", "lessThanOrEqual", NOW - 5 * DAY), ["ada", "carol", "eve"]],
  ["createdAt equals", one("createdAt", "equals", new Date(NOW - MIN).toISOString()), ["dave"]],
  ["createdAt notEquals", one("createdAt", "notEquals", NOW - MIN), ["ada", "bob", "carol", "eve"]],
  ["updatedAt within 1 day", one("updatedAt", "within", 1, "days"), ["bob", "dave"]],
  ["updatedAt exists", one("updatedAt", "exists"), ["ada", "bob", "carol", "dave", "eve"]],
  // data: strings, case-sensitive equality
  ["data equals string", one("data.plan", "equals", "pro"), ["ada"]],
  ["data equals is case-sensitive", one("data.plan", "equals", "PRO"), ["eve"]],
  ["data notEquals skips missing and null", one("data.plan", "notEquals", "pro"), ["bob", "eve"]],
  ["data contains, case-insensitive A-Z", one("data.name", "contains", "LOVE"), ["ada"]],
  ["data contains non-ASCII is exact (as SQLite LIKE)", one("data.name", "contains", "élo"), ["eve"]],
  ["data contains %_ literally", one("data.note", "contains", "%_"), ["ada"]],
  ["data contains % literally", one("data.note", "contains", "%"), ["ada", "bob"]],
  ["data contains backslash literally", one("data.note", "contains", "\\"), ["carol"]],
  ["data notContains skips missing", one("data.note", "notContains", "%"), ["carol"]],
  ["data notContains on a number is a present non-match", one("data.age", "notContains", "3"), ["ada", "carol", "eve"]],
  ["data contains never matches a number", one("data.age", "contains", "3"), ["bob"]],
  // data: numbers vs strings
  ["data equals number 36 (36.0 too, not the string)", one("data.age", "equals", 36), ["ada", "eve"]],
  ["data equals string '36' (not the numbers)", one("data.age", "equals", "36"), ["bob"]],
  ["data notEquals number", one("data.age", "notEquals", 36), ["bob", "carol"]],
  ["data greaterThan number", one("data.age", "greaterThan", 20), ["ada", "eve"]],
  ["data lessThan number skips strings", one("data.age", "lessThan", 100), ["ada", "carol", "eve"]],
  ["data greaterThanOrEqual real", one("data.score", "greaterThanOrEqual", 7.5), ["ada", "eve"]],
  ["data lessThanOrEqual real", one("data.score", "lessThanOrEqual", 7.5), ["ada"]],
  ["data greaterThan string compares as strings", one("data.age", "greaterThan", "3"), ["bob"]],
  ["data string order by code point (astral above U+FFFF)", one("data.emoji", "greaterThan", "\uffff"), ["eve"]],
  ["data lessThan by code point", one("data.bmp", "lessThan", "😀"), ["eve"]],
  ["data equals 0 is not missing", one("data.zero", "equals", 0), ["bob"]],
  // data: booleans
  ["data equals true", one("data.vip", "equals", true), ["ada"]],
  ["data equals false", one("data.vip", "equals", false), ["bob"]],
  ["data notEquals true skips missing", one("data.vip", "notEquals", true), ["bob"]],
  ["data equals 1 is not true", one("data.vip", "equals", 1), []],
  // data: exists, nesting, arrays, odd keys
  ["data exists (null counts as missing)", one("data.plan", "exists"), ["ada", "bob", "eve"]],
  ["data notExists", one("data.plan", "notExists"), ["carol", "dave"]],
  ["data nested key", one("data.nested.tier", "equals", "gold"), ["ada"]],
  ["data nested number", one("data.nested.tier", "equals", 1), ["bob"]],
  ["data path does not index arrays", one("data.tags.0", "exists"), []],
  ["data object exists", one("data.nested", "exists"), ["ada", "bob"]],
  ["data dash key", one("data.dash-key", "equals", "d"), ["ada"]],
  ["data value with an injection attempt", one("data.plan", "equals", "pro' OR '1'='1"), []],
  ["data value with a JSON path attempt", one("data.plan", "contains", '") OR 1=1 --'), []],
  // events
  ["event triggered", one("event.signed-up", "triggered"), ["ada", "bob"]],
  ["event notTriggered", one("event.signed-up", "notTriggered"), ["carol", "dave", "eve"]],
  ["event triggeredWithin 12 hours", one("event.signed-up", "triggeredWithin", 12, "hours"), ["bob"]],
  ["event triggeredWithin 7 days (latest counts)", one("event.purchase", "triggeredWithin", 7, "days"), ["carol"]],
  ["event triggeredOlderThan 7 days: had it, not since", one("event.purchase", "triggeredOlderThan", 7, "days"), ["ada"]],
  ["event name with an injection attempt is just a name", one("event.x' OR '1'='1", "triggered"), ["eve"]],
  ["unknown event never triggered", one("event.nothing", "triggered"), []],
  // email activity
  ["email.sent triggered", one("email.sent", "triggered"), ["ada", "bob", "carol"]],
  ["email.opened triggered", one("email.opened", "triggered"), ["ada"]],
  ["email.opened notTriggered", one("email.opened", "notTriggered"), ["bob", "carol", "dave", "eve"]],
  ["email.bounced triggeredWithin 30 days", one("email.bounced", "triggeredWithin", 30, "days"), ["bob"]],
  ["email.delivered triggeredOlderThan 7 days", one("email.delivered", "triggeredOlderThan", 7, "days"), ["carol"]],
  ["email.sent triggeredOlderThan 2 days", one("email.sent", "triggeredOlderThan", 2, "days"), ["bob", "carol"]],
  ["email.clicked triggered", one("email.clicked", "triggered"), []],
  ["email.complained notTriggered", one("email.complained", "notTriggered"), ["ada", "bob", "carol", "dave", "eve"]],
  // logic and nesting
  [
    "AND of two filters in one group",
    {
      logic: "AND",
      groups: [
        {
          filters: [
            { field: "subscribed", operator: "equals", value: true },
            { field: "data.age", operator: "equals", value: 36 },
          ],
        },
      ],
    },
    ["ada", "eve"],
  ],
  [
    "OR of groups",
    {
      logic: "OR",
      groups: [
        { filters: [{ field: "data.plan", operator: "equals", value: "free" }] },
        { filters: [{ field: "email", operator: "contains", value: "x.io" }] },
      ],
    },
    ["bob", "eve"],
  ],
  [
    "AND of groups",
    { logic: "AND", groups: [{ filters: [{ field: "data.age", operator: "exists" }] }, { filters: [{ field: "event.purchase", operator: "triggered" }] }] },
    ["ada", "carol"],
  ],
  [
    "nested condition 3 levels deep",
    {
      logic: "AND",
      groups: [
        {
          filters: [{ field: "subscribed", operator: "equals", value: true }],
          conditions: {
            logic: "OR",
            groups: [
              { filters: [{ field: "data.plan", operator: "equals", value: "PRO" }] },
              {
                filters: [],
                conditions: { logic: "AND", groups: [{ filters: [{ field: "createdAt", operator: "olderThan", value: 30, unit: "days" }] }] },
              },
            ],
          },
        },
      ],
    },
    ["carol", "eve"],
  ],
];

describe("condition language: SQL and in-memory agree", () => {
  it.each(TABLE)("%s", async (_name, raw, expected) => {
    const condition = parse(raw);
    const [fromSql, fromMemory] = await Promise.all([sqlMatches(condition), memoryMatches(condition)]);
    expect(fromSql).toEqual(expected);
    expect(fromMemory).toEqual(expected);
  });

  it("binds every value: no user text appears in the SQL", () => {
    const condition = parse({
      logic: "OR",
      groups: [
        { filters: [{ field: "data.plan", operator: "equals", value: "pro' OR '1'='1" }] },
        { filters: [{ field: "event.x' OR '1'='1", operator: "triggered" }] },
        { filters: [{ field: "data.plan-x", operator: "contains", value: "%'; DROP TABLE contacts; --" }] },
      ],
    });
    const query = db.select({ id: contacts.id }).from(contacts).where(compileCondition(condition, NOW)).toSQL();
    expect(query.sql).not.toMatch(/OR '1'|DROP|plan/);
    expect(query.params).toContain("pro' OR '1'='1");
    expect(query.params).toContain('$."plan-x"');
    expect(query.params.length).toBeLessThan(100);
  });

  it("a condition with the most filters allowed stays under D1's 100 bound parameters", () => {
    const filters = Array.from({ length: 20 }, (_, i) => ({ field: `data.k${i}`, operator: "notContains", value: "x" }));
    const condition = parse({ logic: "AND", groups: [{ filters }] });
    const query = db
      .select({ id: contacts.id })
      .from(contacts)
      .where(and(eq(contacts.projectId, "p"), compileCondition(condition, NOW)))
      .toSQL();
    expect(query.params.length).toBeLessThanOrEqual(90);
  });

  it("contactMatches answers one contact with the SQL meaning", async () => {
    const condition = parse(one("data.plan", "equals", "pro"));
    expect(await contactMatches(db, condition, projectId, idOf.ada, NOW)).toBe(true);
    expect(await contactMatches(db, condition, projectId, idOf.eve, NOW)).toBe(false);
    expect(await contactMatches(db, condition, "another-project", idOf.ada, NOW)).toBe(false);
  });
});

describe("condition language: validation", () => {
  const errorsOf = (raw: unknown) => {
    const parsed = ConditionSchema.safeParse(raw);
    expect(parsed.success).toBe(false);
    return fieldErrorsFromZod(parsed.error!, "condition").map((e) => e.field);
  };
  const withFilter = (filter: unknown) => ({ logic: "AND", groups: [{ filters: [{ field: "email", operator: "exists" }, filter] }] });

  it.each([
    ["unknown operator", withFilter({ field: "email", operator: "startsWith", value: "a" }), "condition.groups.0.filters.1.operator"],
    ["operator not for the field", withFilter({ field: "email", operator: "greaterThan", value: "a" }), "condition.groups.0.filters.1.operator"],
    ["event operator on data", withFilter({ field: "data.plan", operator: "triggered" }), "condition.groups.0.filters.1.operator"],
    ["unknown field", withFilter({ field: "name", operator: "equals", value: "a" }), "condition.groups.0.filters.1.field"],
    ["injection in a data key", withFilter({ field: "data.plan') OR 1=1 --", operator: "exists" }), "condition.groups.0.filters.1.field"],
    ["quote in a data key", withFilter({ field: 'data.a"b', operator: "exists" }), "condition.groups.0.filters.1.field"],
    ["unknown email activity", withFilter({ field: "email.read", operator: "triggered" }), "condition.groups.0.filters.1.field"],
    ["missing unit for within", withFilter({ field: "createdAt", operator: "within", value: 3 }), "condition.groups.0.filters.1.unit"],
    ["string value for within", withFilter({ field: "createdAt", operator: "within", value: "3", unit: "days" }), "condition.groups.0.filters.1.value"],
    ["bad unit", withFilter({ field: "createdAt", operator: "within", value: 3, unit: "weeks" }), "condition.groups.0.filters.1.unit"],
    ["boolean for contains", withFilter({ field: "data.plan", operator: "contains", value: true }), "condition.groups.0.filters.1.value"],
    ["string for subscribed", withFilter({ field: "subscribed", operator: "equals", value: "yes" }), "condition.groups.0.filters.1.value"],
    ["object value", withFilter({ field: "data.plan", operator: "equals", value: { a: 1 } }), "condition.groups.0.filters.1.value"],
    ["malformed date", withFilter({ field: "createdAt", operator: "greaterThan", value: "yesterday" }), "condition.groups.0.filters.1.value"],
    ["missing value", withFilter({ field: "data.plan", operator: "equals" }), "condition.groups.0.filters.1.value"],
    ["unknown filter key", withFilter({ field: "email", operator: "exists", negate: true }), "condition.groups.0.filters.1"],
    ["bad logic", { logic: "XOR", groups: [{ filters: [{ field: "email", operator: "exists" }] }] }, "condition.logic"],
    ["no groups", { logic: "AND", groups: [] }, "condition.groups"],
    ["empty group", { logic: "AND", groups: [{ filters: [] }] }, "condition.groups.0.filters"],
    ["too many groups", { logic: "OR", groups: Array.from({ length: 11 }, () => ({ filters: [{ field: "email", operator: "exists" }] })) }, "condition.groups"],
    [
      "too many filters in all",
      { logic: "OR", groups: Array.from({ length: 3 }, () => ({ filters: Array.from({ length: 7 }, () => ({ field: "email", operator: "exists" })) })) },
      "condition.groups",
    ],
    [
      "nested 4 levels deep",
      {
        logic: "AND",
        groups: [
          {
            filters: [],
            conditions: {
              logic: "AND",
              groups: [
                {
                  filters: [],
                  conditions: {
                    logic: "AND",
                    groups: [{ filters: [], conditions: { logic: "AND", groups: [{ filters: [{ field: "email", operator: "exists" }] }] } }],
                  },
                },
              ],
            },
          },
        ],
      },
      "condition.groups.0.conditions.groups.0.conditions.groups.0.conditions",
    ],
  ])("%s is refused with its path", (_name, raw, path) => {
    expect(errorsOf(raw)).toContain(path);
  });
});
