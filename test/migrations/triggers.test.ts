import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import architecture from "../../docs/architecture.md?raw";

/**
 * Every trigger the migrated schema must have: the one list. drizzle-kit does
 * not know triggers, so a generated migration that rebuilds a table
 * (`__new_x`, `DROP TABLE x`) drops that table's triggers silently; this test
 * fails then. A new trigger is one line here and one row in
 * docs/architecture.md's "D1 triggers" table.
 */
const EXPECTED_TRIGGERS: Record<string, string> = {
  contacts_data_cap_insert: "BEFORE INSERT ON contacts",
  contacts_data_cap_update: "BEFORE UPDATE OF data ON contacts",
  workflow_trigger_event: "BEFORE INSERT ON events",
  workflow_trigger_contact_insert: "AFTER INSERT ON contacts",
  workflow_trigger_contact_subscribed: "AFTER UPDATE OF subscribed ON contacts",
  quota_checks_guard: "BEFORE INSERT ON quota_checks",
  contacts_usage_insert: "AFTER INSERT ON contacts",
  contacts_usage_delete: "AFTER DELETE ON contacts",
  events_usage_insert: "AFTER INSERT ON events",
  emails_bytes_update: "AFTER UPDATE OF html, headers ON emails",
  emails_bytes_delete: "AFTER DELETE ON emails",
  events_bytes_insert: "AFTER INSERT ON events",
  events_bytes_delete: "AFTER DELETE ON events",
  contacts_bytes_insert: "AFTER INSERT ON contacts",
  contacts_bytes_update: "AFTER UPDATE OF data ON contacts",
  contacts_bytes_delete: "AFTER DELETE ON contacts",
  templates_bytes_insert: "AFTER INSERT ON templates",
  templates_bytes_update: "AFTER UPDATE OF subject, body ON templates",
  templates_bytes_delete: "AFTER DELETE ON templates",
  campaigns_bytes_insert: "AFTER INSERT ON campaigns",
  campaigns_bytes_update: "AFTER UPDATE OF subject, body ON campaigns",
  campaigns_bytes_delete: "AFTER DELETE ON campaigns",
  workflow_versions_bytes_insert: "AFTER INSERT ON workflow_versions",
  workflow_versions_bytes_delete: "AFTER DELETE ON workflow_versions",
  emails_reputation_bounced: "AFTER UPDATE OF bounced_at ON emails",
  emails_reputation_complained: "AFTER UPDATE OF complained_at ON emails",
  send_headers_bytes_insert: "AFTER INSERT ON send_headers",
  send_headers_bytes_delete: "AFTER DELETE ON send_headers",
  emails_send_headers_delete: "AFTER DELETE ON emails",
  contact_imports_bytes_insert: "AFTER INSERT ON contact_imports",
  contact_imports_bytes_update: "AFTER UPDATE OF errors, failure_reason, column_plan ON contact_imports",
  contact_imports_bytes_delete: "AFTER DELETE ON contact_imports",
  webhook_events_bytes_insert: "AFTER INSERT ON webhook_events",
  webhook_events_bytes_update: "AFTER UPDATE OF payload ON webhook_events",
  webhook_events_bytes_delete: "AFTER DELETE ON webhook_events",
  webhook_deliveries_bytes_insert: "AFTER INSERT ON webhook_deliveries",
  webhook_deliveries_bytes_update: "AFTER UPDATE OF last_error ON webhook_deliveries",
  webhook_deliveries_bytes_delete: "AFTER DELETE ON webhook_deliveries",
  webhook_deliveries_pending_insert: "AFTER INSERT ON webhook_deliveries",
  webhook_deliveries_pending_update: "AFTER UPDATE OF status ON webhook_deliveries",
  webhook_deliveries_pending_delete: "AFTER DELETE ON webhook_deliveries",
  r2_usage_insert: "AFTER INSERT ON r2_usage",
  r2_usage_update: "AFTER UPDATE OF bytes ON r2_usage",
  r2_usage_delete: "AFTER DELETE ON r2_usage",
  contacts_unsubscribe_suppression: "AFTER UPDATE OF subscribed ON contacts",
  contacts_resubscribe_suppression: "AFTER UPDATE OF subscribed ON contacts",
  contacts_subscribed_insert_suppression: "AFTER INSERT ON contacts",
  quota_checks_suppressions: "BEFORE INSERT ON quota_checks",
  topics_bytes_insert: "AFTER INSERT ON topics",
  topics_bytes_update: "AFTER UPDATE OF name, description ON topics",
  topics_bytes_delete: "AFTER DELETE ON topics",
  quota_checks_topics: "BEFORE INSERT ON quota_checks",
  contact_topics_bytes_insert: "AFTER INSERT ON contact_topics",
  contact_topics_bytes_delete: "AFTER DELETE ON contact_topics",
  segment_members_bytes_insert: "AFTER INSERT ON segment_members",
  segment_members_bytes_delete: "AFTER DELETE ON segment_members",
  inbound_messages_usage_insert: "AFTER INSERT ON inbound_messages",
  inbound_messages_bytes_insert: "AFTER INSERT ON inbound_messages",
  inbound_messages_bytes_update: "AFTER UPDATE OF subject, text, stripped_text, attachments_json, references_json ON inbound_messages",
  inbound_messages_bytes_delete: "AFTER DELETE ON inbound_messages",
};

/** "BEFORE UPDATE OF data ON contacts" from a CREATE TRIGGER statement, spaces normalised. */
function timing(sql: string): string {
  const m = /CREATE\s+TRIGGER\s+\S+\s+((?:BEFORE|AFTER|INSTEAD\s+OF)\s+[\s\S]+?\s+ON\s+\S+)/i.exec(sql);
  return (m?.[1] ?? "").replace(/\s+/g, " ").replace(/`|"/g, "");
}

describe("D1 triggers", () => {
  it("the migrated schema has exactly the expected triggers, each on its table and event", async () => {
    const { results } = await env.DB.prepare("SELECT name, sql FROM sqlite_master WHERE type = 'trigger' ORDER BY name").all<{ name: string; sql: string }>();
    const actual = Object.fromEntries(results.map((t) => [t.name, timing(t.sql)]));
    expect(actual).toEqual(EXPECTED_TRIGGERS);
  });

  it("docs/architecture.md's trigger table lists the same triggers", () => {
    const section = architecture.slice(architecture.indexOf("## D1 triggers"));
    const rows = [...section.matchAll(/^\| `([a-z0-9_]+)` \| ([^|]+?) \|/gm)].map(([, name, on]) => [name, on.trim()]);
    expect(Object.fromEntries(rows)).toEqual(EXPECTED_TRIGGERS);
    expect(rows).toHaveLength(Object.keys(EXPECTED_TRIGGERS).length);
  });
});
