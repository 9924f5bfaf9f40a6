import { and, eq, sql, type SQL } from "drizzle-orm";
import { fromRow, runStatements, type Database } from "../db/client";
import { contacts, events, type Contact, type JsonObject } from "../db/schema";
import { ApiError } from "../lib/errors";
import { newId } from "../lib/ids";
import { listNewestFirst } from "../lib/pagination";
import type { Env } from "../env";
import { buildQuotaGuard, runGuardedBatch } from "./quotas";
import { buildOutboxProbe } from "./workflows/triggers";
import { recordContactSnapshot, recordedEventIds } from "../store/webhooks";
import { contactWriteEvents } from "./webhooks/record";
import type { ContactListQuery, ContactView, UpdateContactRequest } from "../schemas/contacts";

export function toContactView(contact: Contact): ContactView {
  return {
    id: contact.id,
    email: contact.email,
    subscribed: contact.subscribed,
    data: contact.data ?? {},
    createdAt: contact.createdAt.toISOString(),
    updatedAt: contact.updatedAt.toISOString(),
  };
}

/**
 * The id of the project's contact with this address, as a subquery: a write in
 * the same batch as the contact's upsert refers to the contact it creates
 * without a read first (the (project_id, email) unique index answers it).
 */
export function contactIdByEmail(projectId: string, email: string): SQL<string> {
  return sql<string>`(SELECT ${contacts.id} FROM ${contacts} WHERE ${contacts.projectId} = ${projectId} AND ${contacts.email} = ${email.toLowerCase()})`;
}

/** The project's contacts among these addresses (lower-case), the list bound as one JSON parameter. */
export function contactsByEmail(d1: D1Database, projectId: string, addresses: string[]): D1PreparedStatement {
  return d1.prepare(CONTACTS_BY_EMAIL_SQL).bind(projectId, JSON.stringify(addresses));
}
// Fixed SQL (the list as one JSON parameter): /v1/send reads it on every request; rows map with contactFromRow.
const CONTACTS_BY_EMAIL_SQL = "SELECT * FROM contacts WHERE project_id = ?1 AND email IN (SELECT value FROM json_each(?2))";

export interface UpsertContactInput {
  email: string;
  /** Applied to new and existing contacts when given. */
  subscribed?: boolean;
  /** Merged into existing data (JSON merge patch: a null value deletes the key). */
  data?: JsonObject;
}

export interface UpsertResult {
  contact: Contact;
  isNew: boolean;
}

/**
 * Creates or updates the contact with this email in one statement, so
 * concurrent upserts of one address never create two contacts. `data` merges
 * with SQLite's json_patch (RFC 7396), which also drops keys set to null.
 * `defaultSubscribed` is the subscription of a new contact when none is given
 * (true for /contacts and /v1/track, false for /v1/send). The contacts quota is
 * checked in the same batch (buildQuotaGuard): one D1 round trip in all.
 */
export async function upsertContact(
  db: Database,
  env: Env,
  projectId: string,
  input: UpsertContactInput,
  defaultSubscribed = true,
): Promise<UpsertResult & { workflowTriggersPending: boolean; webhookEvents: string[] }> {
  const upsert = buildContactUpsert(db, projectId, input, defaultSubscribed);
  const guard = buildQuotaGuard(db, env, projectId, { contacts: [input.email.toLowerCase()] });
  const hooks = contactWriteEvents(db.$client, { projectId, at: new Date(), email: input.email, creates: true, updates: true, subscribed: input.subscribed });
  const n = hooks.before.length;
  const results = await runGuardedBatch(env, () =>
    runStatements(db, [guard!, ...hooks.before, upsert.query, ...hooks.after, buildOutboxProbe(db.$client, projectId)]),
  );
  const rows = results[1 + n];
  const outbox = results[results.length - 1];
  return { ...upsert.result(rows.map(contactFromRow)), workflowTriggersPending: outbox.length > 0, webhookEvents: hooks.ids(results.slice(1, 1 + n)) };
}

/** A contacts row as D1 returns it (column names, stored values) as a Contact. */
export const contactFromRow = (row: Record<string, unknown>): Contact => fromRow(contacts, row);

/**
 * The upsert as a query not yet run, so callers can put several (one per
 * recipient) or other writes into one atomic `db.batch()`.
 */
