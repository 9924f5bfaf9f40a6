import { and, eq, inArray, sql, type SQL } from "drizzle-orm";
import type { SQLiteUpdateSetSource } from "drizzle-orm/sqlite-core";
import { getDb } from "../db/client";
import { emails, type Email, type EmailStatus } from "../db/schema";
import { CLAIM_GATES_SQL } from "../services/consent/gates";
import type { AfterCommit } from "../lib/after-commit";
import { chunks, IDS_PER_JSON_STATEMENT, IN_LIST_IDS, MAX_JSON_PARAM_CHARS } from "../lib/chunks";
import { WriteBatch } from "./batch";

/**
 * The emails table's writes: QUEUED emails in, the consumer's claim,
 * outcomes and deferral, feedback and engagement, the sweep's and the
 * retention's updates. A status only moves forward:
 * QUEUED < SENDING < SENT < DELIVERED < OPENED < CLICKED, and the final
 * outcomes FAILED < BOUNCED < COMPLAINED rank above all of them, so a
 * complaint after an open still ends as COMPLAINED while a late delivery
 * report or open never undoes a bounce.
 */
export const STATUS_RANK: Record<EmailStatus, number> = {
  QUEUED: 0,
  SENDING: 1,
  SENT: 2,
  DELIVERED: 3,
  OPENED: 4,
  CLICKED: 5,
  FAILED: 6,
  BOUNCED: 7,
  COMPLAINED: 8,
};

/**
 * The terms of the partial indexes on status (migrations 0028, 0033): a query carries the one its
 * index is defined with, so SQLite uses emails_pending_idx for QUEUED/SENDING mail and
 * emails_project_status_id_idx for the final statuses.
 */
export const PENDING_STATUS = sql`${emails.status} IN ('QUEUED', 'SENDING')`;
export const FINAL_STATUS = sql`${emails.status} NOT IN ('QUEUED', 'SENDING')`;

/** The status after `next` happened to an email in status `current`. */
export const advanceStatus = (current: EmailStatus, next: EmailStatus): EmailStatus => (STATUS_RANK[current] < STATUS_RANK[next] ? next : current);

/** SQL expression: the rank of the emails.status column. */
export function statusRankSql(column: SQL | typeof emails.status = emails.status): SQL<number> {
  const cases = Object.entries(STATUS_RANK).map(([status, rank]) => sql`WHEN ${status} THEN ${sql.raw(String(rank))}`);
  return sql<number>`(CASE ${column} ${sql.join(cases, sql` `)} ELSE -1 END)`;
}

/**
 * SQL expression for `SET status = ...`: `next` when it ranks above the
 * current status, the current status otherwise. With `from`, only a status
 * ranked at least `from` moves (opens and clicks leave QUEUED/SENDING to the consumer).
 */
export function advanceStatusSql(next: EmailStatus, options: { from?: EmailStatus } = {}): SQL<EmailStatus> {
  const rank = statusRankSql();
  const moves =
    options.from === undefined
      ? sql`${rank} < ${sql.raw(String(STATUS_RANK[next]))}`
      : sql`${rank} < ${sql.raw(String(STATUS_RANK[next]))} AND ${rank} >= ${sql.raw(String(STATUS_RANK[options.from]))}`;
  return sql<EmailStatus>`(CASE WHEN ${moves} THEN ${next} ELSE ${emails.status} END)`;
}

// ---- QUEUED emails in --------------------------------------------------------

/** What every email of one insert shares. */
export interface QueuedHead {
  projectId: string;
  sendId: string;
  templateId?: string | null;
  campaignId?: string | null;
  from: string;
  fromName?: string | null;
  replyTo?: string | null;
  marketing: boolean;
  /** Bulk mail (campaigns, MARKETING workflow steps): the bulk queue, the audience check at the claim. */
  bulk?: boolean;
  /** Opens and clicks tracked (when the project tracks). */
  tracked?: boolean;
  /** The send's own tracking choice (emails.track_opens / track_clicks; a switch left out: null). */
  track?: { opens?: boolean; clicks?: boolean };
  /** The send's own reply tracking (emails.track_replies; left out: null, the project's default). */
  trackReplies?: boolean;
  hasAttachments?: boolean;
  /** Insert only while this workflow execution is active and the send has no email yet (a workflow step). */
  whileExecution?: string | null;
  /** Insert only if this contact exists by then and the address is not suppressed (a double opt-in confirmation: the contact the same batch created). */
  onlyIfContact?: string | null;
  /** The topic the mail is aimed at (emails.topic_id, migration 0037). */
  topicId?: string | null;
  now: Date;
}

