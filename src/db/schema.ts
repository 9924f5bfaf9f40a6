import { sql } from "drizzle-orm";
import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

// Timestamps are stored as integer milliseconds since the epoch and exposed as Date.
const timestamp = (name: string) => integer(name, { mode: "timestamp_ms" });
const createdAt = () => timestamp("created_at").notNull().default(sql`(unixepoch('subsec') * 1000)`);
const updatedAt = () => timestamp("updated_at").notNull().default(sql`(unixepoch('subsec') * 1000)`);
const json = <T>(name: string) => text(name, { mode: "json" }).$type<T>();

export type JsonObject = Record<string, unknown>;

/** How an import reads a column (services/contact-imports/columns.ts). */
export type ImportColumnRole = "email" | "subscribed" | "data" | "ignore" | "key";
export type ImportColumnType = "text" | "number" | "boolean" | "date";
/** An import's column plan: the email column, and per header column its role, data key ("" unless a key) and type. */
export interface StoredColumnPlan {
  email: number;
  roles: ImportColumnRole[];
  keys: string[];
  types: ImportColumnType[];
}

export const TRACKING_MODES = ["ENABLED", "DISABLED", "MARKETING_ONLY"] as const;
export type TrackingMode = (typeof TRACKING_MODES)[number];

export const projects = sqliteTable("projects", {
  id: text("id").primaryKey(),
  name: text("name").notNull(),
  disabled: integer("disabled", { mode: "boolean" }).notNull().default(false),
  trackingEnabled: integer("tracking_enabled", { mode: "boolean" }).notNull().default(true),
  /** Open and click tracking (migration 0038): ENABLED, DISABLED, or MARKETING_ONLY; tracking_enabled = 0 also means DISABLED. */
  trackingMode: text("tracking_mode", { enum: TRACKING_MODES }).notNull().default("ENABLED"),
  /** Double opt-in: a contact a public key (pk_) creates starts unsubscribed and gets a confirmation email. */
  doubleOptIn: integer("double_opt_in", { mode: "boolean" }).notNull().default(false),
  /** The confirmation email's template (its `{{confirmUrl}}` is the signed confirm link). */
  doubleOptInTemplateId: text("double_opt_in_template_id"),
  /** The default sender (PATCH /project defaultFrom), for mail whose request and template give no from (migration 0034). */
  defaultFromEmail: text("default_from_email"),
  defaultFromName: text("default_from_name"),
  /** Reply tracking by default (PATCH /project inbound.trackReplies, migration 0040): Reply-To is the email's signed reply address, unless the mail has its own. */
  trackReplies: integer("track_replies", { mode: "boolean" }).notNull().default(false),
  /** The footer of marketing mail without {{unsubscribeUrl}} (PATCH /project unsubscribeFooter, migration 0041); null: the built-in one. */
  unsubscribeFooter: text("unsubscribe_footer"),
  /**
   * Bytes the project stores, for the QUOTA_STORED_BYTES quota: kept by D1
   * triggers (migration 0019) on email html and headers, attachments, event and
   * contact data, templates, campaigns and workflow versions.
   */
  storedBytes: integer("stored_bytes").notNull().default(0),
  /** Bytes the project keeps in R2 (QUOTA_R2_STORED_BYTES), kept by triggers on r2_usage (migration 0027). */
  r2StoredBytes: integer("r2_stored_bytes").notNull().default(0),
  /**
   * Set by the reputation breaker (src/services/reputation.ts) when the
   * project's bounce or complaint rate passed its threshold: the project sends
   * nothing (403 SENDING_PAUSED, queued mail FAILED) until it is resumed.
   */
  sendingPausedAt: timestamp("sending_paused_at"),
  sendingPausedReason: text("sending_paused_reason"),
  /** The owner's last resume through the API (once per reputation window; the operator's CLI resume is not limited). */
  sendingResumedAt: timestamp("sending_resumed_at"),
  createdAt: createdAt(),
  updatedAt: updatedAt(),
});

export const apiKeys = sqliteTable(
  "api_keys",
  {
    id: text("id").primaryKey(),
    projectId: text("project_id")
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    kind: text("kind", { enum: ["secret", "public"] }).notNull(),
    // SHA-256 of the full key, hex. The key itself is never stored.
    keyHash: text("key_hash").notNull(),
    // First characters of the key (e.g. "sk_3f9a"), to tell keys apart in listings.
    keyPrefix: text("key_prefix").notNull(),
    createdAt: createdAt(),
    revokedAt: timestamp("revoked_at"),
  },
  (t) => [uniqueIndex("api_keys_hash_uq").on(t.keyHash), index("api_keys_project_idx").on(t.projectId)],
);

/**
 * Control database only (migration 0032): the data shard of each project placed off shard 0
 * (src/db/shards.ts). No row: shard 0. `movingTo` while a move copies the project.
 */
export const projectShards = sqliteTable(
  "project_shards",
  {
    projectId: text("project_id")
      .primaryKey()
      .references(() => projects.id, { onDelete: "cascade" }),
    shard: integer("shard").notNull().default(0),
    movingTo: integer("moving_to"),
    movedAt: timestamp("moved_at"),
    createdAt: createdAt(),
  },
  (t) => [index("project_shards_shard").on(t.shard)],
);

export const contacts = sqliteTable(
  "contacts",
  {
    id: text("id").primaryKey(),
    projectId: text("project_id")
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    email: text("email").notNull(),
    subscribed: integer("subscribed", { mode: "boolean" }).notNull().default(true),
    data: json<JsonObject>("data").notNull().default({}),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    uniqueIndex("contacts_project_email_uq").on(t.projectId, t.email),
    // Keyset pagination: ids are UUIDv7 (time ordered), lists walk (project_id, id).
    index("contacts_project_id_idx").on(t.projectId, t.id),
    index("contacts_project_subscribed_id_idx").on(t.projectId, t.subscribed, t.id),
  ],
);

/** Who recorded an event (events.source). */
export const EVENT_SOURCES = ["secret", "public", "system"] as const;
export type EventSource = (typeof EVENT_SOURCES)[number];

