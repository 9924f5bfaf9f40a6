import { choicesOf, topicChoiceStatements, topicsByKey } from "./topics";
import { and, asc, count, desc, eq, lt, sql, type SQL } from "drizzle-orm";
import type { Database } from "../db/client";
import { contacts, events, projects, templates } from "../db/schema";
import { upsertContacts } from "../store/contacts";
import { WriteBatch } from "../store/batch";
import { insertEvent } from "../store/events";
import { quotaGuard } from "../store/guards";
import { dropContactCreatedTrigger } from "../store/workflow-outbox";
import type * as z from "../lib/zod";
import { type EventListQuerySchema, type EventView, MAX_PUBLIC_EVENT_DATA_CHARS, type TrackEventRequest } from "../schemas/events";
import { ApiError } from "../lib/errors";
import { jsonByteLength } from "../lib/validators";
import { decodeCursor, toPage } from "../lib/pagination";
import type { Env } from "../env";
import type { AfterCommit } from "../lib/after-commit";
import { splitPersistentData } from "./contacts";
import { contactWriteEvents } from "./webhooks/record";
import { domainOfAddress } from "./domains/names";
import { confirmationTemplateProblem } from "./project-settings";
import { createEmails } from "./send/create-emails";
import { runWithTopicConfirmation, topicConfirmationFor } from "./topic-confirmation";

/** What POST /v1/track takes (`data` is stored on the event and merged into the contact, a null value removing that key). */
export type TrackEventInput = TrackEventRequest;

export interface TrackOptions {
  /**
   * A public key (it sits in browser JavaScript, so anyone can use it): an
   * existing contact is left exactly as it is (subscription and data), and a
   * new one is created without data. The event keeps its data either way.
   */
  publicKey?: boolean;
  /** The project has double opt-in on (from the key lookup): only then is its confirmation template read. */
  doubleOptIn?: boolean;
  /** The request's URL (links in a confirmation email, in local development). */
  requestUrl?: string;
}

export interface TrackEventResult {
  contactId: string;
  eventId: string;
  createdAt: Date;
  isNewContact: boolean;
}

/**
 * Creates or updates the contact and records the event in one atomic batch,
 * the quota checks first (contacts, events today: buildQuotaGuard), so the
 * whole request is one D1 round trip. The event finds its contact by (project,
 * email) in a subquery, so both writes go in the same batch and a failure
 * (a quota, the contact data cap) leaves neither behind.
 */
export async function trackEvent(
  db: Database,
  env: Env,
  projectId: string,
  input: TrackEventInput,
  afterCommit: AfterCommit,
  options: TrackOptions = {},
): Promise<TrackEventResult> {
  if (options.publicKey && input.data !== undefined) {
    const size = JSON.stringify(input.data).length;
    if (size > MAX_PUBLIC_EVENT_DATA_CHARS) {
      throw ApiError.validation([
        { field: "data", message: `With a public key, data may be at most ${MAX_PUBLIC_EVENT_DATA_CHARS} characters as JSON (got ${size})`, code: "too_big" },
      ]);
    }
  }
  if (options.publicKey && input.topics !== undefined) {
    throw new ApiError("FORBIDDEN", "Topic choices need a secret key", {
      suggestion: "Send topics with a secret (sk_) key from your server, or let the contact choose on the preference page ({{preferencesUrl}}).",
    });
  }
  const email = input.email.toLowerCase();
  const choices = choicesOf(input.topics);
  const named = await topicsByKey(
    db,
    projectId,
    choices.map((c) => c.key),
    (key) => `topics.${key}`,
  );
  // `{value, persistent: false}` (as on /v1/send): stored on the event, never on the contact.
  const { persistent, all } = splitPersistentData(input.data);
  const createdAt = new Date();
  const d1 = db.$client;
  const publicUse = options.publicKey ? { contacts: [email], events: 1 } : undefined;
  // Double opt-in: a contact a public key creates starts unsubscribed and is sent the confirmation.
  const optIn = options.publicKey && options.doubleOptIn && input.subscribed !== false ? await doubleOptInFor(db, projectId, email) : null;
  // A public key leaves an existing contact as it is, and gives a new one no data.
  const subscribed = optIn ? false : input.subscribed;
  const upsert = upsertContacts(d1, projectId, [{ email, subscribed, data: options.publicKey ? {} : persistent }], {
    onExisting: options.publicKey ? "keep" : "mergeChanged",
    subscribedByDefault: true,
    now: createdAt,
  });
  // What the triggers will count: the event's data and at most what the contact upsert adds.
  const storedBytesAtMost = jsonByteLength(all ?? {}) + upsert.storedBytesAtMost();
  const guard = quotaGuard(d1, env, projectId, { contacts: [email], eventsToday: 1, publicKey: publicUse, storedBytesAtMost }, createdAt);
  // The event shares the id a new contact would get: a contact with its event's id was created by it (the public counters' trigger, migration 0023).
  const eventId = upsert.ids[0];
  const event = insertEvent(d1, projectId, { id: eventId, email, name: input.event, data: all, source: options.publicKey ? "public" : "secret", createdAt });
  // Webhook events: contact.created always; .updated / .(un)subscribed only when a secret key brings data or a subscription.
  const changes = !options.publicKey && (Object.keys(persistent).length > 0 || input.subscribed !== undefined);
  const hooks = contactWriteEvents(d1, {
    projectId,
    at: createdAt,
    email,
    creates: true,
    newId: upsert.ids[0],
    updates: changes,
    subscribed: options.publicKey ? undefined : input.subscribed,
  });
  const batch = new WriteBatch(d1);
  batch.add(guard, ...hooks.before);
  const upserted = batch.add(...upsert.statements);
  batch.add(...topicChoiceStatements(d1, env, { projectId, email, choices, source: "track", pendingForDoubleOptIn: true, now: createdAt }));
  batch.add(
    ...hooks.after,
    // An unconfirmed contact starts no CONTACT_CREATED workflow: it is queued when the contact confirms.
    optIn ? dropContactCreatedTrigger(d1, projectId, upsert.ids[0]) : null,
    // Last of the event's writes: it also says whether the workflow outbox holds triggers (it probes, see insertEvent).
    // Stored bytes: checked by the guard up front (storedBytesAtMost); createEmails checks the confirmation email's after it.
    event,
  );
  const result = optIn?.template
    ? // The confirmation email in the same batch, inserted only if the contact was created by it.
      (
        await createEmails(
          d1,
          env,
          {
            projectId,
            templateId: optIn.template.id,
            from: optIn.template.from,
            fromName: optIn.template.fromName,
            replyTo: optIn.template.replyTo,
            senderDomain: optIn.template.senderDomain,
            subject: optIn.template.subject,
            html: optIn.template.body,
            marketing: false,
            tracked: false,
            onlyIfContact: upsert.ids[0],
            confirmation: true,
          },
          [{ to: email, contactId: upsert.ids[0], data: {} }],
          { batch, afterCommit, requestUrl: options.requestUrl, now: createdAt },
        )
      ).result
    : await runWithTopicConfirmation(db, env, projectId, await topicConfirmationFor(db, projectId, email, choices, named), email, batch, {
        afterCommit,
        requestUrl: options.requestUrl,
        now: createdAt,
      });
  const contact = upsert.contacts(result.each(upserted)).get(email)!;
  return { contactId: contact.id, eventId, createdAt, isNewContact: contact.created };
}

