import { choicesOf, topicChoiceStatements, topicsByKey } from "./topics";
import { runWithTopicConfirmation, topicConfirmationFor } from "./topic-confirmation";
import type { TopicChoices } from "../schemas/topics";
import { and, eq, sql, type SQL } from "drizzle-orm";
import { fromRow, type Database } from "../db/client";
import { contacts, type Contact, type JsonObject } from "../db/schema";
import { ApiError } from "../lib/errors";
import { likeContains } from "../lib/sql";
import { listNewestFirst } from "../lib/pagination";
import type { Env } from "../env";
import type { AfterCommit } from "../lib/after-commit";
import { deleteContactStatements, updateContactById, upsertContacts } from "../store/contacts";
import { WriteBatch } from "../store/batch";
import { outboxProbe, quotaGuard, storedBytesGuard } from "../store/guards";
import { recordContactSnapshot } from "../store/webhooks/events";
import { newId } from "../lib/ids";
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
  /** Topic choices by key (true: opt in, PENDING for a double opt-in topic); an unknown key is a 422 naming `topics.<key>`. */
  topics?: TopicChoices;
}

export interface UpsertResult {
  contact: Contact;
  isNew: boolean;
}

/**
 * Creates or updates the contact with this email in one statement, so
 * concurrent upserts of one address never create two contacts. `data` merges
 * with SQLite's json_patch (RFC 7396), which also drops keys set to null; a
 * new contact is subscribed unless `subscribed` says otherwise. The contacts
 * quota is checked in the same batch: one D1 round trip in all.
 */
export async function upsertContact(db: Database, env: Env, projectId: string, input: UpsertContactInput, afterCommit: AfterCommit): Promise<UpsertResult> {
  const d1 = db.$client;
  const now = new Date();
  const choices = choicesOf(input.topics);
  // One read only when the request names topics: an unknown key is a 422 before anything is written.
  const named = await topicsByKey(
    db,
    projectId,
    choices.map((c) => c.key),
    (key) => `topics.${key}`,
  );
  const email = input.email.toLowerCase();
  const confirmation = await topicConfirmationFor(db, projectId, email, choices, named);
  const upsert = upsertContacts(d1, projectId, [input], { onExisting: "merge", subscribedByDefault: true, now, returnRows: true });
  // Webhook events around the upsert: contact.created, .updated, .(un)subscribed as they happen.
  const hooks = contactWriteEvents(d1, {
    projectId,
    at: now,
    email: input.email,
    creates: true,
    newId: upsert.ids[0],
    updates: true,
    subscribed: input.subscribed,
  });
  const batch = new WriteBatch(d1);
  batch.add(quotaGuard(d1, env, projectId, { contacts: [input.email.toLowerCase()], storedBytesAtMost: upsert.storedBytesAtMost() }, now), ...hooks.before);
  const upserted = batch.add(...upsert.statements);
  batch.add(...topicChoiceStatements(d1, env, { projectId, email: input.email.toLowerCase(), choices, source: "api", pendingForDoubleOptIn: true, now }));
  batch.add(...hooks.after, outboxProbe(d1, projectId));
  // Opting into a double opt-in topic: its confirmation email, last in the same batch.
  const result = await runWithTopicConfirmation(db, env, projectId, confirmation, email, batch, { afterCommit, now });
  const [contact] = upsert.contacts(result.each(upserted)).values();
  return { contact: contactFromRow(contact.row), isNew: contact.created };
}

/** A contacts row as D1 returns it (column names, stored values) as a Contact. */
export const contactFromRow = (row: Record<string, unknown>): Contact => fromRow(contacts, row);

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
  env: Env,
  projectId: string,
  id: string,
  input: UpdateContactRequest,
  afterCommit: AfterCommit,
): Promise<Contact> {
  const d1 = db.$client;
  const hooks = contactWriteEvents(d1, { projectId, at: new Date(), contactId: id, updates: true, subscribed: input.subscribed });
  const batch = new WriteBatch(d1);
  batch.add(...hooks.before);
  const updated = batch.add(updateContactById(d1, projectId, id, input));
  batch.add(...hooks.after, storedBytesGuard(d1, env, projectId));
  const [row] = (await batch.run({ env, afterCommit })).rows(updated);
  if (!row) throw ApiError.notFound("Contact");
  return contactFromRow(row);
}

/** Deletes the contact and, in the same atomic batch, its events; contact.deleted (the contact as it was) goes first. */
export async function deleteContact(db: Database, projectId: string, id: string, afterCommit: AfterCommit): Promise<void> {
  const d1 = db.$client;
  const batch = new WriteBatch(d1);
  batch.add(recordContactSnapshot(d1, { id: newId(), projectId, type: "contact.deleted", at: new Date(), contactId: id }));
  const deleted = batch.add(...deleteContactStatements(d1, projectId, id));
  if ((await batch.run({ afterCommit })).rows(deleted).length === 0) throw ApiError.notFound("Contact");
}

/** Newest first, keyset-paginated on id; `total` counts every row matching the filters. */
export async function listContacts(db: Database, projectId: string, query: ContactListQuery) {
  const filters: SQL[] = [eq(contacts.projectId, projectId)];
  if (query.subscribed !== undefined) filters.push(eq(contacts.subscribed, query.subscribed));
  if (query.search) filters.push(sql`${contacts.email} LIKE ${likeContains(query.search.toLowerCase())} ESCAPE '\\'`);
  return listNewestFirst(db, contacts, and(...filters), query);
}