export const events = sqliteTable(
  "events",
  {
    id: text("id").primaryKey(),
    projectId: text("project_id")
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    contactId: text("contact_id").references(() => contacts.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    data: json<JsonObject>("data").notNull().default({}),
    emailId: text("email_id"),
    /** Who recorded it: a secret key, a public key (pk_, anyone with the web page), or the service itself (sends, unsubscribes). */
    source: text("source", { enum: EVENT_SOURCES }).notNull().default("system"),
    createdAt: createdAt(),
  },
  (t) => [
    index("events_project_id_idx").on(t.projectId, t.id),
    index("events_project_name_id_idx").on(t.projectId, t.name, t.id),
    // Condition filters on event.<name>: EXISTS / max(created_at) per contact and name; also every other
    // lookup by contact (its events list sorts by id; migration 0028 dropped (contact_id, id)).
    index("events_contact_name_created_idx").on(t.contactId, t.name, t.createdAt),
  ],
);

export const templates = sqliteTable(
  "templates",
  {
    id: text("id").primaryKey(),
    projectId: text("project_id")
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    subject: text("subject").notNull(),
    body: text("body").notNull(),
    type: text("type", { enum: ["TRANSACTIONAL", "MARKETING"] }).notNull(),
    from: text("from_address"),
    fromName: text("from_name"),
    replyTo: text("reply_to"),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [index("templates_project_id_idx").on(t.projectId, t.id)],
);

/** Status of a sending domain and of each of its DNS records. */
export const DOMAIN_STATUSES = ["PENDING", "VERIFIED", "FAILED"] as const;
export type DnsRecordStatus = (typeof DOMAIN_STATUSES)[number];
export interface DomainDnsRecord {
  purpose: "DKIM" | "SPF" | "RETURN_PATH_MX" | "RETURN_PATH_SPF" | "DMARC";
  type: "TXT" | "MX" | "CNAME";
  name: string;
  value: string;
  priority?: number;
  required: boolean;
  status: DnsRecordStatus;
  /** Human-readable outcome of the last check (what was found, or why it does not match). */
  detail?: string;
  /** ISO time since which a once-verified record has been missing (JSON only, no column). */
  failingSince?: string;
}

export const domains = sqliteTable(
  "domains",
  {
    id: text("id").primaryKey(),
    projectId: text("project_id")
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    // Normalised (lower-case, punycode) domain name; one domain belongs to one project.
    name: text("name").notNull(),
    status: text("status", { enum: DOMAIN_STATUSES }).notNull().default("PENDING"),
    dkimSelector: text("dkim_selector").notNull(),
    dkimPublicKey: text("dkim_public_key").notNull(),
    // AES-GCM encrypted PKCS#8 private key (base64 "iv.ciphertext"), key from the DKIM_ENCRYPTION_KEY secret.
    dkimPrivateKeyEncrypted: text("dkim_private_key_encrypted").notNull(),
    records: json<DomainDnsRecord[]>("records").notNull().default([]),
    checkAttempts: integer("check_attempts").notNull().default(0),
    lastCheckedAt: timestamp("last_checked_at"),
    nextCheckAt: timestamp("next_check_at"),
    verifiedAt: timestamp("verified_at"),
    /** Tracking of this domain's mail (migration 0038): the pixel, and links through the click redirect. */
    openTracking: integer("open_tracking", { mode: "boolean" }).notNull().default(true),
    clickTracking: integer("click_tracking", { mode: "boolean" }).notNull().default(true),
    /** A custom tracking hostname (a CNAME to the service's host), used in links and the pixel once VERIFIED. */
    trackingHostname: text("tracking_hostname"),
    trackingStatus: text("tracking_status", { enum: DOMAIN_STATUSES }),
    trackingCheckedAt: timestamp("tracking_checked_at"),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    uniqueIndex("domains_name_uq").on(t.name),
    uniqueIndex("domains_tracking_hostname_uq").on(t.trackingHostname),
    index("domains_project_id_idx").on(t.projectId, t.id),
    index("domains_status_next_check_idx").on(t.status, t.nextCheckAt),
  ],
);

/**
 * Names a project held without ever verifying them and gave up (deleted, or
 * released by the cron): for DOMAIN_RECLAIM_COOLDOWN_MS after `releasedAt`
 * that project's unverified hold of the name counts from `claimedAt` (its
 * first claim), so nobody holds a name they cannot prove, back to back.
 */
export const domainReleases = sqliteTable(
  "domain_releases",
  {
    name: text("name").notNull(),
    projectId: text("project_id")
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    claimedAt: timestamp("claimed_at").notNull(),
    releasedAt: timestamp("released_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.name, t.projectId] }), index("domain_releases_released_idx").on(t.releasedAt)],
);

export type Project = typeof projects.$inferSelect;
export type Contact = typeof contacts.$inferSelect;
export type Event = typeof events.$inferSelect;
export type Template = typeof templates.$inferSelect;
export type Domain = typeof domains.$inferSelect;

export const EMAIL_STATUSES = ["QUEUED", "SENDING", "SENT", "DELIVERED", "OPENED", "CLICKED", "BOUNCED", "COMPLAINED", "FAILED"] as const;
export type EmailStatus = (typeof EMAIL_STATUSES)[number];

/** One row per recipient per send: the rendered message and everything that happened to it. */
export const emails = sqliteTable(
  "emails",
  {
    id: text("id").primaryKey(),
    projectId: text("project_id")
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    contactId: text("contact_id").references(() => contacts.id, { onDelete: "set null" }),
    /** Groups the recipients of one /v1/send request (attachments and idempotency hang off it). */
    sendId: text("send_id").notNull(),
    templateId: text("template_id"),
    campaignId: text("campaign_id"),
    fromAddress: text("from_address").notNull(),
    fromName: text("from_name"),
    toAddress: text("to_address").notNull(),
    toName: text("to_name"),
    replyTo: text("reply_to"),
    subject: text("subject").notNull(),
    /** The HTML until it is sent (then '' and the body is in R2, see bodyRef); the retention purge empties a failed email's. */
    html: text("html").notNull(),
    /** Where the sent HTML is in R2: "<key>#<offset>,<length>" (src/store/objects/bodies.ts; migration 0029); null while html holds it. */
    bodyRef: text("body_ref"),
    /**
     * Legacy: custom headers used to be copied here for every recipient; since
     * migration 0022 they are stored once per send in send_headers and this is `{}`.
     */
    headers: json<Record<string, string>>("headers").notNull().default({}),
    /** Marketing mail gets List-Unsubscribe headers and is only sent to subscribed contacts. */
    marketing: integer("marketing", { mode: "boolean" }).notNull().default(false),
    hasAttachments: integer("has_attachments", { mode: "boolean" }).notNull().default(false),
    /** Open and click tracking for this email (off for campaign test sends); the project's switch still applies. */
    tracked: integer("tracked", { mode: "boolean" }).notNull().default(true),
    /** Bulk mail (campaigns, MARKETING workflow steps) travels on the bulk queue and yields the sending rate to transactional mail. */
    bulk: integer("bulk", { mode: "boolean" }).notNull().default(false),
    status: text("status", { enum: EMAIL_STATUSES }).notNull().default("QUEUED"),
    error: text("error"),
    /** Message-ID header value (without angle brackets), on the sender's domain. */
    messageId: text("message_id").notNull(),
    providerMessageId: text("provider_message_id"),
    attempts: integer("attempts").notNull().default(0),
    opens: integer("opens").notNull().default(0),
    clicks: integer("clicks").notNull().default(0),
    queuedAt: timestamp("queued_at"),
    /** When its provider call started (set just before the call; NULL while claimed without one): the sweep tells a dead claim's two cases apart by it. */
    sendingAt: timestamp("sending_at"),
    sentAt: timestamp("sent_at"),
    deliveredAt: timestamp("delivered_at"),
    openedAt: timestamp("opened_at"),
    clickedAt: timestamp("clicked_at"),
    /** Last counted open / click: repeats within ENGAGEMENT_DEDUP_WINDOW_MS of it are not counted again. */
    lastOpenedAt: timestamp("last_opened_at"),
    lastClickedAt: timestamp("last_clicked_at"),
    bouncedAt: timestamp("bounced_at"),
    complainedAt: timestamp("complained_at"),
    failedAt: timestamp("failed_at"),
    /** QUEUED after a definite "not now" from the provider: when its retry is due (the sweep leaves it alone until then). */
    retryAt: timestamp("retry_at"),
    /** The send's own tracking choice (/v1/send track, migration 0038); null follows the project and domain. */
    trackOpens: integer("track_opens", { mode: "boolean" }),
    trackClicks: integer("track_clicks", { mode: "boolean" }),
    /** The send's own reply tracking (/v1/send trackReplies, migration 0040); null follows the project. */
    trackReplies: integer("track_replies", { mode: "boolean" }),
    /** The topic this mail is aimed at (migration 0037): List-Id, and its unsubscribe opts out of this topic only. */
    topicId: text("topic_id"),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    index("emails_project_id_idx").on(t.projectId, t.id),
    // A status filter on final statuses; QUEUED and SENDING are found through emails_pending_idx (migration 0033).
    index("emails_project_status_id_idx").on(t.projectId, t.status, t.id).where(sql`status NOT IN ('QUEUED', 'SENDING')`),
    index("emails_contact_id_idx").on(t.contactId, t.id),
    index("emails_send_idx").on(t.sendId),
    // Partial indexes (WHERE ... IS NOT NULL) leave out the rows they can never
    // find: no provider id before the email is sent, no campaign on transactional
    // mail. Fewer b-trees to keep per insert and per status change on the hot path;
    // a lookup by `column = ?` implies IS NOT NULL, so SQLite still uses them.
    index("emails_provider_message_idx").on(t.providerMessageId).where(sql`provider_message_id IS NOT NULL`),
    // The stuck-mail sweep looks for QUEUED/SENDING rows by age; only those are indexed, so later status
    // changes write no entry here (its queries say `status IN ('QUEUED', 'SENDING')`; migration 0028).
    index("emails_pending_idx").on(t.status, t.updatedAt).where(sql`status IN ('QUEUED', 'SENDING')`),
    // One email per campaign and contact: a redelivered audience page inserts nothing twice.
    uniqueIndex("emails_campaign_contact_uq").on(t.campaignId, t.contactId).where(sql`campaign_id IS NOT NULL`),
    // Campaign completion: is any of its mail still QUEUED or SENDING (migration 0033).
    index("emails_campaign_pending_idx").on(t.campaignId, t.status).where(sql`campaign_id IS NOT NULL AND status IN ('QUEUED', 'SENDING')`),
    index("emails_project_campaign_id_idx").on(t.projectId, t.campaignId, t.id).where(sql`campaign_id IS NOT NULL`),
    // Retention walks the final emails that still hold their HTML, oldest (lowest UUIDv7) first (migration 0028).
    index("emails_html_kept_idx").on(t.id).where(sql`html != '' AND status NOT IN ('QUEUED', 'SENDING')`),
  ],
);

/** Attachments of one send, shared by its recipients; content lives in R2 (object_key; before migration 0030, in blob_chunks by blob_id). */
export const emailAttachments = sqliteTable(
  "email_attachments",
  {
    id: text("id").primaryKey(),
    sendId: text("send_id").notNull(),
    position: integer("position").notNull(),
    filename: text("filename").notNull(),
    contentType: text("content_type").notNull(),
    size: integer("size").notNull(),
    /** "" since migration 0030. */
    blobId: text("blob_id").notNull(),
    /** The R2 object holding the content (base64), store/objects/attachments.ts. */
    objectKey: text("object_key"),
  },
  (t) => [index("email_attachments_send_idx").on(t.sendId, t.position)],
);

/**
 * The custom headers of one /v1/send, stored once for all its recipients (up
 * to 50 entries, 8 KB): the send consumer reads them with each email's HTML
 * (joined by send_id). Counted in projects.stored_bytes by triggers, deleted
 * by a trigger when the send's last email is deleted (migration 0022).
 * Emails written before 0022 (or by an older Worker) may still carry theirs
 * in emails.headers, which the reader falls back to.
 */
export const sendHeaders = sqliteTable("send_headers", {
  sendId: text("send_id").primaryKey(),
  projectId: text("project_id")
    .notNull()
    .references(() => projects.id, { onDelete: "cascade" }),
  headers: json<Record<string, string>>("headers").notNull(),
  createdAt: createdAt(),
});

/** Content of attachments written before migration 0030 (none since: R2), deleted with their rows. */
export const blobChunks = sqliteTable(
  "blob_chunks",
  {
    blobId: text("blob_id").notNull(),
    seq: integer("seq").notNull(),
    data: text("data").notNull(),
  },
  (t) => [uniqueIndex("blob_chunks_pk").on(t.blobId, t.seq)],
);

/** Idempotency-Key records for /v1/send: the replayed response is rebuilt from the send's emails. */
export const idempotencyKeys = sqliteTable(
  "idempotency_keys",
  {
    projectId: text("project_id")
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    key: text("key").notNull(),
    requestHash: text("request_hash").notNull(),
    sendId: text("send_id").notNull(),
    response: json<unknown>("response").notNull(),
    createdAt: createdAt(),
  },
  (t) => [uniqueIndex("idempotency_keys_pk").on(t.projectId, t.key), index("idempotency_keys_created_idx").on(t.createdAt)],
);

/** Addresses never sent to again in a project (permanent bounce, complaint). */
/** Why an address is suppressed, and which mail each stops (src/services/consent/gates.ts). */
export const SUPPRESSION_REASONS = ["BOUNCE", "COMPLAINT", "UNSUBSCRIBE", "MANUAL"] as const;
export const SUPPRESSION_STREAMS = ["ALL", "BROADCAST"] as const;

export const suppressions = sqliteTable(
  "suppressions",
  {
    projectId: text("project_id")
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    email: text("email").notNull(),
    reason: text("reason", { enum: SUPPRESSION_REASONS }).notNull(),
    /** Which mail it stops (migration 0036): ALL, or BROADCAST only (an unsubscribe; src/services/consent/gates.ts). */
    stream: text("stream", { enum: SUPPRESSION_STREAMS }).notNull().default("ALL"),
    detail: text("detail"),
    /** Why it was added by hand (POST /suppressions `note`). */
    note: text("note"),
    createdAt: createdAt(),
  },
  (t) => [
    uniqueIndex("suppressions_pk").on(t.projectId, t.email),
    // GET /suppressions: the project's list newest first, and by reason (migration 0036).
    index("suppressions_project_created_idx").on(t.projectId, t.createdAt, t.email),
    index("suppressions_project_reason_idx").on(t.projectId, t.reason, t.createdAt, t.email),
  ],
);

/** Mail kept by the `capture` provider (local development) for GET /dev/outbox. */
export const capturedMessages = sqliteTable("captured_messages", {
  id: text("id").primaryKey(),
  emailId: text("email_id").notNull(),
  projectId: text("project_id").notNull(),
  fromAddress: text("from_address").notNull(),
  toAddress: text("to_address").notNull(),
  subject: text("subject").notNull(),
  /** Bytes of the raw message. */
  size: integer("size").notNull(),
  /** Where the raw message is in R2 (store/objects/captured.ts): the object and its byte offset there. */
  objectKey: text("object_key").notNull(),
  objectOffset: integer("object_offset").notNull(),
  createdAt: createdAt(),
});

export type Email = typeof emails.$inferSelect;

export const WORKFLOW_TRIGGER_TYPES = ["EVENT", "CONTACT_CREATED", "CONTACT_SUBSCRIBED"] as const;
export type WorkflowTriggerType = (typeof WORKFLOW_TRIGGER_TYPES)[number];

/**
 * Automations (issue 11). The current definition lives on the row; every
 * definition a workflow ever had is kept in workflow_versions, so a running
 * execution keeps the version it started on. Deleting sets deleted_at: the
 * executions stay readable in D1 as CANCELLED, the API answers 404.
 */
export const workflows = sqliteTable(
  "workflows",
  {
    id: text("id").primaryKey(),
    projectId: text("project_id")
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    description: text("description"),
    enabled: integer("enabled", { mode: "boolean" }).notNull().default(false),
    allowReentry: integer("allow_reentry", { mode: "boolean" }).notNull().default(false),
    /** Whether events a public key (pk_) recorded start or resume it (off: only secret-key and service events). */
    allowPublicEvents: integer("allow_public_events", { mode: "boolean" }).notNull().default(false),
    version: integer("version").notNull().default(1),
    triggerType: text("trigger_type", { enum: WORKFLOW_TRIGGER_TYPES }).notNull(),
    /** The event name of an EVENT trigger (null for the contact triggers). */
    triggerEvent: text("trigger_event"),
    steps: json<unknown[]>("steps").notNull().default([]),
    /** The WEBHOOK signing secret, AES-GCM encrypted like DKIM keys; shown once at creation. */
    webhookSecretEncrypted: text("webhook_secret_encrypted").notNull(),
    deletedAt: timestamp("deleted_at"),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    index("workflows_project_id_idx").on(t.projectId, t.id),
    // Which enabled workflows start on a trigger (D1 triggers in migration 0006 and the trigger consumer).
    index("workflows_project_trigger_idx").on(t.projectId, t.triggerType, t.triggerEvent, t.enabled),
  ],
);

/** Every definition of a workflow, by version; executions run the version they started on. */
export const workflowVersions = sqliteTable(
  "workflow_versions",
  {
    workflowId: text("workflow_id")
      .notNull()
      .references(() => workflows.id, { onDelete: "cascade" }),
    version: integer("version").notNull(),
    triggerType: text("trigger_type", { enum: WORKFLOW_TRIGGER_TYPES }).notNull(),
    triggerEvent: text("trigger_event"),
    steps: json<unknown[]>("steps").notNull(),
    createdAt: createdAt(),
  },
  (t) => [uniqueIndex("workflow_versions_pk").on(t.workflowId, t.version)],
);

export const WORKFLOW_EXECUTION_STATUSES = ["RUNNING", "WAITING", "COMPLETED", "EXITED", "FAILED", "CANCELLED"] as const;
export type WorkflowExecutionStatus = (typeof WORKFLOW_EXECUTION_STATUSES)[number];

export interface WorkflowHistoryEntry {
  stepId: string;
  type: string;
  status: "RUNNING" | "WAITING" | "COMPLETED" | "SKIPPED" | "FAILED";
  outcome: string | null;
  startedAt: string;
  finishedAt: string | null;
}

/**
 * One row per execution (= one Cloudflare Workflows instance with the same id),
 * written from inside the instance's steps so the API answers from D1 alone.
 */
export const workflowExecutions = sqliteTable(
  "workflow_executions",
  {
    id: text("id").primaryKey(),
    projectId: text("project_id")
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    workflowId: text("workflow_id")
      .notNull()
      .references(() => workflows.id, { onDelete: "cascade" }),
    workflowVersion: integer("workflow_version").notNull(),
    contactId: text("contact_id").notNull(),
    /** What started it (`event:<id>`, `created:<contactId>`, `subscribed:<n>`): a redelivered trigger starts nothing twice. */
    triggerKey: text("trigger_key").notNull(),
    status: text("status", { enum: WORKFLOW_EXECUTION_STATUSES }).notNull().default("RUNNING"),
    currentStepId: text("current_step_id"),
    /** While a WAIT_FOR_EVENT step waits: the event name that resumes it (/v1/track looks it up). */
    waitingEvent: text("waiting_event"),
    /** While it waits for a reply to one email (WAIT_FOR_EVENT config.replyTo, migration 0042): that email's id. */
    waitingEmailId: text("waiting_email_id"),
    resumeAt: timestamp("resume_at"),
    error: text("error"),
    history: json<WorkflowHistoryEntry[]>("history").notNull().default([]),
    startedAt: timestamp("started_at").notNull(),
    finishedAt: timestamp("finished_at"),
    updatedAt: updatedAt(),
  },
  (t) => [
    uniqueIndex("workflow_executions_trigger_uq").on(t.workflowId, t.triggerKey),
    index("workflow_executions_workflow_id_idx").on(t.workflowId, t.id),
    index("workflow_executions_workflow_status_id_idx").on(t.workflowId, t.status, t.id),
    // Re-entry checks and the contactId filter.
    index("workflow_executions_workflow_contact_id_idx").on(t.workflowId, t.contactId, t.id),
    // /v1/track resuming the contact's waiting executions.
    index("workflow_executions_contact_waiting_idx").on(t.contactId, t.waitingEvent, t.status),
    // The active-execution cap counts a project's RUNNING and WAITING executions.
    index("workflow_executions_project_status_idx").on(t.projectId, t.status),
  ],
);

/**
 * Triggers waiting to be handed to the workflow queue. Rows are written by D1
 * triggers (migration 0006) on every insert of an event or a contact and every
 * subscription, whatever path wrote them, and only when an enabled workflow (or a
 * waiting execution) wants them; the request path and the cron drain them.
 */
export const workflowTriggerOutbox = sqliteTable(
  "workflow_trigger_outbox",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    projectId: text("project_id").notNull(),
    contactId: text("contact_id").notNull(),
    kind: text("kind", { enum: WORKFLOW_TRIGGER_TYPES }).notNull(),
    eventName: text("event_name"),
    eventId: text("event_id"),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [index("workflow_trigger_outbox_project_idx").on(t.projectId, t.id)],
);

export type Workflow = typeof workflows.$inferSelect;
export type WorkflowExecution = typeof workflowExecutions.$inferSelect;

export const SEGMENT_TYPES = ["DYNAMIC", "STATIC"] as const;
export type SegmentType = (typeof SEGMENT_TYPES)[number];

/** A saved audience: the contacts matching `condition` (the condition language), counted live. */
export const segments = sqliteTable(
  "segments",
  {
    id: text("id").primaryKey(),
    projectId: text("project_id")
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    description: text("description"),
    condition: json<unknown>("condition").notNull(),
    /** DYNAMIC: the contacts matching `condition`; STATIC: its segment_members (migration 0038). */
    type: text("type", { enum: SEGMENT_TYPES }).notNull().default("DYNAMIC"),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [index("segments_project_id_idx").on(t.projectId, t.id)],
);

/** A static segment's members (migration 0038); deleting the segment or the contact deletes the row. */
export const segmentMembers = sqliteTable(
  "segment_members",
  {
    segmentId: text("segment_id")
      .notNull()
      .references(() => segments.id, { onDelete: "cascade" }),
    contactId: text("contact_id")
      .notNull()
      .references(() => contacts.id, { onDelete: "cascade" }),
    projectId: text("project_id").notNull(),
    createdAt: createdAt(),
  },
  (t) => [primaryKey({ columns: [t.segmentId, t.contactId] }), index("segment_members_contact_idx").on(t.contactId)],
);

/** Topics (migration 0037): what a contact agreed to receive; `key` and `defaultSubscription` are immutable. */
export const TOPIC_SUBSCRIPTIONS = ["OPT_IN", "OPT_OUT"] as const;
export type TopicSubscription = (typeof TOPIC_SUBSCRIPTIONS)[number];
export const TOPIC_VISIBILITIES = ["PUBLIC", "PRIVATE"] as const;
export const CONTACT_TOPIC_STATUSES = ["OPT_IN", "OPT_OUT", "PENDING"] as const;
export type ContactTopicStatus = (typeof CONTACT_TOPIC_STATUSES)[number];
/** Where a contact's topic choice came from (contact_topics.source). */
export const CONTACT_TOPIC_SOURCES = ["api", "track", "preferences", "one_click", "page", "confirm"] as const;
export type ContactTopicSource = (typeof CONTACT_TOPIC_SOURCES)[number];

export const topics = sqliteTable(
  "topics",
  {
    id: text("id").primaryKey(),
    projectId: text("project_id")
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    key: text("key").notNull(),
    name: text("name").notNull(),
    description: text("description"),
    defaultSubscription: text("default_subscription", { enum: TOPIC_SUBSCRIPTIONS }).notNull(),
    visibility: text("visibility", { enum: TOPIC_VISIBILITIES }).notNull().default("PRIVATE"),
    doubleOptIn: integer("double_opt_in", { mode: "boolean" }).notNull().default(false),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [uniqueIndex("topics_project_key_uq").on(t.projectId, t.key), index("topics_project_id_idx").on(t.projectId, t.id)],
);

/** A contact's explicit choice for a topic (no row: the topic's default). */
export const contactTopics = sqliteTable(
  "contact_topics",
  {
    contactId: text("contact_id")
      .notNull()
      .references(() => contacts.id, { onDelete: "cascade" }),
    topicId: text("topic_id")
      .notNull()
      .references(() => topics.id, { onDelete: "cascade" }),
    projectId: text("project_id").notNull(),
    status: text("status", { enum: CONTACT_TOPIC_STATUSES }).notNull(),
    source: text("source", { enum: CONTACT_TOPIC_SOURCES }).notNull(),
    updatedAt: updatedAt(),
  },
  (t) => [primaryKey({ columns: [t.contactId, t.topicId] }), index("contact_topics_topic_status_idx").on(t.topicId, t.status, t.contactId)],
);

export type Topic = typeof topics.$inferSelect;

export const CAMPAIGN_STATUSES = ["DRAFT", "SCHEDULED", "SENDING", "SENT"] as const;
export type CampaignStatus = (typeof CAMPAIGN_STATUSES)[number];
export const AUDIENCE_TYPES = ["ALL", "SEGMENT", "FILTERED"] as const;
export type AudienceType = (typeof AUDIENCE_TYPES)[number];

export const campaigns = sqliteTable(
  "campaigns",
  {
    id: text("id").primaryKey(),
    projectId: text("project_id")
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    description: text("description"),
    subject: text("subject").notNull(),
    body: text("body").notNull(),
    from: text("from_address").notNull(),
    fromName: text("from_name"),
    replyTo: text("reply_to"),
    audienceType: text("audience_type", { enum: AUDIENCE_TYPES }).notNull(),
    segmentId: text("segment_id"),
    audienceFilter: json<unknown>("audience_filter"),
    status: text("status", { enum: CAMPAIGN_STATUSES }).notNull().default("DRAFT"),
    scheduledAt: timestamp("scheduled_at"),
    sentAt: timestamp("sent_at"),
    /** When sending started; with `audienceUpperId`, fixes who the audience is. */
    startedAt: timestamp("started_at"),
    /** The audience condition as it was when sending started (a segment may change later). */
    sendCondition: json<unknown>("send_condition"),
    /** Contacts with a larger id (created after the send started) are not added. */
    audienceUpperId: text("audience_upper_id"),
    /** Last contact id whose page was written; the next page starts after it. */
    sendCursor: text("send_cursor"),
    /** Every audience page is written (then SENT once every email is final). */
    audienceDone: integer("audience_done", { mode: "boolean" }).notNull().default(false),
    /** Paused (POST /campaigns/{id}/pause, migration 0038): no email of it is claimed, no audience page written. */
    paused: integer("paused", { mode: "boolean" }).notNull().default(false),
    /** The topic the campaign is aimed at (migration 0037): only contacts OPT_IN for it get the mail. */
    topicId: text("topic_id"),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    index("campaigns_project_id_idx").on(t.projectId, t.id),
    index("campaigns_project_status_id_idx").on(t.projectId, t.status, t.id),
    // The cron finds due SCHEDULED and unfinished SENDING campaigns.
    index("campaigns_status_scheduled_idx").on(t.status, t.scheduledAt),
    index("campaigns_segment_idx").on(t.segmentId),
  ],
);

export type Segment = typeof segments.$inferSelect;
export type Campaign = typeof campaigns.$inferSelect;

/**
 * Never holds a row: inserting (quota, used, quota_limit) is how a write batch
 * checks a quota inside its own transaction. A trigger (migration 0010) aborts
 * the batch with `QUOTA_EXCEEDED:<quota>` when used > quota_limit and otherwise
 * drops the row (RAISE(IGNORE)), so /v1/track, POST /contacts and /v1/send check
 * their quotas in the same round trip as their writes (src/services/quotas.ts).
 * /v1/send's write-only path checks its recipients' suppressions the same way
 * (quota 'SUPPRESSED_RECIPIENTS', limit 0: migration 0014, store/guards.ts suppressionGuard).
 */
export const quotaChecks = sqliteTable("quota_checks", {
  quota: text("quota").notNull(),
  used: integer("used").notNull(),
  quotaLimit: integer("quota_limit").notNull(),
});

/**
 * Usage counters the quota checks read instead of counting rows (which grew
 * with the project: a new contact counted every contact, each event or email
 * counted today's). Kept by D1 triggers (migration 0012) on every insert and
 * delete, whatever path writes: project_usage holds the project's contacts,
 * project_daily_usage the events and emails recorded per UTC day
 * (day = created_at / 86,400,000). Days before yesterday are pruned by the
 * retention job; only today's row is ever read.
 */
export const projectUsage = sqliteTable("project_usage", {
  projectId: text("project_id")
    .primaryKey()
    .references(() => projects.id, { onDelete: "cascade" }),
  contacts: integer("contacts").notNull().default(0),
});

export const projectDailyUsage = sqliteTable(
  "project_daily_usage",
  {
    projectId: text("project_id")
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    /** UTC day number: milliseconds since the epoch / 86,400,000. */
    day: integer("day").notNull(),
    events: integer("events").notNull().default(0),
    emails: integer("emails").notNull().default(0),
    /** Contacts created and events recorded through a public key (pk_) that day, counted by /v1/track's batch. */
    publicContacts: integer("public_contacts").notNull().default(0),
    publicEvents: integer("public_events").notNull().default(0),
    /** Messages received (inbound_messages, migration 0039), counted by a trigger; QUOTA_INBOUND_PER_DAY. */
    inbound: integer("inbound").notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.projectId, t.day] }), index("project_daily_usage_day_idx").on(t.day)],
);

/**
 * Per project and UTC day (day = timestamp / 86,400,000): emails handed to the
 * provider (sent_at set), permanent bounces (bounced_at set) and complaints
 * (complained_at set), each counted on the day it happened. Kept by D1 triggers
 * on emails (migration 0021) whatever path writes; read and pruned by the
 * reputation breaker, cleared for a project when it is resumed.
 */
export const projectReputation = sqliteTable(
  "project_reputation",
  {
    projectId: text("project_id")
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    day: integer("day").notNull(),
    sent: integer("sent").notNull().default(0),
    bounced: integer("bounced").notNull().default(0),
    complained: integer("complained").notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.projectId, t.day] }), index("project_reputation_day_idx").on(t.day)],
);

