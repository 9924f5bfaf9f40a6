/**
 * The only writer of the webhook tables (webhook_endpoints, webhook_events,
 * webhook_deliveries; webhook_pending is kept by triggers). Every function returns D1
 * statements with fixed SQL, so a caller puts them in one batch with the
 * change they belong to. Statements that record events mark themselves
 * (recordsWebhookEvents, RETURNING id, project_id), so a WriteBatch hands
 * them over wherever they sit.
 */

import { recordsWebhookEvents } from "./marks";

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
 * for it holds the event's id when one was recorded (see recordedEventIds).
 */
export function recordWebhookEvent(d1: D1Database, input: { id: string; projectId: string; type: string; data: unknown; at: Date }): D1PreparedStatement {
  return recordsWebhookEvents(
    d1.prepare(RECORD_EVENT_SQL).bind(input.id, input.projectId, input.type, input.at.toISOString(), JSON.stringify(input.data ?? {}), input.at.getTime()),
  );
}

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
  type: string;
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
}

const WHEN_SQL = EMAIL_CHANGE_COLUMNS.flatMap((c) => [`WHEN 'set:${c}' THEN e.${c} = ?2`, `WHEN 'unset:${c}' THEN e.${c} IS NULL`]).join(" ");

const EMAIL_EVENTS_SQL = `INSERT INTO webhook_events (id, project_id, type, payload, created_at)
  SELECT json_extract(j.value, '$[0]'), e.project_id, json_extract(j.value, '$[2]'),
    json_object('type', json_extract(j.value, '$[2]'), 'timestamp', ?3, 'data', json_patch(json_object(
      'emailId', e.id, 'contactId', e.contact_id, 'to', e.to_address, 'from', e.from_address, 'subject', e.subject,
      'campaignId', e.campaign_id, 'templateId', e.template_id, 'workflowId', NULL), json_extract(j.value, '$[4]'))), ?2
  FROM json_each(?1) AS j JOIN emails AS e ON e.id = json_extract(j.value, '$[1]')
  WHERE (CASE json_extract(j.value, '$[3]') ${WHEN_SQL} ELSE 1 END)
    AND (json_extract(j.value, '$[5]') IS NULL OR e.status = json_extract(j.value, '$[5]'))
    AND (json_extract(j.value, '$[6]') IS NULL OR e.error = json_extract(j.value, '$[6]'))
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
  type: string;
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
  input: { id: string; projectId: string; type: string; at: Date; contactId?: string; email?: string },
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
export function recordExecutionWebhookEvent(d1: D1Database, input: { id: string; executionId: string; type: string; at: Date }): D1PreparedStatement {
  return recordsWebhookEvents(d1.prepare(EXECUTION_EVENT_SQL).bind(input.id, input.executionId, input.type, input.at.toISOString(), input.at.getTime()));
}

/** The ids of the events a batch recorded, from the results of its record* statements. */
export function recordedEventIds(results: readonly (readonly Record<string, unknown>[])[]): string[] {
  const ids: string[] = [];
  for (const rows of results) for (const row of rows) if (typeof row.id === "string") ids.push(row.id);
  return ids;
}

// Endpoints -----------------------------------------------------------------

const INSERT_ENDPOINT_SQL = `INSERT INTO webhook_endpoints (id, project_id, url, url_key, events, description, enabled, secret_encrypted, created_at, updated_at)
  SELECT ?1, ?2, ?3, ?10, ?4, ?5, ?6, ?7, ?8, ?8
  WHERE (SELECT count(*) FROM webhook_endpoints WHERE project_id = ?2) < ?9
  RETURNING *`;

/**
 * A new endpoint, unless the project already has `cap` (then it returns no
 * row). `urlKey` is unique per project (a duplicate fails on
 * webhook_endpoints_project_url_uq).
 */
export function insertEndpoint(
  d1: D1Database,
  row: {
    id: string;
    projectId: string;
    url: string;
    urlKey: string;
    events: string[];
    description: string | null;
    enabled: boolean;
    secretEncrypted: string;
    at: Date;
  },
  cap: number,
): D1PreparedStatement {
  return d1
    .prepare(INSERT_ENDPOINT_SQL)
    .bind(
      row.id,
      row.projectId,
      row.url,
      JSON.stringify(row.events),
      row.description,
      row.enabled ? 1 : 0,
      row.secretEncrypted,
      row.at.getTime(),
      cap,
      row.urlKey,
    );
}

/** The project's endpoints' ids and URLs (at most the endpoint cap), for the one-endpoint-per-URL check. */
export function endpointUrls(d1: D1Database, projectId: string): D1PreparedStatement {
  return d1.prepare("SELECT id, url, url_key, enabled FROM webhook_endpoints WHERE project_id = ?1").bind(projectId);
}

const UPDATE_ENDPOINT_SQL = `UPDATE webhook_endpoints SET
    url = coalesce(?3, url),
    events = coalesce(?4, events),
    description = CASE WHEN ?5 THEN ?6 ELSE description END,
    enabled = coalesce(?7, enabled),
    -- Enabling again clears the reason and the failure streak.
    disabled_reason = CASE WHEN ?7 = 1 THEN NULL ELSE disabled_reason END,
    failing_since = CASE WHEN ?7 = 1 THEN NULL ELSE failing_since END,
    url_key = coalesce(?9, url_key),
    updated_at = ?8
  WHERE id = ?1 AND project_id = ?2
  RETURNING *`;

/** Changes the fields given; `urlKey` with a new URL (or to give a keyless duplicate its key when enabled). */
export function updateEndpoint(
  d1: D1Database,
  projectId: string,
  id: string,
  set: { url?: string; urlKey?: string; events?: string[]; description?: string | null; enabled?: boolean },
  at: Date,
): D1PreparedStatement {
  return d1
    .prepare(UPDATE_ENDPOINT_SQL)
    .bind(
      id,
      projectId,
      set.url ?? null,
      set.events ? JSON.stringify(set.events) : null,
      set.description !== undefined ? 1 : 0,
      set.description ?? null,
      set.enabled === undefined ? null : set.enabled ? 1 : 0,
      at.getTime(),
      set.urlKey ?? null,
    );
}

/** Deleting an endpoint keeps its deliveries until retention prunes them (nothing lists them any more). */
export function deleteEndpoint(d1: D1Database, projectId: string, id: string): D1PreparedStatement {
  return d1.prepare("DELETE FROM webhook_endpoints WHERE id = ?1 AND project_id = ?2 RETURNING id").bind(id, projectId);
}

const ROTATE_SQL = `UPDATE webhook_endpoints SET
    previous_secret_encrypted = ?3, previous_secret_expires_at = ?4, secret_encrypted = ?5, updated_at = ?6
  WHERE id = ?1 AND project_id = ?2
  RETURNING *`;

/** A new secret; the previous one (re-encrypted by the caller) keeps signing until `previousExpiresAt`. */
export function rotateEndpointSecret(
  d1: D1Database,
  projectId: string,
  id: string,
  secrets: { currentEncrypted: string; previousEncrypted: string; previousExpiresAt: Date },
  at: Date,
): D1PreparedStatement {
  return d1.prepare(ROTATE_SQL).bind(id, projectId, secrets.previousEncrypted, secrets.previousExpiresAt.getTime(), secrets.currentEncrypted, at.getTime());
}

// Fan-out and deliveries -----------------------------------------------------

/** Marks events whose deliveries exist (or that no endpoint wants any more). */
export function markEventsFannedOut(d1: D1Database, eventIds: string[]): D1PreparedStatement {
  return d1.prepare("UPDATE webhook_events SET fanned_out = 1 WHERE id IN (SELECT value FROM json_each(?1))").bind(JSON.stringify(eventIds));
}

/**
 * How a fan-out creates a delivery: `claimed`, its first attempt made now by
 * the caller (attempts 1, as claimDeliveries would); `queued`, a message for
 * its first attempt is sent; `parked`, it waits for the paced drain (over the
 * per-minute cap); `refused`, FAILED at once with the reason (over the
 * project's pending cap).
 */
export type NewDeliveryMode = "claimed" | "queued" | "parked" | "refused";

const INSERT_DELIVERIES_SQL = `INSERT INTO webhook_deliveries (id, project_id, webhook_id, event_id, type, status, attempts, last_error,
    next_attempt_at, claimed_at, queued_at, created_at, updated_at)
  SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]'), json_extract(value, '$[3]'),
         json_extract(value, '$[4]'),
         CASE json_extract(value, '$[5]') WHEN 'refused' THEN 'FAILED' ELSE 'PENDING' END,
         CASE json_extract(value, '$[5]') WHEN 'claimed' THEN 1 ELSE 0 END,
         CASE json_extract(value, '$[5]') WHEN 'refused' THEN ?4 END,
         CASE json_extract(value, '$[5]') WHEN 'refused' THEN NULL WHEN 'claimed' THEN ?3 ELSE ?2 END,
         CASE json_extract(value, '$[5]') WHEN 'claimed' THEN ?2 END,
         CASE json_extract(value, '$[5]') WHEN 'queued' THEN ?2 END,
         ?2, ?2
  FROM json_each(?1) WHERE true
  ON CONFLICT (webhook_id, event_id) DO NOTHING
  RETURNING *`;

/**
 * One delivery per (event, endpoint), each created as its `mode` says; a pair
 * that has one already is left alone. `claimUntil` ends the claim of the
 * `claimed` ones; `refusal` is the lastError of the `refused` ones. Returns
 * the deliveries it created (none for pairs that had one).
 */
export function insertDeliveries(
  d1: D1Database,
  rows: { id: string; projectId: string; webhookId: string; eventId: string; type: string; mode: NewDeliveryMode }[],
  at: Date,
  claimUntil: Date,
  refusal: string | null,
): D1PreparedStatement {
  const values = rows.map((r) => [r.id, r.projectId, r.webhookId, r.eventId, r.type, r.mode]);
  return d1.prepare(INSERT_DELIVERIES_SQL).bind(JSON.stringify(values), at.getTime(), claimUntil.getTime(), refusal);
}

/** The PENDING deliveries (webhook_pending, kept by triggers) of the projects of these events, for the pending cap. */
export function pendingCounts(d1: D1Database, eventIds: string[]): D1PreparedStatement {
  return d1
    .prepare(
      `SELECT project_id, pending FROM webhook_pending WHERE project_id IN
         (SELECT project_id FROM webhook_events WHERE id IN (SELECT value FROM json_each(?1)))`,
    )
    .bind(JSON.stringify(eventIds));
}

/** What attempting deliveries needs besides the deliveries, as reads for their batch: payloads and endpoints. */
export function attemptInputs(d1: D1Database, input: { eventIds: string[]; webhookIds: string[] }): D1PreparedStatement[] {
  return [
    d1.prepare("SELECT id, payload FROM webhook_events WHERE id IN (SELECT value FROM json_each(?1))").bind(JSON.stringify(input.eventIds)),
    d1.prepare("SELECT * FROM webhook_endpoints WHERE id IN (SELECT value FROM json_each(?1))").bind(JSON.stringify(input.webhookIds)),
  ];
}

/** The same reads for deliveries named by id (a queued attempt's batch). */
export function attemptInputsOf(d1: D1Database, deliveryIds: string[]): D1PreparedStatement[] {
  const ids = JSON.stringify(deliveryIds);
  return [
    d1
      .prepare("SELECT id, payload FROM webhook_events WHERE id IN (SELECT event_id FROM webhook_deliveries WHERE id IN (SELECT value FROM json_each(?1)))")
      .bind(ids),
    d1
      .prepare("SELECT * FROM webhook_endpoints WHERE id IN (SELECT webhook_id FROM webhook_deliveries WHERE id IN (SELECT value FROM json_each(?1)))")
      .bind(ids),
  ];
}

/** The attempt a delivery's message carries is the next one: ?1 maps delivery ids to attempt numbers. */
const NEXT_ATTEMPT = `id IN (SELECT key FROM json_each(?1)) AND status = 'PENDING' AND claimed_at IS NULL
    AND attempts + 1 = json_extract(?1, '$."' || id || '"')`;

const CLAIM_SQL = `UPDATE webhook_deliveries SET attempts = attempts + 1, next_attempt_at = ?2, claimed_at = ?3, queued_at = NULL, updated_at = ?3
  WHERE ${NEXT_ATTEMPT}
  RETURNING *`;

/**
 * Claims deliveries for an attempt before anything is sent: `attempts` maps a
 * delivery id to the attempt number its message carries. Only a PENDING,
 * unclaimed delivery whose previous attempt is exactly the one before is
 * claimed (the attempt counter moves on atomically: the attempt counts from
 * here, whatever becomes of the call), so a redelivered or stale message
 * claims nothing and sends nothing. A claim older than its lease never
 * reported: sweepDeadClaims counts it as a failed attempt.
 */
export function claimDeliveries(d1: D1Database, attempts: Record<string, number>, claimUntil: Date, at: Date): D1PreparedStatement {
  return d1.prepare(CLAIM_SQL).bind(JSON.stringify(attempts), claimUntil.getTime(), at.getTime());
}

/** Attempts over the per-minute cap: no message any more, left to the paced drain (their due time kept). */
export function parkDeliveries(d1: D1Database, attempts: Record<string, number>, at: Date): D1PreparedStatement {
  return d1.prepare(`UPDATE webhook_deliveries SET queued_at = NULL, updated_at = ?2 WHERE ${NEXT_ATTEMPT}`).bind(JSON.stringify(attempts), at.getTime());
}

export interface DeliveryOutcome {
  id: string;
  /** The attempt number this outcome belongs to (its claim): a later claim's row is left alone. */
  attempt: number;
  status: "PENDING" | "SUCCEEDED" | "FAILED";
  statusCode: number | null;
  error: string | null;
  /** PENDING: when the next attempt is due. */
  nextAttemptAt: Date | null;
  /** A message for the next attempt is sent (else the drain queues it when due). */
  queued?: boolean;
  /** The attempt was not made: given back (attempts - 1, nothing else recorded), due at nextAttemptAt for the drain. */
  release?: boolean;
}

const OUTCOMES_SQL = `UPDATE webhook_deliveries SET
    status = json_extract(o.value, '$[1]'),
    last_status_code = CASE WHEN json_extract(o.value, '$[7]') THEN last_status_code ELSE json_extract(o.value, '$[2]') END,
    last_error = CASE WHEN json_extract(o.value, '$[7]') THEN last_error ELSE json_extract(o.value, '$[3]') END,
    attempts = attempts - json_extract(o.value, '$[7]'),
    next_attempt_at = json_extract(o.value, '$[4]'),
    claimed_at = NULL,
    queued_at = CASE WHEN json_extract(o.value, '$[5]') THEN ?2 END,
    updated_at = ?2
  FROM json_each(?1) AS o
  WHERE webhook_deliveries.id = json_extract(o.value, '$[0]') AND webhook_deliveries.attempts = json_extract(o.value, '$[6]')
    AND webhook_deliveries.claimed_at IS NOT NULL`;

/** Records what the attempts did, in one statement (only while each is still the claimed attempt). */
export function recordDeliveryOutcomes(d1: D1Database, outcomes: DeliveryOutcome[], at: Date): D1PreparedStatement {
  const values = outcomes.map((o) => [
    o.id,
    o.status,
    o.statusCode,
    o.error?.slice(0, 1000) ?? null,
    o.nextAttemptAt?.getTime() ?? null,
    o.queued ? 1 : 0,
    o.attempt,
    o.release ? 1 : 0,
  ]);
  return d1.prepare(OUTCOMES_SQL).bind(JSON.stringify(values), at.getTime());
}

/** A success ends the endpoints' failure streak. */
export function endpointsSucceeded(d1: D1Database, webhookIds: string[]): D1PreparedStatement {
  return d1
    .prepare("UPDATE webhook_endpoints SET failing_since = NULL WHERE id IN (SELECT value FROM json_each(?1)) AND failing_since IS NOT NULL")
    .bind(JSON.stringify(webhookIds));
}

/**
 * Failures start a streak (or continue it); an endpoint whose streak began at
 * or before `disableBefore` is disabled with `reason`.
 */
export function endpointsFailed(d1: D1Database, webhookIds: string[], at: Date, disableBefore: Date, reason: string): D1PreparedStatement[] {
  const ids = JSON.stringify(webhookIds);
  return [
    d1
      .prepare("UPDATE webhook_endpoints SET failing_since = ?2 WHERE id IN (SELECT value FROM json_each(?1)) AND failing_since IS NULL")
      .bind(ids, at.getTime()),
    d1
      .prepare(
        `UPDATE webhook_endpoints SET enabled = 0, disabled_reason = ?3, updated_at = ?4
         WHERE id IN (SELECT value FROM json_each(?1)) AND enabled = 1 AND failing_since <= ?2`,
      )
      .bind(ids, disableBefore.getTime(), reason, at.getTime()),
  ];
}

/**
 * Sends a delivery again now: PENDING, due now. Returns the delivery (with the
 * attempt number the retry carries: attempts + 1), or no row.
 */
export function requeueDelivery(d1: D1Database, projectId: string, webhookId: string, id: string, at: Date): D1PreparedStatement {
  return d1
    .prepare(
      `UPDATE webhook_deliveries SET status = 'PENDING', next_attempt_at = ?4, queued_at = ?4, updated_at = ?4
       WHERE id = ?1 AND project_id = ?2 AND webhook_id = ?3
       RETURNING *`,
    )
    .bind(id, projectId, webhookId, at.getTime());
}

/** A `webhook.test` event and its one delivery to this endpoint (fanned out already). */
export function recordTestDelivery(
  d1: D1Database,
  input: { eventId: string; deliveryId: string; projectId: string; webhookId: string; payload: string; at: Date },
): D1PreparedStatement[] {
  const at = input.at.getTime();
  return [
    d1
      .prepare("INSERT INTO webhook_events (id, project_id, type, payload, fanned_out, created_at) VALUES (?1, ?2, 'webhook.test', ?3, 1, ?4)")
      .bind(input.eventId, input.projectId, input.payload, at),
    d1
      .prepare(
        `INSERT INTO webhook_deliveries (id, project_id, webhook_id, event_id, type, status, attempts, next_attempt_at, queued_at, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, 'webhook.test', 'PENDING', 0, ?5, ?5, ?5, ?5) RETURNING *`,
      )
      .bind(input.deliveryId, input.projectId, input.webhookId, input.eventId, at),
  ];
}

// Outbox and safety nets -------------------------------------------------------

/**
 * Claims up to `limit` recorded events that were never fanned out: never
 * queued and older than `unqueuedBefore` (their request's own hand-over did not
 * happen), or queued before `requeueBefore` (the message was lost).
 */
export function claimOutboxEvents(d1: D1Database, at: Date, unqueuedBefore: Date, requeueBefore: Date, limit: number): D1PreparedStatement {
  return d1
    .prepare(
      `UPDATE webhook_events SET queued_at = ?1
       WHERE id IN (SELECT id FROM webhook_events
                    WHERE fanned_out = 0 AND ((queued_at IS NULL AND id < ?2) OR queued_at < ?3)
                    ORDER BY queued_at, id LIMIT ?4)
       RETURNING id, project_id`,
    )
    .bind(at.getTime(), idBefore(unqueuedBefore), requeueBefore.getTime(), limit);
}

/** The lowest UUIDv7 of a moment (as lib/ids idAtTime; the store imports nothing). */
function idBefore(at: Date): string {
  const hex = Math.max(0, Math.floor(at.getTime())).toString(16).padStart(12, "0").slice(-12);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-0000-0000-000000000000`;
}

