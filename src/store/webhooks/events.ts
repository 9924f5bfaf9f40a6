/**
 * The only writer of webhook_events, the transactional outbox of event
 * webhooks: each event is recorded in the batch of the change it reports, only
 * when an enabled endpoint of the project subscribes to its type. Every record
 * statement marks itself (recordsWebhookEvents, RETURNING id, project_id), so
 * a WriteBatch (store/batch.ts) hands its events over wherever it sits. Also
 * the outbox's claim for the cron and the events' pruning.
 * (webhook_pending is kept by triggers; endpoints.ts and deliveries.ts hold the other two tables.)
 */

import { idAtTime } from "../../lib/ids";
import type { WebhookEventType } from "../../schemas/webhooks";
import { recordsWebhookEvents } from "../marks";

/** Statement parameters of one enabled, subscribed endpoint test (?2 project, ?3 type). */
const SUBSCRIBED = `EXISTS (SELECT 1 FROM webhook_endpoints w WHERE w.project_id = ?2 AND w.enabled = 1
  AND (w.events = '[]' OR EXISTS (SELECT 1 FROM json_each(w.events) WHERE value = ?3)))`;

const RECORD_EVENT_SQL = `INSERT INTO webhook_events (id, project_id, type, payload, created_at)
  SELECT ?1, ?2, ?3, json_object('type', ?3, 'timestamp', ?4, 'data', json(?5)), ?6
  WHERE ${SUBSCRIBED}
  RETURNING id, project_id`;

/**
 * Records a webhook event of `type` for the project, with `data` as the body's
 * `data`: one INSERT ... SELECT that writes nothing unless an enabled endpoint
 * of the project subscribes to the type. `RETURNING id`: the batch's result
 * for it holds the event's id when one was recorded (BatchResult.eventIds).
 */
export function recordWebhookEvent(
  d1: D1Database,
  input: { id: string; projectId: string; type: WebhookEventType; data: unknown; at: Date },
): D1PreparedStatement {
  return recordsWebhookEvents(
    d1.prepare(RECORD_EVENT_SQL).bind(input.id, input.projectId, input.type, input.at.toISOString(), JSON.stringify(input.data ?? {}), input.at.getTime()),
  );
}

/**
 * `contact.topics.updated {contactId, email, topics: [{id, key, subscription}], source}` for the
 * contact with this address when the same batch changed some of its topic choices (contact_topics
 * rows with this `updated_at` and source): put it after the change. Only when an endpoint subscribes.
 */
export function recordTopicsUpdated(d1: D1Database, input: { id: string; projectId: string; email: string; source: string; at: Date }): D1PreparedStatement {
  return recordsWebhookEvents(
    d1
      .prepare(TOPICS_UPDATED_SQL)
      .bind(input.id, input.projectId, "contact.topics.updated", input.at.toISOString(), input.email, input.source, input.at.getTime()),
  );
}
const TOPICS_UPDATED_SQL = `INSERT INTO webhook_events (id, project_id, type, payload, created_at)
  SELECT ?1, ?2, ?3, json_object('type', ?3, 'timestamp', ?4, 'data', json_object('contactId', c.id, 'email', c.email, 'source', ?6,
      'topics', (SELECT json_group_array(json_object('id', t.id, 'key', t.key, 'subscription', ct.status))
        FROM contact_topics ct JOIN topics t ON t.id = ct.topic_id WHERE ct.contact_id = c.id AND ct.updated_at = ?7 AND ct.source = ?6))), ?7
  FROM contacts c WHERE c.project_id = ?2 AND c.email = ?5
    AND EXISTS (SELECT 1 FROM contact_topics ct WHERE ct.contact_id = c.id AND ct.updated_at = ?7 AND ct.source = ?6)
    AND ${SUBSCRIBED}
  RETURNING id, project_id`;

const ISO = (column: string) => `strftime('%Y-%m-%dT%H:%M:%fZ', ${column} / 1000.0, 'unixepoch')`;