export const IMPORT_STATUSES = ["PENDING", "PROCESSING", "COMPLETED", "FAILED"] as const;

/**
 * A contact import (POST /contacts/imports): the CSV's header, the counts so
 * far and the first 100 row errors (by row number). The counters move in the
 * same D1 batch as the contacts each chunk writes (src/services/contact-imports/process.ts).
 */
export const contactImports = sqliteTable(
  "contact_imports",
  {
    id: text("id").primaryKey(),
    projectId: text("project_id")
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    status: text("status", { enum: IMPORT_STATUSES }).notNull().default("PENDING"),
    /** The header row as sent: the column names, in file order. */
    columns: json<string[]>("columns").notNull(),
    /** `?subscribed=`: the subscription of rows without one (null: new contacts unsubscribed, existing unchanged). */
    defaultSubscribed: integer("default_subscribed", { mode: "boolean" }),
    total: integer("total").notNull().default(0),
    processed: integer("processed").notNull().default(0),
    created: integer("created").notNull().default(0),
    updated: integer("updated").notNull().default(0),
    failed: integer("failed").notNull().default(0),
    errors: json<{ row: number; message: string }[]>("errors").notNull().default([]),
    createdAt: createdAt(),
    finishedAt: timestamp("finished_at"),
    /** Why a FAILED import failed (migration 0025). */
    failureReason: text("failure_reason"),
    /** The last time the upload staged rows or a chunk was applied (ms): the cron's measure of a stalled import. */
    progressAt: integer("progress_at").notNull().default(0),
    /** How far the cron's current re-queue round of a stalled import got (0: no round). */
    resumeRow: integer("resume_row").notNull().default(0),
    /** The uploaded file in R2 (store/objects/imports.ts), and the record delimiter its header ended with (migration 0030). */
    objectKey: text("object_key"),
    recordDelimiter: text("record_delimiter"),
    /** The column plan the upload settled: each column's role, data key and type (migration 0035; null before it: read from the header). */
    columnPlan: json<StoredColumnPlan>("column_plan"),
    /** Rows a later row of the same address replaced (migration 0035). */
    duplicates: integer("duplicates").notNull().default(0),
  },
  (t) => [
    index("contact_imports_project_id_idx").on(t.projectId, t.id),
    // Partial (open imports only): the per-project cap and the cron's scan.
    index("contact_imports_open_idx").on(t.projectId).where(sql`status IN ('PENDING', 'PROCESSING')`),
    index("contact_imports_progress_idx").on(t.progressAt).where(sql`status IN ('PENDING', 'PROCESSING')`),
  ],
);