/** Gives claimed events back to the outbox (the queue refused them). */
export function unclaimOutboxEvents(d1: D1Database, eventIds: string[]): D1PreparedStatement {
  return d1.prepare("UPDATE webhook_events SET queued_at = NULL WHERE id IN (SELECT value FROM json_each(?1))").bind(JSON.stringify(eventIds));
}

/**
 * Attempts claimed before `claimedBefore` that never reported (their
 * invocation ended): each counts as a failed attempt, so the retry schedule
 * (`schedule`, seconds after attempt n at index n - 1) and the failure streak
 * apply as after any failure: PENDING due after its delay (marked queued: the
 * caller sends its message), or FAILED past the schedule. At most `limit`;
 * returns the deliveries with their endpoints, attempts and due times.
 */
export function sweepDeadClaims(d1: D1Database, at: Date, claimedBefore: Date, schedule: readonly number[], error: string, limit: number) {
  return d1.prepare(SWEEP_DEAD_SQL).bind(at.getTime(), claimedBefore.getTime(), JSON.stringify(schedule), error, limit);
}
const DELAY_AFTER = `json_extract(?3, '$[' || (attempts - 1) || ']')`;
const SWEEP_DEAD_SQL = `UPDATE webhook_deliveries SET
    status = CASE WHEN ${DELAY_AFTER} IS NULL THEN 'FAILED' ELSE 'PENDING' END,
    next_attempt_at = CASE WHEN ${DELAY_AFTER} IS NULL THEN NULL ELSE ?1 + ${DELAY_AFTER} * 1000 END,
    last_status_code = NULL, last_error = ?4, claimed_at = NULL, queued_at = ?1, updated_at = ?1
  WHERE id IN (SELECT id FROM webhook_deliveries WHERE claimed_at IS NOT NULL AND claimed_at < ?2 ORDER BY claimed_at LIMIT ?5)
  RETURNING id, project_id, webhook_id, status, attempts, next_attempt_at`;

