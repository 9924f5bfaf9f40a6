import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import migration from "../../migrations/0024_webhook_limits.sql?raw";
import { expectError } from "../support/http";
import { webhookProject } from "../support/webhooks";

/** Migration 0024's statements that resolve endpoints sharing a URL, run again on a database that has some. */
const DEDUPE = migration
  .split("--> statement-breakpoint")
  .map((s) => s.replace(/^\s*--.*$/gm, "").trim())
  .filter((s) => s.startsWith("UPDATE webhook_endpoints") || s.startsWith("CREATE UNIQUE INDEX `webhook_endpoints_project_url_uq`"));

describe("migration 0024: endpoints that shared a URL", () => {
  it("the oldest enabled one keeps the URL; the others are disabled with a reason naming it, and enabling one again is 409", async () => {
    expect(DEDUPE).toHaveLength(4);
    const p = await webhookProject("dedupe");
    const url = "https://hooks.example.net/shared";
    // The state before 0024: no key, no unique index.
    await env.DB.prepare("DROP INDEX webhook_endpoints_project_url_uq").run();
    const insert = (id: string, enabled: number, createdAt: number, at = url) =>
      env.DB.prepare(
        `INSERT INTO webhook_endpoints (id, project_id, url, events, enabled, secret_encrypted, created_at, updated_at)
         VALUES (?1, ?2, ?3, '[]', ?4, 'x', ?5, ?5)`,
      )
        .bind(id, p.id, at, enabled, createdAt)
        .run();
    const ids = { disabledOldest: crypto.randomUUID(), enabledOldest: crypto.randomUUID(), enabledNewer: crypto.randomUUID(), alone: crypto.randomUUID() };
    await insert(ids.disabledOldest, 0, 1000);
    await insert(ids.enabledOldest, 1, 2000);
    await insert(ids.enabledNewer, 1, 3000);
    await insert(ids.alone, 1, 4000, "https://hooks.example.net/alone");
    for (const statement of DEDUPE) await env.DB.prepare(statement).run();

    const { results } = await env.DB.prepare("SELECT id, enabled, disabled_reason, url_key FROM webhook_endpoints WHERE project_id = ?1")
      .bind(p.id)
      .all<{ id: string; enabled: number; disabled_reason: string | null; url_key: string | null }>();
    const byId = Object.fromEntries(results.map((r) => [r.id, r]));
    expect(byId[ids.enabledOldest]).toMatchObject({ enabled: 1, disabled_reason: null, url_key: url });
    expect(byId[ids.alone]).toMatchObject({ enabled: 1, url_key: "https://hooks.example.net/alone" });
    for (const id of [ids.disabledOldest, ids.enabledNewer]) {
      expect(byId[id]).toMatchObject({
        enabled: 0,
        url_key: null,
        disabled_reason: `Another endpoint of this project has the same URL (${ids.enabledOldest}); one endpoint per URL`,
      });
    }
    // Enabling a disabled twin again: 409 naming the endpoint that kept the URL; once that is gone, it may.
    const res = expectError(await p.call("PATCH", `/webhooks/${ids.enabledNewer}`, { enabled: true }), 409, "CONFLICT");
    expect(res.message).toContain(ids.enabledOldest);
    expect((await p.call("PATCH", `/webhooks/${ids.enabledNewer}`, { description: "kept" })).status).toBe(200);
    expect((await p.call("DELETE", `/webhooks/${ids.enabledOldest}`)).status).toBe(204);
    expect((await p.call("DELETE", `/webhooks/${ids.disabledOldest}`)).status).toBe(204);
    expect((await p.call("PATCH", `/webhooks/${ids.enabledNewer}`, { enabled: true })).status).toBe(200);
    expectError(await p.call("POST", "/webhooks", { url }), 409, "CONFLICT");
  });
});
