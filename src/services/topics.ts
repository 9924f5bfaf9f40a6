import { and, asc, eq, inArray } from "drizzle-orm";
import { fromRow, runStatements, type Database } from "../db/client";
import { contacts, contactTopics, topics, type ContactTopicSource, type Topic } from "../db/schema";
import type { AfterCommit } from "../lib/after-commit";
import type { ConfigInput } from "../lib/config";
import type { Env } from "../env";
import { ApiError, type FieldError } from "../lib/errors";
import { newId } from "../lib/ids";
import { listNewestFirst } from "../lib/pagination";
import type { ContactTopicView, CreateTopicRequest, TopicChoices, TopicView, UpdateContactTopicsRequest, UpdateTopicRequest } from "../schemas/topics";
import type { Statement } from "../store/batch";
import { WriteBatch } from "../store/batch";
import { insertTopicChangeEvents } from "../store/events";
import { countGuard, runGuarded } from "../store/guards";
import {
  deleteTopic as deleteTopicRow,
  insertTopic,
  optOutOfTopic,
  setContactTopics,
  type TopicChange,
  type TopicChoice,
  updateTopic as updateTopicRow,
} from "../store/topics";
import { recordTopicsUpdated } from "../store/webhooks/events";
import { assertTopicConfirmation, runWithTopicConfirmation, topicConfirmationFor } from "./topic-confirmation";

/**
 * Topics (CONTRACT "Topics and the preference page"): CRUD, a contact's choices, and the
 * statements that write choices in another write's batch (POST /contacts, /v1/track).
 */

export function toTopicView(t: Topic): TopicView {
  return {
    id: t.id,
    key: t.key,
    name: t.name,
    description: t.description ?? null,
    defaultSubscription: t.defaultSubscription,
    visibility: t.visibility,
    doubleOptIn: t.doubleOptIn,
    createdAt: t.createdAt.toISOString(),
    updatedAt: t.updatedAt.toISOString(),
  };
}

/** Within QUOTA_TOPICS (checked in the insert's batch); a key the project uses already is a 409. */
export async function createTopic(db: Database, env: ConfigInput, projectId: string, input: CreateTopicRequest): Promise<Topic> {
  if (input.doubleOptIn) await assertTopicConfirmation(db, projectId);
  const now = new Date();
  const insert = insertTopic(db.$client, {
    id: newId(),
    projectId,
    key: input.key,
    name: input.name,
    description: input.description ?? null,
    defaultSubscription: input.defaultSubscription,
    visibility: input.visibility,
    doubleOptIn: input.doubleOptIn,
    createdAt: now,
    updatedAt: now,
  });
  const [, rows] = await runGuarded(env, () => runStatements(db, [countGuard(db.$client, env, "QUOTA_TOPICS", projectId), insert]));
  if (!rows[0]) {
    throw new ApiError("CONFLICT", `A topic with key ${input.key} exists already`, { suggestion: "Topic keys are unique per project; choose another key." });
  }
  return fromRow(topics, rows[0]);
}

export async function getTopic(db: Database, projectId: string, id: string): Promise<Topic> {
  const topic = await db.query.topics.findFirst({ where: and(eq(topics.id, id), eq(topics.projectId, projectId)) });
  if (!topic) throw ApiError.notFound("Topic");
  return topic;
}

export async function updateTopic(db: Database, projectId: string, id: string, input: UpdateTopicRequest): Promise<Topic> {
  const set: TopicChange = {};
  if (input.name !== undefined) set.name = input.name;
  if (input.description !== undefined) set.description = input.description;
  if (input.visibility !== undefined) set.visibility = input.visibility;
  if (input.doubleOptIn !== undefined) set.doubleOptIn = input.doubleOptIn;
  if (Object.keys(set).length === 0) return getTopic(db, projectId, id);
  if (input.doubleOptIn) await assertTopicConfirmation(db, projectId);
  set.updatedAt = new Date();
  const [topic] = await updateTopicRow(db.$client, projectId, id, set);
  if (!topic) throw ApiError.notFound("Topic");
  return topic;
}