/**
 * The project's double opt-in for a new address a public key tracks: null
 * when it is off or the contact exists (a pk_ never changes one); otherwise
 * the confirmation template, or `template: null` when it is no longer usable
 * (deleted since, or its domain no longer verified: the contact is still
 * created unsubscribed, no email is sent, and the problem is logged).
 */
async function doubleOptInFor(db: Database, projectId: string, email: string) {
  const [row] = await db
    .select({
      on: projects.doubleOptIn,
      existing: sql<string | null>`(SELECT ${contacts.id} FROM ${contacts} WHERE ${contacts.projectId} = ${projectId} AND ${contacts.email} = ${email})`,
      template: templates,
    })
    .from(projects)
    .leftJoin(templates, and(eq(templates.id, projects.doubleOptInTemplateId), eq(templates.projectId, projects.id)))
    .where(eq(projects.id, projectId))
    .limit(1);
  if (!row?.on || row.existing) return null;
  const problem = await confirmationTemplateProblem(db, projectId, row.template ?? undefined);
  if (problem || !row.template?.from) {
    console.error(`double opt-in of project ${projectId}: no confirmation sent: ${problem}`);
    return { template: null };
  }
  const senderDomain = domainOfAddress(row.template.from)!;
  return { template: { ...row.template, from: row.template.from, senderDomain } };
}

export type ListEventsQuery = z.infer<typeof EventListQuerySchema>;

/**
 * Newest first, keyset-paginated on id. Filters use the (project_id, name, id)
 * and (contact_id, name, created_at) indexes; `total` counts every event matching the filters.
 */
export async function listEvents(db: Database, projectId: string, query: ListEventsQuery) {
  const after = decodeCursor(query.cursor);
  // With a contact, its events are found through (contact_id, name, created_at) and sorted by id, not by walking
  // the project's newest first (`+` keeps SQLite off the project index; migration 0028 dropped (contact_id, id)).
  const ofProject = query.contactId === undefined ? eq(events.projectId, projectId) : sql`+${events.projectId} = ${projectId}`;
  const filters: SQL[] = [ofProject];
  if (query.name !== undefined) filters.push(eq(events.name, query.name));
  if (query.contactId !== undefined) filters.push(eq(events.contactId, query.contactId));
  const where = and(...filters);
  const [rows, [{ total }]] = await db.batch([
    db
      .select({
        id: events.id,
        name: events.name,
        contactId: events.contactId,
        email: contacts.email,
        data: events.data,
        emailId: events.emailId,
        source: events.source,
        createdAt: events.createdAt,
      })
      .from(events)
      .leftJoin(contacts, eq(contacts.id, events.contactId))
      .where(after ? and(where, lt(events.id, after)) : where)
      .orderBy(desc(events.id))
      .limit(query.limit + 1),
    db.select({ total: count() }).from(events).where(where),
  ]);
  const page = toPage(rows, query.limit);
  const items: EventView[] = page.items.map((row) => ({
    id: row.id,
    name: row.name,
    contactId: row.contactId ?? null,
    email: row.email ?? null,
    data: row.data ?? {},
    emailId: row.emailId ?? null,
    source: row.source,
    createdAt: row.createdAt.toISOString(),
  }));
  return { items, nextCursor: page.nextCursor, hasMore: page.hasMore, total };
}

/** The project's distinct event names, alphabetical, each with how many events carry it. */
export async function listEventNames(db: Database, projectId: string) {
  const rows = await db
    .select({ name: events.name, count: count() })
    .from(events)
    .where(eq(events.projectId, projectId))
    .groupBy(events.name)
    .orderBy(asc(events.name));
  // fromEntries defines own properties, so even a name like "__proto__" is kept.
  const counts: Record<string, number> = Object.fromEntries(rows.map((row) => [row.name, row.count]));
  return { names: rows.map((row) => row.name), counts };
}