/**
 * `campaign.sent` for a campaign the same batch moves SENDING -> SENT: put it
 * before that UPDATE, with the same conditions, so it is recorded exactly when
 * the update happens. The data is the campaign object without its body.
 */
export function recordCampaignSent(d1: D1Database, input: { id: string; campaignId: string; at: Date }): D1PreparedStatement {
  return recordsWebhookEvents(d1.prepare(CAMPAIGN_SENT_SQL).bind(input.id, input.campaignId, input.at.toISOString(), input.at.getTime()));
}
const CAMPAIGN_SENT_SQL = `INSERT INTO webhook_events (id, project_id, type, payload, created_at)
  SELECT ?1, c.project_id, 'campaign.sent', json_object('type', 'campaign.sent', 'timestamp', ?3, 'data', json_object(
      'id', c.id, 'name', c.name, 'description', c.description, 'subject', c.subject, 'from', c.from_address,
      'fromName', c.from_name, 'replyTo', c.reply_to, 'type', c.audience_type, 'audienceType', c.audience_type,
      'segmentId', c.segment_id, 'status', 'SENT', 'scheduledAt', ${ISO("c.scheduled_at")}, 'sentAt', ?3,
      'createdAt', ${ISO("c.created_at")}, 'updatedAt', ?3)), ?4
  FROM campaigns c WHERE c.id = ?2 AND c.status = 'SENDING' AND c.audience_done = 1
    AND NOT EXISTS (SELECT 1 FROM emails WHERE emails.campaign_id = ?2 AND emails.status IN ('QUEUED', 'SENDING'))
    AND EXISTS (SELECT 1 FROM webhook_endpoints w WHERE w.project_id = c.project_id AND w.enabled = 1
      AND (w.events = '[]' OR EXISTS (SELECT 1 FROM json_each(w.events) WHERE value = 'campaign.sent')))
  RETURNING id, project_id`;

/** Email timestamps a batch sets when a state change happens (see EmailEventItem.when). */
export const EMAIL_CHANGE_COLUMNS = ["sent_at", "delivered_at", "bounced_at", "complained_at", "failed_at", "last_opened_at", "last_clicked_at"] as const;
export type EmailChangeColumn = (typeof EMAIL_CHANGE_COLUMNS)[number];

export interface EmailEventItem {
  /** The event's id (UUIDv7). */
  id: string;
  emailId: string;
  type: WebhookEventType;
  /**
   * When the event happened, judged on the email row: `set:<column>` (put the
   * statement after the write) only if this batch set that timestamp to `at`;
   * `unset:<column>` (put it before the write) only if it is not set yet. So a
   * redelivered outcome or feedback records nothing twice. Omitted: always.
   */
  when?: `set:${EmailChangeColumn}` | `unset:${EmailChangeColumn}`;
  /** Added to the data: bounceType, url, reason (null values are left out). */
  extra?: Record<string, string | number | null | undefined>;
  /** Only when the email is in this status at this point of the batch. */
  status?: string;
  /** Only when the email's error is this text (e.g. the reason a claim settled it with). */
  error?: string;
  /** Only when the email's error starts with this text (a consent gate's name: src/services/consent/gates.ts). */
  errorPrefix?: string;
  /** The email's error as it is at this point of the batch goes into the data as `reason`. */
  reasonFromError?: boolean;
}

const WHEN_SQL = EMAIL_CHANGE_COLUMNS.flatMap((c) => [`WHEN 'set:${c}' THEN e.${c} = ?2`, `WHEN 'unset:${c}' THEN e.${c} IS NULL`]).join(" ");