/** One email: its contact by id, or by the lower-case address `contactEmail`, or none. */
export interface QueuedRow {
  id: string;
  to: string;
  toName?: string | null;
  contactId?: string | null;
  contactEmail?: string | null;
  subject: string;
  html: string;
  messageId: string;
}

/**
 * The QUEUED emails as INSERT statements for the caller's batch, one JSON
 * parameter each, chunked by size; a row whose JSON alone is over the chunk
 * size (an HTML body near the limit, which escaping can double) goes alone,
 * its HTML bound as a parameter of its own. A campaign's second email to one
 * contact is skipped (unique campaign+contact). Each statement returns the
 * ids it inserted.
 */
export function insertQueued(d1: D1Database, head: QueuedHead, rows: readonly QueuedRow[]): D1PreparedStatement[] {
  const now = head.now.getTime();
  const bind = (json: string, html: string | null) =>
    d1
      .prepare(INSERT_QUEUED_SQL)
      .bind(
        head.projectId,
        head.sendId,
        head.templateId ?? null,
        head.campaignId ?? null,
        head.from,
        head.fromName ?? null,
        head.replyTo ?? null,
        head.marketing ? 1 : 0,
        head.bulk ? 1 : 0,
        head.tracked === false ? 0 : 1,
        head.hasAttachments ? 1 : 0,
        now,
        json,
        html,
        head.whileExecution ?? null,
        head.onlyIfContact ?? null,
        head.track?.opens === undefined ? null : head.track.opens ? 1 : 0,
        head.track?.clicks === undefined ? null : head.track.clicks ? 1 : 0,
        head.topicId ?? null,
        head.trackReplies === undefined ? null : head.trackReplies ? 1 : 0,
      );
  const statements: D1PreparedStatement[] = [];
  // Each insert is followed by the day's email count and the stored bytes of what it inserted, once per
  // statement rather than once per row (migration 0033 dropped the per-row triggers): D1 bills each row written.
  const insert = (json: string, html: string | null, ids: string[]) => {
    statements.push(bind(json, html), ...countInserted(d1, head.projectId, ids, head.now));
  };
  let parts: string[] = [];
  let ids: string[] = [];
  let chars = 0;
  const flush = () => {
    if (parts.length > 0) insert(`[${parts.join(",")}]`, null, ids);
    parts = [];
    ids = [];
    chars = 0;
  };
  for (const row of rows) {
    // One-letter keys keep the parameter small; they never leave this module.
    const r = {
      id: row.id,
      to: row.to,
      n: row.toName ?? null,
      ci: row.contactId ?? null,
      c: row.contactEmail ?? null,
      s: row.subject,
      h: row.html,
      m: row.messageId,
    };
    const json = JSON.stringify(r);
    if (json.length > MAX_JSON_PARAM_CHARS) {
      insert(JSON.stringify([{ ...r, h: null }]), row.html, [row.id]);
      continue;
    }
    if (chars + json.length > MAX_JSON_PARAM_CHARS) flush();
    parts.push(json);
    ids.push(row.id);
    chars += json.length + 1;
  }
  flush();
  return statements;
}

/**
 * The day's email count and the stored bytes of these just-inserted emails (of the project, by id), as
 * statements to follow their insert in its batch: what the per-row triggers did before migration 0033.
 */
export function countInserted(d1: D1Database, projectId: string, ids: readonly string[], now: Date): D1PreparedStatement[] {
  const idList = JSON.stringify(ids);
  return [d1.prepare(COUNT_QUEUED_SQL).bind(projectId, idList, now.getTime()), d1.prepare(QUEUED_BYTES_SQL).bind(projectId, idList)];
}

// The emails of ?2 (the ids the insert before it was given) that exist now: the ones it inserted.
const COUNT_QUEUED_SQL = `INSERT INTO project_daily_usage (project_id, day, emails)
  SELECT ?1, CAST(?3 / 86400000 AS INTEGER), n FROM (SELECT count(*) AS n FROM emails WHERE id IN (SELECT value FROM json_each(?2)) AND project_id = ?1) WHERE n > 0
  ON CONFLICT (project_id, day) DO UPDATE SET emails = emails + excluded.emails`;
const QUEUED_BYTES_SQL = `UPDATE projects SET stored_bytes = stored_bytes + x.bytes
  FROM (SELECT total(length(CAST(html AS BLOB)) + CASE headers WHEN '{}' THEN 0 ELSE length(CAST(headers AS BLOB)) END) AS bytes
        FROM emails WHERE id IN (SELECT value FROM json_each(?2)) AND project_id = ?1) AS x
  WHERE projects.id = ?1 AND x.bytes > 0`;