/** A project's deliveries the drain may queue (?1 project, ?2 now, ?3 overdue-before): due, unclaimed, and no message on its way. */
const DRAINABLE = `project_id = ?1 AND status = 'PENDING' AND next_attempt_at <= ?2 AND claimed_at IS NULL
    AND (queued_at IS NULL OR next_attempt_at < ?3)`;

/**
 * Projects with deliveries for the paced drain (parked over the per-minute
 * cap, or whose message was lost: due before `overdueBefore` and never
 * claimed), the least recently drained first, at most `limit`.
 */
export function projectsToDrain(d1: D1Database, at: Date, overdueBefore: Date, limit: number): D1PreparedStatement {
  return d1
    .prepare(
      `SELECT p.project_id FROM webhook_pending p WHERE p.pending > 0
         AND EXISTS (SELECT 1 FROM webhook_deliveries WHERE ${DRAINABLE.replaceAll("?1", "p.project_id")})
       ORDER BY p.drained_at LIMIT ?4`,
    )
    .bind(null, at.getTime(), overdueBefore.getTime(), limit);
}

/**
 * Up to `limit` of a project's drainable deliveries, oldest due first, marked
 * queued now (due now: if the message is lost, the drain takes them again
 * after the grace); returned with the attempt number to queue. The project
 * moves to the back of the drain's rotation.
 */