export function buildContactUpsert(
  db: Database,
  projectId: string,
  input: UpsertContactInput,
  defaultSubscribed: boolean,
  options: { leaveExisting?: boolean } = {},
) {
  const id = newId();
  const now = new Date();
  const patch = JSON.stringify(input.data ?? {});
  // leaveExisting (a public key): an existing contact is only looked up, never changed.
  const set = options.leaveExisting
    ? { updatedAt: sql`${contacts.updatedAt}` }
    : {
        subscribed: input.subscribed === undefined ? sql`${contacts.subscribed}` : input.subscribed,
        data: sql`json_patch(${contacts.data}, ${patch})`,
        updatedAt: now,
      };
  const query = db
    .insert(contacts)
    .values({
      id,
      projectId,
      email: input.email.toLowerCase(),
      subscribed: input.subscribed ?? defaultSubscribed,
      data: sql`json_patch('{}', ${patch})`,
      createdAt: now,
      updatedAt: now,
    })
    .onConflictDoUpdate({
      target: [contacts.projectId, contacts.email],
      set,
    })
    .returning();
  return {
    query,
    // On conflict the row keeps its old id, so a returned new id means "inserted".
    result: (rows: Contact[]): UpsertResult => ({ contact: rows[0], isNew: rows[0].id === id }),
  };
}

/**
 * Splits request data into what is stored on the contact and what is used
 * only where it was sent (this email, this event): a value
 * `{value, persistent: false}` is never stored on the contact; `{value}` alone
 * is unwrapped.
 */
export function splitPersistentData(data: JsonObject = {}) {
  const persistent: JsonObject = {};
  const all: JsonObject = {};
  for (const [key, raw] of Object.entries(data)) {
    const wrapped =
      raw !== null && typeof raw === "object" && !Array.isArray(raw) && "value" in raw && Object.keys(raw).every((k) => k === "value" || k === "persistent");
    const value = wrapped ? (raw as { value: unknown }).value : raw;
    const keep = !(wrapped && (raw as { persistent?: unknown }).persistent === false);
    all[key] = value;
    if (keep) persistent[key] = value;
  }
  return { persistent, all };
}

export async function getContact(db: Database, projectId: string, id: string): Promise<Contact> {
  const contact = await db.query.contacts.findFirst({
    where: and(eq(contacts.id, id), eq(contacts.projectId, projectId)),
  });
  if (!contact) throw ApiError.notFound("Contact");
  return contact;
}

export async function updateContact(
  db: Database,
  projectId: string,
  id: string,
  input: UpdateContactRequest,
): Promise<{ contact: Contact; webhookEvents: string[] }> {
  const hooks = contactWriteEvents(db.$client, { projectId, at: new Date(), contactId: id, updates: true, subscribed: input.subscribed });
  const update = db
    .update(contacts)
    .set({
      ...(input.subscribed === undefined ? {} : { subscribed: input.subscribed }),
      ...(input.data === undefined ? {} : { data: sql`json_patch(${contacts.data}, ${JSON.stringify(input.data)})` }),
      updatedAt: new Date(),
    })
    .where(and(eq(contacts.id, id), eq(contacts.projectId, projectId)))
    .returning();
  const n = hooks.before.length;
  const results = await runStatements(db, [...hooks.before, update, ...hooks.after]);
  const [row] = results[n];
  if (!row) throw ApiError.notFound("Contact");
  return { contact: contactFromRow(row), webhookEvents: hooks.ids(results.slice(0, n)) };
}

/** Deletes the contact and, in the same atomic batch, its events. */
export async function deleteContact(db: Database, projectId: string, id: string): Promise<{ webhookEvents: string[] }> {
  // contact.deleted carries the contact as it was: recorded before the DELETE.
  const event = recordContactSnapshot(db.$client, { id: newId(), projectId, type: "contact.deleted", at: new Date(), contactId: id });
  const [recorded, , deleted] = await runStatements(db, [
    event,
    db
      .delete(events)
      .where(and(eq(events.projectId, projectId), eq(events.contactId, sql`(SELECT id FROM contacts WHERE id = ${id} AND project_id = ${projectId})`))),
    db
      .delete(contacts)
      .where(and(eq(contacts.id, id), eq(contacts.projectId, projectId)))
      .returning({ id: contacts.id }),
  ]);
  if (deleted.length === 0) throw ApiError.notFound("Contact");
  return { webhookEvents: recordedEventIds([recorded]) };
}

/** LIKE pattern for a substring, with the user's %, _ and \ taken literally. */
export function likeSubstring(text: string): string {
  return `%${text.replace(/[\\%_]/g, (ch) => `\\${ch}`)}%`;
}

/** Newest first, keyset-paginated on id; `total` counts every row matching the filters. */
export async function listContacts(db: Database, projectId: string, query: ContactListQuery) {
  const filters: SQL[] = [eq(contacts.projectId, projectId)];
  if (query.subscribed !== undefined) filters.push(eq(contacts.subscribed, query.subscribed));
  if (query.search) filters.push(sql`${contacts.email} LIKE ${likeSubstring(query.search.toLowerCase())} ESCAPE '\\'`);
  return listNewestFirst(db, contacts, and(...filters), query);
}