const EMAIL_EVENTS_SQL = `INSERT INTO webhook_events (id, project_id, type, payload, created_at)
  SELECT json_extract(j.value, '$[0]'), e.project_id, json_extract(j.value, '$[2]'),
    json_object('type', json_extract(j.value, '$[2]'), 'timestamp', ?3, 'data', json_patch(json_patch(json_object(
      'emailId', e.id, 'contactId', e.contact_id, 'to', e.to_address, 'from', e.from_address, 'subject', e.subject,
      'campaignId', e.campaign_id, 'templateId', e.template_id, 'workflowId', NULL), json_extract(j.value, '$[4]')),
      CASE WHEN json_extract(j.value, '$[8]') = 1 THEN json_object('reason', e.error) ELSE '{}' END)), ?2
  FROM json_each(?1) AS j JOIN emails AS e ON e.id = json_extract(j.value, '$[1]')
  WHERE (CASE json_extract(j.value, '$[3]') ${WHEN_SQL} ELSE 1 END)
    AND (json_extract(j.value, '$[5]') IS NULL OR e.status = json_extract(j.value, '$[5]'))
    AND (json_extract(j.value, '$[6]') IS NULL OR e.error = json_extract(j.value, '$[6]'))
    AND (json_extract(j.value, '$[7]') IS NULL OR substr(e.error, 1, length(json_extract(j.value, '$[7]'))) = json_extract(j.value, '$[7]'))
    AND EXISTS (SELECT 1 FROM webhook_endpoints w WHERE w.project_id = e.project_id AND w.enabled = 1
      AND (w.events = '[]' OR EXISTS (SELECT 1 FROM json_each(w.events) WHERE value = json_extract(j.value, '$[2]'))))
  RETURNING id, project_id`;

/**
 * `email.*` events for several emails in one statement, each with the email
 * as it is at this point of the batch: `{emailId, contactId, to, from,
 * subject, campaignId, templateId, workflowId}` plus the item's `extra`. Only
 * for projects with an enabled endpoint subscribed to the type.
 */
export function recordEmailWebhookEvents(d1: D1Database, items: EmailEventItem[], at: Date): D1PreparedStatement {
  const rows = items.map((item) => [
    item.id,
    item.emailId,
    item.type,
    item.when ?? null,
    JSON.stringify(Object.fromEntries(Object.entries(item.extra ?? {}).filter(([, v]) => v !== null && v !== undefined))),
    item.status ?? null,
    item.error ?? null,
    item.errorPrefix ?? null,
    item.reasonFromError ? 1 : null,
  ]);
  return recordsWebhookEvents(d1.prepare(EMAIL_EVENTS_SQL).bind(JSON.stringify(rows), at.getTime(), at.toISOString()));
}

const CONTACT_JSON = `json_object('id', c.id, 'email', c.email, 'subscribed', json(CASE WHEN c.subscribed THEN 'true' ELSE 'false' END),
      'data', json(c.data), 'createdAt', ${ISO("c.created_at")}, 'updatedAt', ${ISO("c.updated_at")})`;

/** When a contact event happens, judged on the contact as it is before the write. */
export type ContactEventCondition =
  /** No contact with this address yet (the write creates it). */
  | "absent"
  /** The contact exists (the write changes it, or deletes it). */
  | "present"
  /** The contact exists and is unsubscribed (the write subscribes it). */
  | "unsubscribed"
  /** The contact exists and is subscribed (the write unsubscribes it). */
  | "subscribed";

/** The contact an item names (?2 project; the item's id at $[3], lower-case address at $[4]). */
const ITEM_CONTACT = `c.project_id = ?2 AND (c.id = json_extract(j.value, '$[3]') OR c.email = json_extract(j.value, '$[4]'))`;

const CONTACT_BEFORE_SQL = `INSERT INTO webhook_events (id, project_id, type, payload, created_at)
  SELECT json_extract(j.value, '$[0]'), ?2, json_extract(j.value, '$[1]'),
    json_object('type', json_extract(j.value, '$[1]'), 'timestamp', ?3, 'data', json('{}')), ?4
  FROM json_each(?1) AS j
  WHERE EXISTS (SELECT 1 FROM webhook_endpoints w WHERE w.project_id = ?2 AND w.enabled = 1
      AND (w.events = '[]' OR EXISTS (SELECT 1 FROM json_each(w.events) WHERE value = json_extract(j.value, '$[1]'))))
    AND CASE json_extract(j.value, '$[2]')
      WHEN 'absent' THEN NOT EXISTS (SELECT 1 FROM contacts c WHERE c.project_id = ?2 AND c.email = json_extract(j.value, '$[4]'))
      WHEN 'present' THEN EXISTS (SELECT 1 FROM contacts c WHERE ${ITEM_CONTACT})
      WHEN 'unsubscribed' THEN EXISTS (SELECT 1 FROM contacts c WHERE ${ITEM_CONTACT} AND c.subscribed = 0)
      WHEN 'subscribed' THEN EXISTS (SELECT 1 FROM contacts c WHERE ${ITEM_CONTACT} AND c.subscribed = 1)
      ELSE 0 END
  RETURNING id, project_id`;

