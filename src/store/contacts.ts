import { and, eq, sql } from "drizzle-orm";
import { getDb } from "../db/client";
import { contacts, events, type JsonObject } from "../db/schema";
import { chunkBySize, MAX_JSON_PARAM_CHARS } from "../lib/chunks";
import { newId } from "../lib/ids";
import { jsonByteLength } from "../lib/validators";

/** What happens to a contact that already exists with the row's address. */
export type OnExisting =
  /** `subscribed` applies when the row gives it; `data` merges (JSON merge patch: null removes a key). */
  | "merge"
  /**
   * As "merge", but a contact the row would leave as it is is not written at all (its `updatedAt`
   * stays; D1 bills the rewrite of an unchanged row): the send path, where most recipients exist.
   * Every contact is still returned (a read after the upsert, in the same batch).
   */
  | "mergeChanged"
  /** Left exactly as it is, not written (returned by a read after the upsert). */
  | "keep"
  /** Unsubscribed, data untouched; only a contact that was subscribed is returned. */
  | "unsubscribe";

/** One contact to create or update. */
export interface ContactRow {
  email: string;
  /** A new contact's subscription (default: options.subscribedByDefault); with "merge", also an existing one's. */
  subscribed?: boolean;
  /** A new contact's data; with "merge", merged into an existing one's. */
  data?: JsonObject;
}

/** A contact an upsert returned, by lower-case address. */
export interface UpsertedContact {
  id: string;
  email: string;
  /** Whether this upsert created it (false: it existed and `onExisting` applied). */
  created: boolean;
  /** The whole contacts row as D1 returned it (every column only with `returnRows`). */
  row: Record<string, unknown>;
}

export interface ContactUpsert {
  /** Run in one batch, in this order; each returns the contacts it created or updated. */
  statements: D1PreparedStatement[];
  /** The id a row's contact gets if this upsert creates it, in the order of the rows. */
  ids: string[];
  /** The contacts, from the batch's results of `statements` (pass exactly their rows, in order). */
  contacts(results: Record<string, unknown>[][]): Map<string, UpsertedContact>;
  /**
   * At most the bytes the statements add to the project's stored bytes (contact data): a JSON
   * merge grows a contact's data by at most its patch, a new contact's `{}` included. For a
   * quotaGuard's storedBytesAtMost.
   */
  storedBytesAtMost(): number;
}

/**
 * Creates or updates many contacts of a project in one statement per chunk
 * (chunked by JSON size under D1's per-value limit), each row with its own
 * address, subscription and data; an existing contact is handled by
 * `onExisting`. Returns the statements for the caller's batch (put a
 * quotaGuard for the addresses first) and how to read back each contact's id
 * and whether it was created (`returnRows`: the whole row). Addresses are lower-cased.
 */
export function upsertContacts(
  d1: D1Database,
  projectId: string,
  rows: readonly ContactRow[],
  options: { onExisting: OnExisting; subscribedByDefault: boolean; now?: Date; returnRows?: boolean },
): ContactUpsert {
  const now = (options.now ?? new Date()).getTime();
  const ids: string[] = [];
  // Keyed by the new id: on conflict, excluded.id finds the row's own subscription and patch.
  const entries = rows.map((row) => {
    const id = newId();
    ids.push(id);
    const value = [row.email.toLowerCase(), row.subscribed === undefined ? null : row.subscribed ? 1 : 0, row.data ?? {}];
    return { key: id, json: `${JSON.stringify(id)}:${JSON.stringify(value)}` };
  });
  const statements = chunkBySize(
    entries.map((e) => e.json),
    MAX_JSON_PARAM_CHARS,
  ).map((parts) =>
    d1
      .prepare(options.returnRows ? UPSERT_RETURNING_ROWS_SQL : UPSERT_CONTACTS_SQL)
      .bind(projectId, options.subscribedByDefault ? 1 : 0, now, `{${parts.join(",")}}`, MODES[options.onExisting]),
  );
  // The contacts it left alone return nothing: read every row's id back after the upsert.
  if (options.onExisting === "mergeChanged" || options.onExisting === "keep") {
    const addresses = rows.map((row) => JSON.stringify(row.email.toLowerCase()));
    for (const parts of chunkBySize(addresses, MAX_JSON_PARAM_CHARS)) {
      statements.push(d1.prepare(CONTACT_IDS_SQL).bind(projectId, `[${parts.join(",")}]`));
    }
  }
  const created = new Set(ids);
  return {
    statements,
    ids,
    storedBytesAtMost: () => rows.reduce((sum, row) => sum + jsonByteLength(row.data ?? {}) + 2, 0),
    contacts(results) {
      const out = new Map<string, UpsertedContact>();
      for (const row of results.flat()) {
        const id = String(row.id);
        const email = String(row.email);
        out.set(email, { id, email, created: created.has(id), row });
      }
      return out;
    },
  };
}