const INSERT_QUEUED_SQL = `INSERT INTO emails (id, project_id, send_id, template_id, campaign_id, contact_id, from_address, from_name, to_address, to_name,
    reply_to, subject, html, marketing, bulk, tracked, has_attachments, status, message_id, queued_at, created_at, updated_at, track_opens, track_clicks, topic_id, track_replies)
  SELECT json_extract(value, '$.id'), ?1, ?2, ?3, ?4,
    coalesce(json_extract(value, '$.ci'), (SELECT id FROM contacts WHERE project_id = ?1 AND email = json_extract(value, '$.c'))),
    ?5, ?6, json_extract(value, '$.to'), json_extract(value, '$.n'), ?7, json_extract(value, '$.s'), coalesce(?14, json_extract(value, '$.h')),
    ?8, ?9, ?10, ?11, 'QUEUED', json_extract(value, '$.m'), ?12, ?12, ?12, ?17, ?18, ?19, ?20
  FROM json_each(?13)
  WHERE (?15 IS NULL OR (EXISTS (SELECT 1 FROM workflow_executions WHERE id = ?15 AND status IN ('RUNNING', 'WAITING'))
    AND NOT EXISTS (SELECT 1 FROM emails WHERE send_id = ?2 AND project_id = ?1)))
    AND (?16 IS NULL OR (EXISTS (SELECT 1 FROM contacts WHERE id = ?16 AND project_id = ?1)
      AND NOT EXISTS (SELECT 1 FROM suppressions WHERE project_id = ?1 AND email = json_extract(value, '$.to'))))
  ON CONFLICT (campaign_id, contact_id) WHERE campaign_id IS NOT NULL DO NOTHING
  RETURNING id`;

/**
 * The send's custom headers, once for all its recipients, for the batch that
 * inserts its emails (after them: written only if the send has an email, so no
 * row is left without one; the emails_send_headers_delete trigger removes it
 * with the last). The send_headers_bytes_insert trigger counts its bytes.
 */
export function insertSendHeaders(d1: D1Database, projectId: string, sendId: string, headers: Record<string, string>, now: Date): D1PreparedStatement {
  return d1.prepare(INSERT_SEND_HEADERS_SQL).bind(sendId, projectId, JSON.stringify(headers), now.getTime());
}
const INSERT_SEND_HEADERS_SQL = `INSERT INTO send_headers (send_id, project_id, headers, created_at)
  SELECT ?1, ?2, ?3, ?4 WHERE EXISTS (SELECT 1 FROM emails WHERE send_id = ?1 AND project_id = ?2)
  ON CONFLICT (send_id) DO NOTHING`;

// ---- the send consumer: claim, outcomes, deferral ------------------------------

/**
 * One claim column for an email's tracking (ClaimRow trackingEnabled): bit 0, its project tracks it
 * (tracking_mode ENABLED, or MARKETING_ONLY and marketing mail; tracking_enabled = 0 is DISABLED);
 * bits 1-2 and 3-4, the send's track_opens and track_clicks (0 off, 1 on, 2 not given); bits 5-6 the
 * send's track_replies (the same), bit 7 its project's track_replies (migration 0040).
 */
const TRACKING_SLOT = `((SELECT (CASE WHEN p.tracking_enabled = 0 OR p.tracking_mode = 'DISABLED' THEN 0
      WHEN p.tracking_mode = 'MARKETING_ONLY' THEN emails.marketing ELSE 1 END) | (p.track_replies << 7) FROM projects AS p WHERE p.id = emails.project_id)
    | (coalesce(emails.track_opens, 2) << 1) | (coalesce(emails.track_clicks, 2) << 3) | (coalesce(emails.track_replies, 2) << 5))`;

const overrideOf = (bits: number): boolean | null => (bits === 2 ? null : bits === 1);
const trackingOf = (slot: number) => ({
  trackingEnabled: (slot & 1) === 1,
  trackOpens: overrideOf((slot >> 1) & 3),
  trackClicks: overrideOf((slot >> 3) & 3),
  trackReplies: overrideOf((slot >> 5) & 3),
  projectTracksReplies: ((slot >> 7) & 1) === 1,
});