/**
 * The import's chunks (migration 0030): the upload cuts the file's data rows into ranges of
 * at most CHUNK_ROWS rows and CHUNK_BYTES bytes, each a byte range of the R2 object
 * (contact_imports.object_key) that a chunk consumer reads and parses. `skip`: the rows of the
 * range another row of the file with the same address replaces (the last row wins);
 * `rows`: the rows the chunk applies (the range's rows less those). Deleted when the import ends.
 */
export const contactImportRanges = sqliteTable(
  "contact_import_ranges",
  {
    importId: text("import_id")
      .notNull()
      .references(() => contactImports.id, { onDelete: "cascade" }),
    /** 1 = the first data row of the file. */
    firstRow: integer("first_row").notNull(),
    lastRow: integer("last_row").notNull(),
    /** The range's bytes in the object: [startByte, endByte). */
    startByte: integer("start_byte").notNull(),
    endByte: integer("end_byte").notNull(),
    rows: integer("rows").notNull(),
    skip: json<number[]>("skip").notNull().default([]),
  },
  (t) => [primaryKey({ columns: [t.importId, t.firstRow] })],
);

/**
 * One row per processed chunk (first row of its range): inserted first in the
 * chunk's batch, so a redelivered chunk fails on the primary key and its batch
 * writes nothing. `outbox_mark` is the workflow outbox's last id before the
 * chunk's upsert: what the upsert's triggers add after it is removed.
 */
