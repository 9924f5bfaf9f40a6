import type { JsonObject } from "../db/schema";
import { newId } from "../lib/ids";

/** One contact to create or update, by address. */
export interface ContactUpsertRow {
  /** Lower-case address (the caller validated it). */
  email: string;
  /** Given: applied to a new contact and, under "merge", to an existing one. Absent or null: the default for a new one, unchanged for an existing one. */
  subscribed?: boolean | null;
  /** Merged into an existing contact's data (json_patch); a new contact starts with it. */
  data?: JsonObject;
}

/**
 * What an upsert does to a contact that exists: "merge" (data merged, a given
 * `subscribed` applied, as POST /contacts), "keep" (left as it is) or
 * "unsubscribe" (data merged, unsubscribed whatever the row says).
 */
export type OnExisting = "merge" | "keep" | "unsubscribe";

export interface UpsertContactsOptions {
  onExisting: OnExisting;
  /** Subscription of a new contact whose row gives none. */
  defaultSubscribed: boolean;
  now?: Date;
}

/** Characters of row JSON per statement: one bound parameter, well under D1's 2 MB per value. */
const MAX_ROWS_JSON_CHARS = 800_000;

/**
 * The statements, for one atomic batch, that create or update these contacts
 * (addresses distinct): one multi-row INSERT ... SELECT FROM json_each ... ON
 * CONFLICT per subscription value given (true, false, none) and per 800 KB of
 * rows, as /v1/send's recipient upsert. Fixed SQL; the D1 triggers (usage
 * counters, data cap, workflow outbox) run as for any other write.
 */
export function upsertContacts(d1: D1Database, projectId: string, rows: ContactUpsertRow[], options: UpsertContactsOptions): D1PreparedStatement[] {
  const now = (options.now ?? new Date()).getTime();
  const groups = new Map<0 | 1 | null, string[]>();
  for (const row of rows) {
    const key = row.subscribed === undefined || row.subscribed === null ? null : row.subscribed ? 1 : 0;
    const group = groups.get(key) ?? [];
    groups.set(key, group);
    group.push(JSON.stringify([newId(), row.email, JSON.stringify(row.data ?? {})]));
  }
  const sql = UPSERT_SQL[options.onExisting];
  const statements: D1PreparedStatement[] = [];
  for (const [subscribed, parts] of groups) {
    for (const json of joinBySize(parts, MAX_ROWS_JSON_CHARS)) {
      statements.push(d1.prepare(sql).bind(projectId, options.defaultSubscribed ? 1 : 0, subscribed, now, json));
    }
  }
  return statements;
}

/** JSON arrays of the parts, each at most `maxChars` long (a longer part alone). */
function joinBySize(parts: string[], maxChars: number): string[] {
  const out: string[] = [];
  let current: string[] = [];
  let chars = 0;
  for (const part of parts) {
    if (current.length > 0 && chars + part.length + 1 > maxChars) {
      out.push(`[${current.join(",")}]`);
      current = [];
      chars = 0;
    }
    current.push(part);
    chars += part.length + 1;
  }
  if (current.length > 0) out.push(`[${current.join(",")}]`);
  return out;
}

// ?1 project, ?2 default subscribed (new contacts), ?3 the rows' subscribed (null: not given), ?4 now,
// ?5 rows [id, email, data JSON]. On conflict excluded.data is the row's data (json_patch('{}', ...)).
const INSERT = `INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at)
  SELECT json_extract(value, '$[0]'), ?1, json_extract(value, '$[1]'), coalesce(?3, ?2), json_patch('{}', json_extract(value, '$[2]')), ?4, ?4
  FROM json_each(?5) WHERE true
  ON CONFLICT (project_id, email) DO UPDATE SET`;
const UPSERT_SQL: Record<OnExisting, string> = {
  merge: `${INSERT} subscribed = coalesce(?3, contacts.subscribed), data = json_patch(contacts.data, excluded.data), updated_at = ?4`,
  keep: `${INSERT} updated_at = contacts.updated_at`,
  unsubscribe: `${INSERT} subscribed = 0, data = json_patch(contacts.data, excluded.data), updated_at = ?4`,
};