/** What the consumer needs of a claimed email (the claim returns only these columns). */
export type ClaimedEmail = Pick<
  Email,
  | "id"
  | "projectId"
  | "sendId"
  | "fromAddress"
  | "fromName"
  | "toAddress"
  | "toName"
  | "replyTo"
  | "subject"
  | "messageId"
  | "marketing"
  | "hasAttachments"
  | "tracked"
> & {
  /** Its project tracks this email (trackingMode ENABLED, or MARKETING_ONLY and marketing mail). */
  trackingEnabled: boolean;
  /** The send's own choice (/v1/send track), null: as the project and the sending domain say. */
  trackOpens: boolean | null;
  trackClicks: boolean | null;
  /** The send's own reply tracking (/v1/send trackReplies), null: the project's default (projectTracksReplies). */
  trackReplies: boolean | null;
  projectTracksReplies: boolean;
  /** Characters of its HTML and headers JSON, its send's included (length(), computed by the claim, which rewrites the row anyway). */
  bodyChars: number;
  /** Its project had an enabled webhook endpoint when it was claimed: only then are its outcome's events looked for. */
  webhooks: boolean;
  /** Its HTML and headers, when the claim returned them (bodies of at most INLINE_BODY_CHARS); else read later. */
  body?: EmailBody;
  /** The key of the topic the mail is aimed at (List-Id; its unsubscribe opts out of that topic only), null for none. */
  topicKey: string | null;
};

/**
 * Bodies (HTML and headers, characters) the claim returns with the email
 * itself: a batch of 100 holds at most 1 MiB of them, and most mail needs no
 * read of its body after the claim. Larger bodies are read later, a group at a time.
 */
export const INLINE_BODY_CHARS = 10_000;

/**
 * The claim: `m` decides once per email whether it is settled instead of sent
 * (?3 / ?6 the reasons; ?5 turns the audience check on for bulk mail: the consent gates,
 * src/services/consent/gates.ts, each refusal with its gate's reason; ?4 unused), the
 * UPDATE applies it only to emails still QUEUED and not of a paused campaign (left QUEUED: the
 * resume queues them again, services/campaigns/pause.ts), and RETURNING hands back the
 * small columns composing needs (in ClaimRow order) and, for a body of at most ?7
 * characters, the HTML and headers (the send's, in send_headers); larger ones are read later,
 * a few emails at a time (readEmailBodies). `+status`: the
 * emails are found by id from the JSON rows, not by walking the status index.
 */
const CLAIM_SQL = `UPDATE emails SET
    status = CASE WHEN m.settle IS NULL THEN 'SENDING' ELSE 'FAILED' END,
    error = COALESCE(m.settle, emails.error),
    failed_at = CASE WHEN m.settle IS NULL THEN emails.failed_at ELSE ?1 END,
    sending_at = NULL,
    attempts = emails.attempts + (m.settle IS NULL),
    updated_at = ?1
  FROM (SELECT e.id AS id,
          CASE
            WHEN NOT EXISTS (SELECT 1 FROM projects AS p WHERE p.id = e.project_id AND p.disabled = 0) THEN ?3
            WHEN EXISTS (SELECT 1 FROM projects AS p WHERE p.id = e.project_id AND p.sending_paused_at IS NOT NULL) THEN ?6
            WHEN ?5 = 1 AND e.bulk = 1 THEN ${CLAIM_GATES_SQL}
          END AS settle
        FROM json_each(?2) AS j
        JOIN emails AS e ON e.id = json_extract(j.value, '$[0]') AND e.project_id = json_extract(j.value, '$[1]')
        WHERE +e.status = 'QUEUED'
          AND NOT EXISTS (SELECT 1 FROM campaigns AS cp WHERE cp.id = e.campaign_id AND cp.paused = 1)) AS m
  WHERE emails.id = m.id AND +emails.status = 'QUEUED'
  RETURNING emails.status, emails.id, emails.project_id, emails.send_id, emails.from_address, emails.from_name, emails.to_address,
    emails.to_name, emails.reply_to, emails.subject, emails.message_id, emails.marketing,
    emails.has_attachments, emails.tracked, ${TRACKING_SLOT},
    length(emails.html) + length(emails.headers) + coalesce((SELECT length(h.headers) FROM send_headers AS h WHERE h.send_id = emails.send_id), 0),
    EXISTS (SELECT 1 FROM webhook_endpoints AS w WHERE w.project_id = emails.project_id AND w.enabled = 1),
    CASE WHEN length(emails.html) <= ?7 THEN emails.html END AS inline_html,
    CASE WHEN length(emails.html) <= ?7 THEN coalesce((SELECT h.headers FROM send_headers AS h WHERE h.send_id = emails.send_id), emails.headers) END AS inline_headers,
    (SELECT t.key FROM topics AS t WHERE t.id = emails.topic_id) AS topic_key`;