export const contactImportChunks = sqliteTable(
  "contact_import_chunks",
  {
    importId: text("import_id")
      .notNull()
      .references(() => contactImports.id, { onDelete: "cascade" }),
    firstRow: integer("first_row").notNull(),
    outboxMark: integer("outbox_mark").notNull(),
  },
  (t) => [primaryKey({ columns: [t.importId, t.firstRow] })],
);

export type ContactImport = typeof contactImports.$inferSelect;

/**
 * Event webhooks (issue 26): a project's endpoints, the events recorded for
 * them (written in the same batch as the change, only when an enabled endpoint
 * subscribes; they wait with fanned_out = 0 until the queue consumer made their
 * deliveries), and one delivery per event and endpoint. src/store/webhooks/
 * (events.ts, endpoints.ts, deliveries.ts) is the only writer of these tables.
 */
export const webhookEndpoints = sqliteTable(
  "webhook_endpoints",
  {
    id: text("id").primaryKey(),
    projectId: text("project_id")
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    url: text("url").notNull(),
    /** Event types it receives; [] is every type. */
    events: json<string[]>("events").notNull().default([]),
    description: text("description"),
    enabled: integer("enabled", { mode: "boolean" }).notNull().default(true),
    disabledReason: text("disabled_reason"),
    /** The signing secret, AES-GCM encrypted like DKIM keys; shown once. */
    secretEncrypted: text("secret_encrypted").notNull(),
    /** After a rotation: the previous secret, which keeps signing beside the new one until previousSecretExpiresAt. */
    previousSecretEncrypted: text("previous_secret_encrypted"),
    previousSecretExpiresAt: timestamp("previous_secret_expires_at"),
    /** Since when every attempt has failed (null after a success); 5 days of it disables the endpoint. */
    failingSince: timestamp("failing_since"),
    /** The normalised URL (src/services/webhooks/url.ts): one endpoint per URL and project; null for a duplicate disabled by migration 0024. */
    urlKey: text("url_key"),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    index("webhook_endpoints_project_id_idx").on(t.projectId, t.id),
    index("webhook_endpoints_project_enabled_idx").on(t.projectId, t.enabled),
    uniqueIndex("webhook_endpoints_project_url_uq").on(t.projectId, t.urlKey),
  ],
);