const CONTACT_AFTER_SQL = `UPDATE webhook_events SET payload = json_set(payload, '$.data', (SELECT ${CONTACT_JSON} FROM contacts c WHERE ${ITEM_CONTACT}))
  FROM json_each(?1) AS j
  WHERE webhook_events.id = json_extract(j.value, '$[0]') AND EXISTS (SELECT 1 FROM contacts c WHERE ${ITEM_CONTACT})`;

/** One contact.* event of a contact write (see contactEvents). */
export interface ContactEventItem {
  /** The event's id (UUIDv7). */
  id: string;
  type: WebhookEventType;
  condition: ContactEventCondition;
  /** The contact, by id or by address. */
  contactId?: string;
  email?: string;
}

/**
 * `contact.*` events of one write (any number of contacts and types), as two
 * statements around the write in its batch: `before` records each event whose
 * `condition` holds for its contact as it was (so created, subscribed and
 * unsubscribed mean what happened, not what is) and an enabled endpoint
 * subscribes to; `after` fills their data with the contact object (as GET
 * /contacts/{id} shows it) as the write left it. For `contact.deleted` use
 * recordContactSnapshot before the DELETE instead.
 */
export function contactEvents(
  d1: D1Database,
  input: { projectId: string; at: Date; items: readonly ContactEventItem[] },
): { before: D1PreparedStatement; after: D1PreparedStatement } {
  const items = JSON.stringify(input.items.map((i) => [i.id, i.type, i.condition, i.contactId ?? null, i.email?.toLowerCase() ?? null]));
  return {
    before: recordsWebhookEvents(d1.prepare(CONTACT_BEFORE_SQL).bind(items, input.projectId, input.at.toISOString(), input.at.getTime())),
    after: d1.prepare(CONTACT_AFTER_SQL).bind(items, input.projectId),
  };
}

/** An item's contact after the write (?2 project): by its id, or by its lower-case address (created or not); CROSS JOIN: items first, then the key. */
const WRITTEN_CONTACT = `c.id = coalesce(json_extract(j.value, '$[2]'),
    (SELECT x.id FROM contacts x WHERE x.project_id = ?2 AND x.email = json_extract(j.value, '$[3]'))) AND c.project_id = ?2`;
/** What the write did to it: the contact holding the item's new id was created by it. */
const WRITTEN_TYPE = `(CASE WHEN c.id = json_extract(j.value, '$[1]') THEN 'contact.created' ELSE 'contact.updated' END)`;

const CONTACTS_WRITTEN_SQL = `INSERT INTO webhook_events (id, project_id, type, payload, created_at)
  SELECT json_extract(j.value, '$[0]'), ?2, ${WRITTEN_TYPE}, json_object('type', ${WRITTEN_TYPE}, 'timestamp', ?3, 'data', ${CONTACT_JSON}), ?4
  FROM json_each(?1) AS j CROSS JOIN contacts AS c ON ${WRITTEN_CONTACT}
  WHERE (CASE WHEN c.id = json_extract(j.value, '$[1]') THEN json_extract(j.value, '$[4]') & 1 ELSE json_extract(j.value, '$[4]') & 2 END) != 0
    AND EXISTS (SELECT 1 FROM webhook_endpoints w WHERE w.project_id = ?2 AND w.enabled = 1
      AND (w.events = '[]' OR EXISTS (SELECT 1 FROM json_each(w.events) WHERE value = ${WRITTEN_TYPE})))
  RETURNING id, project_id`;