type ClaimRow = [
  status: string,
  id: string,
  projectId: string,
  sendId: string,
  fromAddress: string,
  fromName: string | null,
  toAddress: string,
  toName: string | null,
  replyTo: string | null,
  subject: string,
  messageId: string,
  marketing: number,
  hasAttachments: number,
  tracked: number,
  trackingEnabled: number | null,
  bodyChars: number,
  webhooks: number,
  inlineHtml: string | null,
  inlineHeaders: string | null,
  topicKey: string | null,
];

const claimedEmailOf = (row: ClaimRow): ClaimedEmail => ({
  id: row[1],
  projectId: row[2],
  sendId: row[3],
  fromAddress: row[4],
  fromName: row[5],
  toAddress: row[6],
  toName: row[7],
  replyTo: row[8],
  subject: row[9],
  messageId: row[10],
  marketing: row[11] === 1,
  hasAttachments: row[12] === 1,
  tracked: row[13] === 1,
  ...trackingOf(row[14] ?? 0),
  bodyChars: row[15],
  webhooks: row[16] === 1,
  // The claim returns HTML of at most INLINE_BODY_CHARS; it is kept only when the whole body (the send's headers
  // included) fits too, else read later with the larger ones.
  body:
    row[17] !== null && row[18] !== null && row[15] <= INLINE_BODY_CHARS
      ? { html: row[17], headers: JSON.parse(row[18]) as Record<string, string> }
      : undefined,
  topicKey: row[19] ?? null,
});

/** A claimed email's HTML and custom headers (the claim returns neither). */
export interface EmailBody {
  html: string;
  headers: Record<string, string>;
}

/**
 * The bodies of a few claimed emails, read in one statement just before they
 * are composed, so a batch holds only the bodies its send lanes are about to
 * use. An email whose row is gone is missing from the map.
 */
export async function readEmailBodies(d1: D1Database, emailIds: readonly string[]): Promise<Map<string, EmailBody>> {
  const { results } = await d1.prepare(EMAIL_BODIES_SQL).bind(JSON.stringify(emailIds)).all<{ id: string; html: string; headers: string }>();
  return new Map(results.map((row) => [row.id, { html: row.html, headers: JSON.parse(row.headers) as Record<string, string> }]));
}
// The send's headers (send_headers), or an email's own from before migration 0022.
const EMAIL_BODIES_SQL = `SELECT e.id AS id, e.html AS html, coalesce(h.headers, e.headers) AS headers
  FROM emails AS e LEFT JOIN send_headers AS h ON h.send_id = e.send_id
  WHERE e.id IN (SELECT value FROM json_each(?1))`;

/**
 * Claims these emails (each with its project) in one statement per chunk:
 * only one invocation moves an email from QUEUED to SENDING. Mail that must
 * not go out is settled as FAILED with `reasons.disabled` (its project is
 * disabled or gone), `reasons.paused` (the reputation breaker paused its
 * project's sending) or, with `checkAudience`, the reason of the consent gate that
 * refuses it now (bulk mail whose contact unsubscribed, was deleted or got suppressed
 * after it was written: CLAIM_GATES_SQL, src/services/consent/gates.ts). `alongside` runs after
 * the claim in the same batch (one transaction, e.g. the webhook events of the
 * mail it settles, which leave through `afterCommit`); returns what was claimed.
 */
export async function claimEmails(
  d1: D1Database,
  refs: readonly { emailId: string; projectId: string }[],
  options: {
    checkAudience: boolean;
    reasons: { disabled: string; paused: string };
    now?: number;
    alongside?: D1PreparedStatement[];
    afterCommit?: AfterCommit;
  },
): Promise<ClaimedEmail[]> {
  const now = options.now ?? Date.now();
  const batch = new WriteBatch(d1);
  const claims = batch.add(
    ...chunks(refs, IDS_PER_JSON_STATEMENT).map((chunk) =>
      d1
        .prepare(CLAIM_SQL)
        .bind(
          now,
          JSON.stringify(chunk.map((r) => [r.emailId, r.projectId])),
          options.reasons.disabled,
          null,
          options.checkAudience ? 1 : 0,
          options.reasons.paused,
          INLINE_BODY_CHARS,
        ),
    ),
  );
  batch.add(...(options.alongside ?? []));
  const result = await batch.run({ afterCommit: options.afterCommit });
  // A batch answers with objects; their values are in the RETURNING order (ClaimRow).
  return result
    .rows(claims)
    .map((row) => Object.values(row) as ClaimRow)
    .filter((row) => row[0] === "SENDING")
    .map(claimedEmailOf);
}