export const webhookEvents = sqliteTable(
  "webhook_events",
  {
    /** UUIDv7; also the `eventId` of its deliveries. */
    id: text("id").primaryKey(),
    projectId: text("project_id").notNull(),
    type: text("type").notNull(),
    /** The request body sent to endpoints: `{type, timestamp, data}` as JSON text. */
    payload: text("payload").notNull(),
    /** Its deliveries exist: the outbox drain skips it. */
    fannedOut: integer("fanned_out", { mode: "boolean" }).notNull().default(false),
    /** When the drain last handed it to the queue (a claim; handed again if still not fanned out minutes later). */
    queuedAt: timestamp("queued_at"),
    createdAt: createdAt(),
  },
  (t) => [index("webhook_events_outbox_idx").on(t.queuedAt, t.id).where(sql`fanned_out = 0`)],
);

export const WEBHOOK_DELIVERY_STATUSES = ["PENDING", "SUCCEEDED", "FAILED"] as const;
export type WebhookDeliveryStatus = (typeof WEBHOOK_DELIVERY_STATUSES)[number];

export const webhookDeliveries = sqliteTable(
  "webhook_deliveries",
  {
    id: text("id").primaryKey(),
    projectId: text("project_id").notNull(),
    webhookId: text("webhook_id").notNull(),
    eventId: text("event_id").notNull(),
    type: text("type").notNull(),
    status: text("status", { enum: WEBHOOK_DELIVERY_STATUSES }).notNull().default("PENDING"),
    attempts: integer("attempts").notNull().default(0),
    lastStatusCode: integer("last_status_code"),
    lastError: text("last_error"),
    /** When the next attempt is due (PENDING); while an attempt runs, the end of its claim. */
    nextAttemptAt: timestamp("next_attempt_at"),
    /** While an attempt runs: when it was claimed (an old claim never reported: the sweep counts it as failed). */
    claimedAt: timestamp("claimed_at"),
    /** When a queue message for it was last sent; null: it waits for the paced drain (over the per-minute cap). */
    queuedAt: timestamp("queued_at"),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    uniqueIndex("webhook_deliveries_webhook_event_uq").on(t.webhookId, t.eventId),
    index("webhook_deliveries_webhook_id_idx").on(t.webhookId, t.id),
    index("webhook_deliveries_webhook_status_id_idx").on(t.webhookId, t.status, t.id),
    // The cron's paced drain: a project's due PENDING deliveries.
    index("webhook_deliveries_project_due_idx").on(t.projectId, t.nextAttemptAt).where(sql`status = 'PENDING'`),
    // The sweep of attempts that never reported.
    index("webhook_deliveries_claimed_idx").on(t.claimedAt).where(sql`claimed_at IS NOT NULL`),
  ],
);