/** A contact a write creates or updates, for contactsWritten. */
export interface WrittenContactItem {
  /** The event's id (UUIDv7): one event per contact, created or updated, whichever the write did. */
  id: string;
  /** The id the write gives the contact if it creates it (upsertContacts' ids); the contact is new exactly when it has this id afterwards. */
  newId?: string;
  /** The contact: by id, else by address (lower-cased here). */
  contactId?: string;
  email?: string;
  /** Record contact.created when the write created it (needs newId). */
  created: boolean;
  /** Record contact.updated when the contact existed (the write changes every existing contact it names). */
  updated: boolean;
}

/**
 * `contact.created` and `contact.updated` of a write that creates or changes
 * contacts, judged after it in one statement: a contact holding the item's
 * `newId` was created by it, any other the write names existed and was
 * updated. Each event has the contact as the write left it.
 */
export function contactsWritten(d1: D1Database, input: { projectId: string; at: Date; items: readonly WrittenContactItem[] }): D1PreparedStatement {
  const items = input.items.map((i) => [i.id, i.newId ?? null, i.contactId ?? null, i.email?.toLowerCase() ?? null, (i.created ? 1 : 0) | (i.updated ? 2 : 0)]);
  return recordsWebhookEvents(d1.prepare(CONTACTS_WRITTEN_SQL).bind(JSON.stringify(items), input.projectId, input.at.toISOString(), input.at.getTime()));
}

const CONTACT_SNAPSHOT_SQL = `INSERT INTO webhook_events (id, project_id, type, payload, created_at)
  SELECT ?1, c.project_id, ?3, json_object('type', ?3, 'timestamp', ?4, 'data', ${CONTACT_JSON}), ?5
  FROM contacts c WHERE c.project_id = ?2 AND (c.id = ?6 OR c.email = ?7) AND ${SUBSCRIBED}
  RETURNING id, project_id`;

/** A `contact.*` event with the contact as it is at this point of the batch (contact.deleted: before the DELETE). */
export function recordContactSnapshot(
  d1: D1Database,
  input: { id: string; projectId: string; type: WebhookEventType; at: Date; contactId?: string; email?: string },
): D1PreparedStatement {
  return recordsWebhookEvents(
    d1
      .prepare(CONTACT_SNAPSHOT_SQL)
      .bind(input.id, input.projectId, input.type, input.at.toISOString(), input.at.getTime(), input.contactId ?? null, input.email?.toLowerCase() ?? null),
  );
}

const EXECUTION_EVENT_SQL = `INSERT INTO webhook_events (id, project_id, type, payload, created_at)
  SELECT ?1, x.project_id, ?3, json_object('type', ?3, 'timestamp', ?4, 'data', json_object(
      'id', x.id, 'workflowId', x.workflow_id, 'workflowVersion', x.workflow_version, 'contactId', x.contact_id,
      'status', x.status, 'currentStepId', x.current_step_id,
      'resumeAt', CASE WHEN x.resume_at IS NULL THEN NULL ELSE ${ISO("x.resume_at")} END,
      'error', x.error, 'history', json(x.history), 'startedAt', ${ISO("x.started_at")},
      'finishedAt', CASE WHEN x.finished_at IS NULL THEN NULL ELSE ${ISO("x.finished_at")} END)), ?5
  FROM workflow_executions x
  WHERE x.id = ?2 AND x.finished_at = ?5
    AND EXISTS (SELECT 1 FROM webhook_endpoints w WHERE w.project_id = x.project_id AND w.enabled = 1
      AND (w.events = '[]' OR EXISTS (SELECT 1 FROM json_each(w.events) WHERE value = ?3)))
  RETURNING id, project_id`;

/**
 * A `workflow.execution.*` event with the execution object, only when this
 * batch finished the execution (its finished_at is `at`); put it after the update.
 */