/**
 * Marks claimed emails' provider calls as started (sending_at), just before they are made, in one
 * statement: only emails still SENDING; returns their ids (only those may be called). A claim without it
 * had no call, so the sweep may give it back to QUEUED; one with it has an unknown outcome if its
 * invocation died.
 */
export async function markCallsStarted(d1: D1Database, emailIds: readonly string[], now: number): Promise<Set<string>> {
  const { results } = await d1.prepare(MARK_CALLS_STARTED_SQL).bind(now, JSON.stringify(emailIds)).all<{ id: string }>();
  return new Set(results.map((r) => r.id));
}
const MARK_CALLS_STARTED_SQL = `UPDATE emails SET sending_at = ?1 WHERE id IN (SELECT value FROM json_each(?2)) AND +status = 'SENDING' RETURNING id`;

/**
 * The dead-letter queue's settle of claims whose messages gave up: a claim whose call never started is
 * FAILED "Gave up after N attempts: <last error>"; one whose call started (sending_at) is an unknown outcome
 * (`unknownReason`), as the sweep would settle it, so the provider's events can still reconcile it.
 */
export function settleDeadClaims(d1: D1Database, emailIds: readonly string[], now: number, unknownReason: string): D1PreparedStatement[] {
  return chunks(emailIds, IDS_PER_JSON_STATEMENT).map((chunk) => d1.prepare(SETTLE_DEAD_CLAIMS_SQL).bind(now, JSON.stringify(chunk), unknownReason));
}
const SETTLE_DEAD_CLAIMS_SQL = `UPDATE emails SET status = 'FAILED', failed_at = ?1, updated_at = ?1,
    error = CASE WHEN sending_at IS NULL THEN 'Gave up after ' || attempts || ' attempts' || COALESCE(': ' || error, '') ELSE ?3 END
  WHERE id IN (SELECT value FROM json_each(?2)) AND +status = 'SENDING'`;

/** What happened to one claimed email. */
export type Outcome =
  | {
      emailId: string;
      status: "SENT";
      providerMessageId: string | null;
      /** Where its sent HTML went in R2 (store/objects/bodies.ts): the write empties html. */
      bodyRef?: string;
    }
  | { emailId: string; status: "FAILED"; error: string }
  | { emailId: string; status: "QUEUED"; error: string; retryAt?: number };

// `+status`: emails are looked up by id (the JSON rows), not through the status index. A SENT outcome also
// applies to an email the sweep settled meanwhile as an unknown outcome (error ?3...): the provider's answer came after all.
const RECORD_OUTCOMES_SQL = `UPDATE emails SET
    status = o.status,
    sent_at = CASE WHEN o.status = 'SENT' THEN ?1 ELSE emails.sent_at END,
    failed_at = CASE WHEN o.status = 'FAILED' THEN ?1 WHEN o.status = 'SENT' THEN NULL ELSE emails.failed_at END,
    provider_message_id = COALESCE(o.provider_message_id, emails.provider_message_id),
    error = o.error,
    retry_at = o.retry_at,
    html = CASE WHEN o.body_ref IS NULL THEN emails.html ELSE '' END,
    body_ref = COALESCE(o.body_ref, emails.body_ref),
    updated_at = ?1
  FROM (SELECT json_extract(value, '$[0]') AS id, json_extract(value, '$[1]') AS status,
          json_extract(value, '$[2]') AS provider_message_id, json_extract(value, '$[3]') AS error, json_extract(value, '$[4]') AS retry_at,
          json_extract(value, '$[5]') AS body_ref
        FROM json_each(?2)) AS o
  WHERE emails.id = o.id AND (+emails.status = 'SENDING'
    OR (o.status = 'SENT' AND +emails.status = 'FAILED' AND emails.provider_message_id IS NULL AND emails.error LIKE ?3))`;

/**
 * The outcomes as statements for one batch, applied only to emails still SENDING (and a SENT one also
 * to an email settled as an unknown outcome, whose error starts with `unknownPrefix`). A SENT one with
 * a `bodyRef` empties html in the same write (its body is in R2; SENT_BODIES_BYTES_SQL takes its bytes off first).
 */