/** PENDING deliveries per project (kept by triggers, migration 0024) and when the drain last visited it. */
export const webhookPending = sqliteTable(
  "webhook_pending",
  {
    projectId: text("project_id").primaryKey(),
    pending: integer("pending").notNull().default(0),
    drainedAt: integer("drained_at").notNull().default(0),
  },
  (t) => [index("webhook_pending_drain_idx").on(t.drainedAt).where(sql`pending > 0`)],
);

export type WebhookEndpoint = typeof webhookEndpoints.$inferSelect;
export type WebhookDelivery = typeof webhookDeliveries.$inferSelect;

/**
 * What a project keeps in R2, per key prefix and UTC day of writing (migration 0027):
 * src/store/objects/usage.ts adds to it as objects are written and drops the days
 * whose objects expired; triggers keep projects.r2_stored_bytes.
 */
export const r2Usage = sqliteTable(
  "r2_usage",
  {
    projectId: text("project_id").notNull(),
    prefix: text("prefix").notNull(),
    day: integer("day").notNull(),
    bytes: integer("bytes").notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.projectId, t.prefix, t.day] }), index("r2_usage_prefix_day").on(t.prefix, t.day)],
);

/**
 * The committed parts of the day archives (migration 0031): records older than the hot
 * window (EMAIL_HOT_DAYS) as gzipped NDJSON in R2, per project, kind (emails, events,
 * webhook-deliveries), UTC day number and part. src/store/objects/archive.ts writes a row in
 * the batch that deletes the part's records from D1; reads by id and exports list them.
 */
export const archiveRuns = sqliteTable(
  "archive_runs",
  {
    projectId: text("project_id").notNull(),
    kind: text("kind").notNull(),
    day: integer("day").notNull(),
    part: integer("part").notNull(),
    r2Key: text("r2_key").notNull(),
    firstId: text("first_id").notNull(),
    lastId: text("last_id").notNull(),
    rows: integer("rows").notNull(),
    bytes: integer("bytes").notNull(),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.projectId, t.kind, t.day, t.part] }), index("archive_runs_day_idx").on(t.day)],
);