export function recordExecutionWebhookEvent(d1: D1Database, input: { id: string; executionId: string; type: WebhookEventType; at: Date }): D1PreparedStatement {
  return recordsWebhookEvents(d1.prepare(EXECUTION_EVENT_SQL).bind(input.id, input.executionId, input.type, input.at.toISOString(), input.at.getTime()));
}

/** A `webhook.test` event for one endpoint, fanned out already: deliveries.ts insertTestDelivery makes its one delivery in the same batch. */
export function recordTestEvent(d1: D1Database, input: { id: string; projectId: string; payload: string; at: Date }): D1PreparedStatement {
  return d1.prepare(TEST_EVENT_SQL).bind(input.id, input.projectId, input.payload, input.at.getTime());
}
const TEST_EVENT_SQL = "INSERT INTO webhook_events (id, project_id, type, payload, fanned_out, created_at) VALUES (?1, ?2, 'webhook.test', ?3, 1, ?4)";

// The outbox ------------------------------------------------------------------

/**
 * Claims up to `limit` recorded events that were never fanned out: never
 * queued and older than `unqueuedBefore` (their request's own hand-over did not
 * happen), or queued before `requeueBefore` (the message was lost).
 */
export function claimOutboxEvents(d1: D1Database, at: Date, unqueuedBefore: Date, requeueBefore: Date, limit: number): D1PreparedStatement {
  return d1.prepare(CLAIM_OUTBOX_SQL).bind(at.getTime(), idAtTime(unqueuedBefore.getTime()), requeueBefore.getTime(), limit);
}
const CLAIM_OUTBOX_SQL = `UPDATE webhook_events SET queued_at = ?1
  WHERE id IN (SELECT id FROM webhook_events
               WHERE fanned_out = 0 AND ((queued_at IS NULL AND id < ?2) OR queued_at < ?3)
               ORDER BY queued_at, id LIMIT ?4)
  RETURNING id, project_id`;

/** Gives claimed events back to the outbox (the queue refused them). */
export function unclaimOutboxEvents(d1: D1Database, eventIds: string[]): D1PreparedStatement {
  return d1.prepare(UNCLAIM_OUTBOX_SQL).bind(JSON.stringify(eventIds));
}
const UNCLAIM_OUTBOX_SQL = "UPDATE webhook_events SET queued_at = NULL WHERE id IN (SELECT value FROM json_each(?1))";

/** Marks events whose deliveries exist (or that no endpoint wants any more): the outbox is done with them. */
export function markEventsFannedOut(d1: D1Database, eventIds: string[]): D1PreparedStatement {
  return d1.prepare(MARK_FANNED_OUT_SQL).bind(JSON.stringify(eventIds));
}
const MARK_FANNED_OUT_SQL = "UPDATE webhook_events SET fanned_out = 1 WHERE id IN (SELECT value FROM json_each(?1))";

/** Events a day older than `before` (the deliveries made seconds after them go first), at most `limit` (UUIDv7 ids: an id range). */
export function pruneEvents(d1: D1Database, before: Date, limit: number): D1PreparedStatement {
  return d1.prepare(PRUNE_EVENTS_SQL).bind(idAtTime(before.getTime() - 86_400_000), limit);
}
const PRUNE_EVENTS_SQL = "DELETE FROM webhook_events WHERE id IN (SELECT id FROM webhook_events WHERE id < ?1 ORDER BY id LIMIT ?2)";

/** The module's fixed SQL, by name (test/store/statements.test.ts compiles each against the schema). */
export const FIXED_SQL = {
  TOPICS_UPDATED_SQL,
  RECORD_EVENT_SQL,
  CAMPAIGN_SENT_SQL,
  EMAIL_EVENTS_SQL,
  CONTACT_BEFORE_SQL,
  CONTACT_AFTER_SQL,
  CONTACTS_WRITTEN_SQL,
  CONTACT_SNAPSHOT_SQL,
  EXECUTION_EVENT_SQL,
  TEST_EVENT_SQL,
  CLAIM_OUTBOX_SQL,
  UNCLAIM_OUTBOX_SQL,
  MARK_FANNED_OUT_SQL,
  PRUNE_EVENTS_SQL,
};