/** Deletes the topic and every contact's choice for it; campaigns aimed at it keep their (dangling) topicId and send to nobody. */
export async function deleteTopic(db: Database, projectId: string, id: string): Promise<void> {
  const rows = await deleteTopicRow(db.$client, projectId, id);
  if (rows.length === 0) throw ApiError.notFound("Topic");
}

export async function listTopics(db: Database, projectId: string, page: { limit: number; cursor?: string }) {
  const result = await listNewestFirst(db, topics, eq(topics.projectId, projectId), page);
  return { ...result, items: result.items.map(toTopicView) };
}

/** Every topic of the project (at most QUOTA_TOPICS), oldest first. */
export const projectTopics = (db: Database, projectId: string) => db.select().from(topics).where(eq(topics.projectId, projectId)).orderBy(asc(topics.id));

/** The project's topic with this key (none: no such topic). */
export const topicByKeyQuery = (db: Database, projectId: string, key: string) =>
  db
    .select()
    .from(topics)
    .where(and(eq(topics.projectId, projectId), eq(topics.key, key)))
    .limit(1);

/** The explicit choices of these addresses' contacts for the project's topic with this key: `{email, status}`. */
export const topicChoicesOf = (db: Database, projectId: string, key: string, addresses: readonly string[]) =>
  db
    .select({ email: contacts.email, status: contactTopics.status })
    .from(contactTopics)
    .innerJoin(topics, eq(topics.id, contactTopics.topicId))
    .innerJoin(contacts, eq(contacts.id, contactTopics.contactId))
    .where(and(eq(topics.projectId, projectId), eq(topics.key, key), eq(contacts.projectId, projectId), inArray(contacts.email, [...addresses])));

/** The contact's choices, as stored: topic id -> status. */
export const contactChoices = (db: Database, contactId: string) =>
  db.select({ topicId: contactTopics.topicId, status: contactTopics.status }).from(contactTopics).where(eq(contactTopics.contactId, contactId));

/** Every topic of the project with the contact's subscription (its choice, or the topic's default). */
export function topicListOf(all: readonly Topic[], choices: readonly { topicId: string; status: ContactTopicView["subscription"] }[]): ContactTopicView[] {
  const byTopic = new Map(choices.map((c) => [c.topicId, c.status]));
  return all.map((t) => {
    const chosen = byTopic.get(t.id);
    return { id: t.id, key: t.key, name: t.name, subscription: chosen ?? t.defaultSubscription, explicit: chosen !== undefined };
  });
}

async function contactOf(db: Database, projectId: string, contactId: string) {
  const [contact] = await db
    .select({ id: contacts.id, email: contacts.email })
    .from(contacts)
    .where(and(eq(contacts.id, contactId), eq(contacts.projectId, projectId)))
    .limit(1);
  if (!contact) throw ApiError.notFound("Contact");
  return contact;
}

/** GET /contacts/{id}/topics: one list of every topic (at most QUOTA_TOPICS, so one page). */
export async function listContactTopics(db: Database, projectId: string, contactId: string) {
  const [contactRows, all, choices] = await db.batch([
    db
      .select({ id: contacts.id })
      .from(contacts)
      .where(and(eq(contacts.id, contactId), eq(contacts.projectId, projectId)))
      .limit(1),
    projectTopics(db, projectId),
    contactChoices(db, contactId),
  ]);
  if (!contactRows[0]) throw ApiError.notFound("Contact");
  const items = topicListOf(all, choices);
  return { items, nextCursor: null, hasMore: false, total: items.length };
}

/**
 * The project's topics with these keys; an unknown key is a 422 naming `fieldOf(key)`. One read
 * (nothing when there are no keys).
 */
export async function topicsByKey(db: Database, projectId: string, keys: readonly string[], fieldOf: (key: string) => string): Promise<Map<string, Topic>> {
  if (keys.length === 0) return new Map();
  const rows = await db
    .select()
    .from(topics)
    .where(and(eq(topics.projectId, projectId), inArray(topics.key, [...new Set(keys)])));
  const found = new Map(rows.map((t) => [t.key, t]));
  const errors: FieldError[] = keys
    .filter((k) => !found.has(k))
    .map((k) => ({ field: fieldOf(k), message: `No topic with key ${k} in this project`, code: "unknown_topic" }));
  if (errors.length > 0) throw ApiError.validation(errors);
  return found;
}

