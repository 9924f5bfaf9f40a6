import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { getDb } from "../../../src/db/client";
import type { Env } from "../../../src/env";
import { runScheduledJobs } from "../../../src/scheduled";
import { createProject } from "../../../src/services/projects";
import { usageDay } from "../../../src/store/objects/usage";

/**
 * The objectExpiry cron job (src/services/storage/expiry.ts) through the real tick: on every data
 * shard the r2_usage days past a prefix's keep are dropped (and projects.r2_stored_bytes with them);
 * in development and test the expired objects are deleted too, as the bucket's lifecycle rules do
 * in production, where the job leaves the bucket alone.
 */
const DAY_MS = 86_400_000;

async function projectOn(shard: 0 | 1) {
  const d1 = shard === 0 ? env.DB : env.SHARD_1!;
  const project = await createProject(getDb(env.DB), `expiry on ${shard}`, shard === 0 ? undefined : { shard, d1 });
  return { id: project.id, d1 };
}

async function ledger(d1: D1Database, projectId: string) {
  const { results } = await d1
    .prepare("SELECT day, bytes FROM r2_usage WHERE project_id = ?1 AND prefix = 'bodies/' ORDER BY day")
    .bind(projectId)
    .all<{ day: number; bytes: number }>();
  const total = await d1.prepare("SELECT r2_stored_bytes AS n FROM projects WHERE id = ?1").bind(projectId).first<{ n: number }>();
  return { days: results.map((r) => r.day), total: total?.n };
}

describe("object expiry (cron)", () => {
  it("drops the r2_usage days past EMAIL_HTML_RETENTION_DAYS on every shard, keeping the recent ones; the stored-bytes total follows", async () => {
    const today = usageDay(Date.now());
    const projects = [await projectOn(0), await projectOn(1)];
    for (const { id, d1 } of projects) {
      await d1
        .prepare("INSERT INTO r2_usage (project_id, prefix, day, bytes) VALUES (?1, 'bodies/', ?2, 1000), (?1, 'bodies/', ?3, 500)")
        .bind(id, today - 31, today - 29)
        .run();
      expect(await ledger(d1, id)).toEqual({ days: [today - 31, today - 29], total: 1500 });
    }
    await runScheduledJobs(env, { scheduledTime: Date.now() });
    for (const { id, d1 } of projects) expect(await ledger(d1, id)).toEqual({ days: [today - 29], total: 500 });
  });

  it("deletes objects older than their prefix's keep only where there are no lifecycle rules (development, test)", async () => {
    const key = `bodies/${new Date().toISOString().slice(0, 10)}/expiry-test-${crypto.randomUUID()}`;
    await env.STORAGE.put(key, "<p>x</p>");
    // 29 days on: kept.
    await runScheduledJobs(env, { scheduledTime: Date.now() + 29 * DAY_MS });
    expect(await env.STORAGE.head(key)).not.toBeNull();
    // A deployment (production) leaves the bucket to its lifecycle rules.
    await runScheduledJobs({ ...env, ENVIRONMENT: "production", EMAIL_PROVIDER: "ses" } as Env, { scheduledTime: Date.now() + 31 * DAY_MS });
    expect(await env.STORAGE.head(key)).not.toBeNull();
    // Locally, past 30 days: deleted.
    await runScheduledJobs(env, { scheduledTime: Date.now() + 31 * DAY_MS });
    expect(await env.STORAGE.head(key)).toBeNull();
  });
});