export function recordOutcomes(d1: D1Database, outcomes: readonly Outcome[], unknownPrefix: string, now = Date.now()): D1PreparedStatement[] {
  const pattern = `${likeEscape(unknownPrefix)}%`;
  return chunks(outcomes, IDS_PER_JSON_STATEMENT).flatMap((chunk) => {
    const json = JSON.stringify(
      chunk.map((o) => [
        o.emailId,
        o.status,
        o.status === "SENT" ? o.providerMessageId || null : null,
        o.status === "SENT" ? null : o.error,
        o.status === "QUEUED" ? (o.retryAt ?? null) : null,
        o.status === "SENT" ? (o.bodyRef ?? null) : null,
      ]),
    );
    // The HTML's bytes off before the update empties it, the sent count after it sets sent_at: once per project.
    return [
      d1.prepare(SENT_BODIES_BYTES_SQL).bind(json, pattern),
      d1.prepare(RECORD_OUTCOMES_SQL).bind(now, json, pattern),
      d1.prepare(COUNT_SENT_SQL).bind(now, json),
    ];
  });
}

// The emails RECORD_OUTCOMES_SQL will apply a SENT outcome with a body_ref to (the same terms), by project:
// their HTML leaves D1 (the emails_bytes_update trigger leaves this change to this statement, migration 0033).
const SENT_BODIES_BYTES_SQL = `UPDATE projects SET stored_bytes = max(0, stored_bytes - x.bytes)
  FROM (SELECT e.project_id AS project_id, total(length(CAST(e.html AS BLOB))) AS bytes
        FROM json_each(?1) AS j JOIN emails AS e ON e.id = json_extract(j.value, '$[0]')
        WHERE json_extract(j.value, '$[1]') = 'SENT' AND json_extract(j.value, '$[5]') IS NOT NULL AND e.body_ref IS NULL
          AND (+e.status = 'SENDING' OR (+e.status = 'FAILED' AND e.provider_message_id IS NULL AND e.error LIKE ?2))
        GROUP BY e.project_id) AS x
  WHERE projects.id = x.project_id AND x.bytes > 0`;
// The reputation's sent count of what RECORD_OUTCOMES_SQL just made SENT (sent_at is its time ?1), by project.
const COUNT_SENT_SQL = `INSERT INTO project_reputation (project_id, day, sent)
  SELECT e.project_id, CAST(?1 / 86400000 AS INTEGER), count(*)
  FROM json_each(?2) AS j JOIN emails AS e ON e.id = json_extract(j.value, '$[0]')
  WHERE json_extract(j.value, '$[1]') = 'SENT' AND +e.status = 'SENT' AND e.sent_at = ?1
  GROUP BY e.project_id
  ON CONFLICT (project_id, day) DO UPDATE SET sent = sent + excluded.sent`;

/** A LIKE pattern's literal text (no wildcards in it; the prefixes here have none, this keeps it so). */
const likeEscape = (text: string) => text.replace(/[%_]/g, "");

/**
 * Reconciliation: the provider's own event names this email (by its tags) and the message id it took it
 * under, while the email is still SENDING or was settled as an unknown outcome (FAILED, error starting with
 * `unknownPrefix`, no provider message id). It becomes SENT with that id, so the event can then apply to
 * it as to any sent email. Returns the id when it applied.
 */
export function reconcileUnknownOutcome(
  d1: D1Database,
  input: { emailId: string; projectId: string; providerMessageId: string; sentAt: number; now: number; unknownPrefix: string },
): D1PreparedStatement[] {
  return [
    d1.prepare(RECONCILE_SQL).bind(input.emailId, input.projectId, input.providerMessageId, input.sentAt, input.now, `${likeEscape(input.unknownPrefix)}%`),
    // Its sent count, when this statement's reconcile applied (the email carries its id and time now).
    d1.prepare(COUNT_RECONCILED_SQL).bind(input.emailId, input.projectId, input.providerMessageId, input.now),
  ];
}
const RECONCILE_SQL = `UPDATE emails SET status = 'SENT', provider_message_id = ?3, sent_at = COALESCE(sent_at, ?4), failed_at = NULL,
    error = NULL, updated_at = ?5
  WHERE id = ?1 AND project_id = ?2 AND provider_message_id IS NULL
    AND (status = 'SENDING' OR (status = 'FAILED' AND error LIKE ?6))
  RETURNING id`;
const COUNT_RECONCILED_SQL = `INSERT INTO project_reputation (project_id, day, sent)
  SELECT project_id, CAST(sent_at / 86400000 AS INTEGER), 1 FROM emails
  WHERE id = ?1 AND project_id = ?2 AND provider_message_id = ?3 AND updated_at = ?4 AND status = 'SENT'
  ON CONFLICT (project_id, day) DO UPDATE SET sent = sent + 1`;