export function drainDeliveries(d1: D1Database, projectId: string, at: Date, overdueBefore: Date, limit: number): D1PreparedStatement[] {
  return [
    d1
      .prepare(
        `UPDATE webhook_deliveries SET queued_at = ?2, next_attempt_at = ?2, updated_at = ?2
         WHERE id IN (SELECT id FROM webhook_deliveries WHERE ${DRAINABLE} ORDER BY next_attempt_at LIMIT ?4)
         RETURNING id, project_id, attempts`,
      )
      .bind(projectId, at.getTime(), overdueBefore.getTime(), limit),
    d1.prepare("UPDATE webhook_pending SET drained_at = ?2 WHERE project_id = ?1").bind(projectId, at.getTime()),
  ];
}

// Retention -----------------------------------------------------------------

/**
 * Deliveries created before `before` and events a day older still (UUIDv7 ids:
 * an id range; an event's deliveries are made seconds after it), at most
 * `limit` of each.
 */
export function pruneWebhookHistory(d1: D1Database, before: Date, limit: number): D1PreparedStatement[] {
  return [
    d1
      .prepare("DELETE FROM webhook_deliveries WHERE id IN (SELECT id FROM webhook_deliveries WHERE id < ?1 ORDER BY id LIMIT ?2)")
      .bind(idBefore(before), limit),
    d1
      .prepare("DELETE FROM webhook_events WHERE id IN (SELECT id FROM webhook_events WHERE id < ?1 ORDER BY id LIMIT ?2)")
      .bind(idBefore(new Date(before.getTime() - 86_400_000)), limit),
  ];
}

/** The module's fixed SQL, by name (test/store/statements.test.ts compiles each against the schema). */
export const FIXED_SQL = {
  RECORD_EVENT_SQL,
  CAMPAIGN_SENT_SQL,
  EMAIL_EVENTS_SQL,
  CONTACT_BEFORE_SQL,
  CONTACT_AFTER_SQL,
  CONTACTS_WRITTEN_SQL,
  CONTACT_SNAPSHOT_SQL,
  EXECUTION_EVENT_SQL,
  INSERT_ENDPOINT_SQL,
  UPDATE_ENDPOINT_SQL,
  ROTATE_SQL,
  INSERT_DELIVERIES_SQL,
  CLAIM_SQL,
  OUTCOMES_SQL,
  SWEEP_DEAD_SQL,
};
