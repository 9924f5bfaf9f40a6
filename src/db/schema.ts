import { sql } from "drizzle-orm";
import { index, integer, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

// Timestamps are stored as integer milliseconds since the epoch and exposed as Date.
const timestamp = (name: string) => integer(name, { mode: "timestamp_ms" });
const createdAt = () =>
  timestamp("created_at")
    .notNull()
    .default(sql`(unixepoch('subsec') * 1000)`);
const updatedAt = () =>
  timestamp("updated_at")
    .notNull()
    .default(sql`(unixepoch('subsec') * 1000)`);
const json = <T>(name: string) => text(name, { mode: "json" }).$type<T>();

export type JsonObject = Record<string, unknown>;

export const projects = sqliteTable("projects", {
  id: text("id").primaryKey(),
  name: text("name").notNull(),
  disabled: integer("disabled", { mode: "boolean" }).notNull().default(false),
  trackingEnabled: integer("tracking_enabled", { mode: "boolean" }).notNull().default(true),
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
    createdAt: createdAt(),
  },
  (t) => [
    index("events_project_id_idx").on(t.projectId, t.id),
    index("events_project_name_id_idx").on(t.projectId, t.name, t.id),
    index("events_contact_id_idx").on(t.contactId, t.id),
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

export type DnsRecordStatus = "PENDING" | "VERIFIED" | "FAILED";
export interface DomainDnsRecord {
  purpose: "DKIM" | "SPF" | "RETURN_PATH_MX" | "RETURN_PATH_SPF" | "DMARC";
  type: "TXT" | "MX" | "CNAME";
  name: string;
  value: string;
  priority?: number;
  required: boolean;
  status: DnsRecordStatus;
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
    status: text("status", { enum: ["PENDING", "VERIFIED", "FAILED"] }).notNull().default("PENDING"),
    dkimSelector: text("dkim_selector").notNull(),
    dkimPublicKey: text("dkim_public_key").notNull(),
    // AES-GCM encrypted PKCS#8 private key (base64 "iv.ciphertext"), key from the DKIM_ENCRYPTION_KEY secret.
    dkimPrivateKeyEncrypted: text("dkim_private_key_encrypted").notNull(),
    records: json<DomainDnsRecord[]>("records").notNull().default([]),
    checkAttempts: integer("check_attempts").notNull().default(0),
    lastCheckedAt: timestamp("last_checked_at"),
    nextCheckAt: timestamp("next_check_at"),
    verifiedAt: timestamp("verified_at"),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    uniqueIndex("domains_name_uq").on(t.name),
    index("domains_project_id_idx").on(t.projectId, t.id),
    index("domains_status_next_check_idx").on(t.status, t.nextCheckAt),
  ],
);

export type Project = typeof projects.$inferSelect;
export type Contact = typeof contacts.$inferSelect;
export type Event = typeof events.$inferSelect;
export type Template = typeof templates.$inferSelect;
export type Domain = typeof domains.$inferSelect;