/**
 * Gives claims back (SENDING -> QUEUED, the attempt not counted) with a fresh updatedAt and their message
 * due at `retryAt`, as statements for one batch.
 */
export function deferClaims(d1: D1Database, emailIds: readonly string[], now = Date.now(), retryAt = now): D1PreparedStatement[] {
  return chunks(emailIds, IDS_PER_JSON_STATEMENT).map((chunk) => d1.prepare(DEFER_CLAIMS_SQL).bind(now, JSON.stringify(chunk), retryAt));
}
const DEFER_CLAIMS_SQL = `UPDATE emails SET status = 'QUEUED', sending_at = NULL, updated_at = ?1, retry_at = ?3, attempts = MAX(0, attempts - 1)
  WHERE id IN (SELECT value FROM json_each(?2)) AND +status = 'SENDING'`;

/** Updates the emails with these ids (of `projectId`, when given) that are in one of `statuses`: statements under D1's parameter limit. */
export function updateEmailsById(
  d1: D1Database,
  ids: readonly string[],
  statuses: EmailStatus[],
  set: SQLiteUpdateSetSource<typeof emails>,
  projectId?: string,
) {
  const db = getDb(d1);
  const ofProject = projectId === undefined ? undefined : eq(emails.projectId, projectId);
  return chunks(ids, IN_LIST_IDS).map((chunk) =>
    db
      .update(emails)
      .set(set)
      .where(and(inArray(emails.id, chunk), inArray(emails.status, statuses), ofProject)),
  );
}

// ---- feedback, engagement, retention ---------------------------------------------

/** One email's change by id, under an optional extra condition; returns the id when it applied. */
export function updateEmail(d1: D1Database, emailId: string, set: SQLiteUpdateSetSource<typeof emails>, onlyIf?: SQL) {
  return getDb(d1)
    .update(emails)
    .set(set)
    .where(and(eq(emails.id, emailId), onlyIf))
    .returning({ id: emails.id });
}

/**
 * Empties the HTML of up to `limit` emails with ids below `cutoffId` (older
 * than the retention) that are final, oldest first; the records stay. The
 * emails_bytes_update trigger takes the bytes off the project's count.
 */
export function dropOldHtml(d1: D1Database, cutoffId: string, limit: number): D1PreparedStatement {
  return d1.prepare(DROP_OLD_HTML_SQL).bind(cutoffId, limit);
}
// `html != ''` exactly as the partial index emails_html_kept_idx is defined.
const DROP_OLD_HTML_SQL = `UPDATE emails SET html = '' WHERE id IN (
    SELECT id FROM emails WHERE html != '' AND id < ?1 AND status NOT IN ('QUEUED', 'SENDING') ORDER BY id LIMIT ?2) RETURNING id`;

/**
 * Deletes up to `limit` final emails with ids below `cutoffId`, oldest first,
 * whose send keeps no attachment (those go first, see retention); the
 * emails_bytes_delete trigger takes their bytes off.
 */
export function deleteOldEmails(d1: D1Database, cutoffId: string, limit: number): D1PreparedStatement {
  return d1.prepare(DELETE_OLD_EMAILS_SQL).bind(cutoffId, limit);
}
const DELETE_OLD_EMAILS_SQL = `DELETE FROM emails WHERE id IN (
    SELECT id FROM emails e WHERE id < ?1 AND status NOT IN ('QUEUED', 'SENDING')
      AND NOT EXISTS (SELECT 1 FROM email_attachments a WHERE a.send_id = e.send_id)
    ORDER BY id LIMIT ?2) RETURNING id`;

/** The module's fixed SQL, by name (test/store/statements.test.ts compiles each against the schema). */
export const FIXED_SQL = {
  INSERT_QUEUED_SQL,
  INSERT_SEND_HEADERS_SQL,
  DROP_OLD_HTML_SQL,
  DELETE_OLD_EMAILS_SQL,
  CLAIM_SQL,
  EMAIL_BODIES_SQL,
  RECORD_OUTCOMES_SQL,
  DEFER_CLAIMS_SQL,
  RECONCILE_SQL,
  COUNT_RECONCILED_SQL,
  COUNT_QUEUED_SQL,
  QUEUED_BYTES_SQL,
  SENT_BODIES_BYTES_SQL,
  COUNT_SENT_SQL,
  MARK_CALLS_STARTED_SQL,
  SETTLE_DEAD_CLAIMS_SQL,
};