/** `topics: {"<key>": true|false}` as choices. */
export const choicesOf = (input: TopicChoices | undefined): TopicChoice[] =>
  Object.entries(input ?? {}).map(([key, on]) => ({ key, subscription: on ? "OPT_IN" : "OPT_OUT" }));

/**
 * The statements that write these choices for the contact with this address (after its upsert, in
 * the same batch), with an event per changed choice and one `contact.topics.updated` webhook event.
 */
export function topicChoiceStatements(
  d1: D1Database,
  env: ConfigInput | undefined,
  input: {
    projectId: string;
    email: string;
    choices: readonly TopicChoice[];
    source: ContactTopicSource;
    pendingForDoubleOptIn: boolean;
    now: Date;
    emailId?: string | null;
  },
): Statement[] {
  if (input.choices.length === 0) return [];
  const { projectId, email, source, now } = input;
  const ids = Object.fromEntries(input.choices.map((c) => [c.key, newId()]));
  return [
    setContactTopics(d1, projectId, email, input.choices, { source, pendingForDoubleOptIn: input.pendingForDoubleOptIn, now }),
    insertTopicChangeEvents(d1, env, { projectId, email, source, now, ids, emailId: input.emailId }),
    recordTopicsUpdated(d1, { id: newId(), projectId, email, source, at: now }),
  ];
}

/**
 * The unsubscribe of mail aimed at a topic (its one-click and link unsubscribe): opts the
 * address's contact out of that topic only, leaving its other topics and `subscribed` alone,
 * with an event and a `contact.topics.updated` webhook event when it changes. "missing" when
 * the contact or the topic is gone (the caller then unsubscribes the address from everything).
 */
export async function optOutOfTopicByEmail(
  db: Database,
  env: ConfigInput | undefined,
  input: { projectId: string; email: string; topicId: string; emailId: string; source: ContactTopicSource },
  afterCommit?: AfterCommit,
): Promise<"unsubscribed" | "unchanged" | "missing"> {
  const { projectId, email, topicId, emailId, source } = input;
  const [found] = await db
    .select({ key: topics.key, contactId: contacts.id })
    .from(topics)
    .innerJoin(contacts, and(eq(contacts.projectId, projectId), eq(contacts.email, email)))
    .where(and(eq(topics.id, topicId), eq(topics.projectId, projectId)))
    .limit(1);
  if (!found) return "missing";
  const now = new Date();
  const batch = new WriteBatch(db.$client);
  const changed = batch.add(optOutOfTopic(db.$client, projectId, email, topicId, source, now));
  batch.add(
    insertTopicChangeEvents(db.$client, env, { projectId, email, source, now, ids: { [found.key]: newId() }, emailId }),
    recordTopicsUpdated(db.$client, { id: newId(), projectId, email, source, at: now }),
  );
  const result = await batch.run({ afterCommit });
  return result.rows(changed).length > 0 ? "unsubscribed" : "unchanged";
}

/** PATCH /contacts/{id}/topics: sets the choices (an OPT_IN of a double opt-in topic is PENDING); answers every topic. */
export async function updateContactTopics(
  db: Database,
  env: Env,
  projectId: string,
  contactId: string,
  input: UpdateContactTopicsRequest,
  afterCommit?: AfterCommit,
) {
  const contact = await contactOf(db, projectId, contactId);
  const keys = input.topics.map((t) => t.key);
  const index = new Map(keys.map((k, i) => [k, i]));
  const named = await topicsByKey(db, projectId, keys, (k) => `topics.${index.get(k)}.key`);
  // The last choice of a key given twice wins.
  const choices = [...new Map(input.topics.map((t) => [t.key, t])).values()];
  const now = new Date();
  const confirmation = await topicConfirmationFor(db, projectId, contact.email, choices, named);
  const batch = new WriteBatch(db.$client);
  batch.add(...topicChoiceStatements(db.$client, env, { projectId, email: contact.email, choices, source: "api", pendingForDoubleOptIn: true, now }));
  await runWithTopicConfirmation(db, env, projectId, confirmation, contact.email, batch, { afterCommit, now });
  return listContactTopics(db, projectId, contactId);
}