const MODES: Record<OnExisting, number> = { merge: 0, keep: 1, unsubscribe: 2, mergeChanged: 3 };

// ?4 is {newId: [email, subscribed or null, data patch]}; ?5 the OnExisting mode (MODES).
const UPSERT_SQL = `INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at)
  SELECT key, ?1, json_extract(value, '$[0]'), coalesce(json_extract(value, '$[1]'), ?2), json_patch('{}', json_extract(value, '$[2]')), ?3, ?3
  FROM json_each(?4) WHERE true
  ON CONFLICT (project_id, email) DO UPDATE SET
    subscribed = CASE WHEN ?5 IN (0, 3) THEN coalesce(json_extract(?4, '$."' || excluded.id || '"[1]'), contacts.subscribed) WHEN ?5 = 2 THEN 0 ELSE contacts.subscribed END,
    data = CASE WHEN ?5 IN (0, 3) THEN json_patch(contacts.data, json_extract(?4, '$."' || excluded.id || '"[2]')) ELSE contacts.data END,
    updated_at = CASE ?5 WHEN 1 THEN contacts.updated_at ELSE ?3 END
  WHERE CASE ?5
    WHEN 1 THEN 0
    WHEN 2 THEN contacts.subscribed = 1
    WHEN 3 THEN coalesce(json_extract(?4, '$."' || excluded.id || '"[1]'), contacts.subscribed) IS NOT contacts.subscribed
      OR json_patch(contacts.data, json_extract(?4, '$."' || excluded.id || '"[2]')) IS NOT contacts.data
    ELSE 1 END
  RETURNING`;
const UPSERT_CONTACTS_SQL = `${UPSERT_SQL} id, email`;
const UPSERT_RETURNING_ROWS_SQL = `${UPSERT_SQL} *`;
// "mergeChanged" and "keep": every row's contact as the upsert left it (?2 a JSON array of lower-case addresses).
const CONTACT_IDS_SQL = "SELECT id, email FROM contacts WHERE project_id = ?1 AND email IN (SELECT value FROM json_each(?2))";

/** The id of the project's contact with this lower-case address, as SQL over the address expression. */
export const contactIdByAddress = (projectParam: string, addressExpr: string) =>
  `(SELECT id FROM contacts WHERE project_id = ${projectParam} AND email = ${addressExpr})`;

/** A contact's subscription and data changed by id (PATCH /contacts/{id}, the UPDATE_CONTACT step); returns the row, none when missing. */
export function updateContactById(d1: D1Database, projectId: string, id: string, change: { subscribed?: boolean; data?: JsonObject }, now = new Date()) {
  return getDb(d1)
    .update(contacts)
    .set({
      ...(change.subscribed === undefined ? {} : { subscribed: change.subscribed }),
      ...(change.data === undefined ? {} : { data: sql`json_patch(${contacts.data}, ${JSON.stringify(change.data)})` }),
      updatedAt: now,
    })
    .where(and(eq(contacts.id, id), eq(contacts.projectId, projectId)))
    .returning();
}

/** Unsubscribes the contact of an email (by id, or by address when the email has none); only a subscribed one changes. */
export function unsubscribeContactOf(d1: D1Database, email: { projectId: string; contactId: string | null; toAddress: string }, now: Date) {
  const which = email.contactId
    ? eq(contacts.id, email.contactId)
    : and(eq(contacts.projectId, email.projectId), eq(contacts.email, email.toAddress.toLowerCase()));
  return getDb(d1)
    .update(contacts)
    .set({ subscribed: false, updatedAt: now })
    .where(and(which, eq(contacts.subscribed, true)));
}

/** Deletes the contact and its events: two statements for one batch; the second returns the deleted id. */
export function deleteContactStatements(d1: D1Database, projectId: string, id: string) {
  const db = getDb(d1);
  return [
    db
      .delete(events)
      .where(and(eq(events.projectId, projectId), eq(events.contactId, sql`(SELECT id FROM contacts WHERE id = ${id} AND project_id = ${projectId})`))),
    db
      .delete(contacts)
      .where(and(eq(contacts.id, id), eq(contacts.projectId, projectId)))
      .returning({ id: contacts.id }),
  ] as const;
}

/** The module's fixed SQL, by name (test/store/statements.test.ts compiles each against the schema). */
export const FIXED_SQL = { UPSERT_CONTACTS_SQL, UPSERT_RETURNING_ROWS_SQL, CONTACT_IDS_SQL };
