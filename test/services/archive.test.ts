import { env } from "cloudflare:workers";
import { eq, inArray } from "drizzle-orm";
import { v7 as uuidv7 } from "uuid";
import { describe, expect, it } from "vitest";
import { getDb } from "../../src/db/client";
import { archiveRuns, emails, events, projects, r2Usage } from "../../src/db/schema";
import type { Env } from "../../src/env";
import { readConfig } from "../../src/lib/config";
import { runScheduledJobs } from "../../src/scheduled";
import { archiveKind } from "../../src/services/archive/run";
import { createProject } from "../../src/services/projects";
import { insertOldEmail } from "../support/emails";
import { call, expectError, newProject, type TestProject } from "../support/http";

/**
 * The hot window (issue 34): records older than EMAIL_HOT_DAYS (90) leave D1 for R2 day archives
 * in the cron, stay readable by id and in exports, and a crash between the R2 put and the D1
 * commit loses and duplicates nothing.
 */
const DAY = 86_400_000;
const db = () => getDb(env.DB);
const dayName = (daysAgo: number) => new Date(Date.now() - daysAgo * DAY).toISOString().slice(0, 10);
const tick = (e: Env = env as Env) => runScheduledJobs(e, { scheduledTime: Date.now() });

async function exportLines(p: TestProject, kind: "emails" | "events", from: string, to: string) {
  const res = await call<Uint8Array>("GET", `/exports/${kind}?from=${from}&to=${to}`, { key: p.secretKey, binary: true });
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toContain("application/x-ndjson");
  const text = new TextDecoder().decode(res.body);
  return text
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line) as { id: string; archived: boolean; subject?: string; email?: string | null; name?: string });
}

const inD1 = async (ids: string[]) => (await db().select({ id: emails.id }).from(emails).where(inArray(emails.id, ids))).map((r) => r.id).sort();

/** Same-day old emails (`daysAgo`), `n` of them, ids in creation order. */
async function oldEmails(projectId: string, daysAgo: number, n: number) {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push(await insertOldEmail(projectId, daysAgo));
  return ids.sort();
}

describe("the hot window and the archive", () => {
  it("moves an email older than EMAIL_HOT_DAYS to R2 in the cron; GET /emails/{id} still answers it, lists do not, a 30-day export streams it", async () => {
    const p = await newProject();
    const old = await insertOldEmail(p.id, 100);
    const recent = await insertOldEmail(p.id, 10);
    const oldEvent = {
      id: uuidv7({ msecs: Date.now() - 100 * DAY }),
      projectId: p.id,
      name: "visited",
      data: { page: "/a" },
      createdAt: new Date(Date.now() - 100 * DAY),
    };
    await db().insert(events).values(oldEvent);
    const before = await p.api.get<{ id: string; archived?: boolean }>(`/emails/${old}`);
    expect(before.status).toBe(200);
    expect(before.body.archived).toBeUndefined();

    await tick();

    // Out of D1, the recent one stays.
    expect(await inD1([old, recent])).toEqual([recent]);
    expect(await db().select().from(events).where(eq(events.id, oldEvent.id))).toHaveLength(0);
    // Read by id from its day's archive, the same shape plus `archived`.
    const read = await p.api.get<{ id: string; subject: string; status: string; to: string; archived: boolean; createdAt: string; html: string | null }>(
      `/emails/${old}`,
    );
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({ id: old, subject: "Old news", status: "SENT", to: "old@example.com", archived: true, html: null });
    expect(Date.parse(read.body.createdAt)).toBeLessThan(Date.now() - 99 * DAY);
    // Lists cover the hot window only.
    const list = await p.api.get<{ data: { items: { id: string }[] } }>("/emails?limit=100");
    expect(list.body.data.items.map((e) => e.id)).toEqual([recent]);
    // Another project cannot read it; an unknown id of that day is still 404.
    const other = await newProject();
    expectError(await other.api.get(`/emails/${old}`), 404, "NOT_FOUND");
    expectError(await p.api.get(`/emails/${uuidv7({ msecs: Date.now() - 100 * DAY })}`), 404, "NOT_FOUND");

    // A 30-day export around it: the archived email alone; a wider one adds the hot email after it.
    const month = await exportLines(p, "emails", dayName(115), dayName(86));
    expect(month.map((l) => [l.id, l.archived, l.subject])).toEqual([[old, true, "Old news"]]);
    const wide = await exportLines(p, "emails", dayName(120), dayName(0));
    expect(wide.map((l) => [l.id, l.archived])).toEqual([
      [old, true],
      [recent, false],
    ]);
    const eventLines = await exportLines(p, "events", dayName(115), dayName(86));
    expect(eventLines.map((l) => [l.id, l.name, l.archived])).toEqual([[oldEvent.id, "visited", true]]);

    // The archive's bytes count in the project's R2 storage.
    const usage = await db().select().from(r2Usage).where(eq(r2Usage.projectId, p.id));
    expect(usage.map((u) => u.prefix).sort()).toEqual(["archive/emails/", "archive/events/"]);
    expect(usage.every((u) => u.bytes > 0)).toBe(true);
    const [project] = await db().select({ r2: projects.r2StoredBytes }).from(projects).where(eq(projects.id, p.id));
    expect(project.r2).toBe(usage.reduce((sum, u) => sum + u.bytes, 0));
  });

  it("works in bounded ticks (ARCHIVE_ROWS_PER_TICK) and reads every part of a day", async () => {
    const p = await newProject();
    const ids = await oldEmails(p.id, 120, 5);
    const small = { ...env, ARCHIVE_ROWS_PER_TICK: "2" } as Env;
    await tick(small);
    expect(await inD1(ids)).toEqual(ids.slice(2));
    await tick(small);
    expect(await inD1(ids)).toEqual(ids.slice(4));
    await tick(small);
    expect(await inD1(ids)).toEqual([]);
    // Three parts of one day, each email read by id, exported once each in order.
    const parts = await db().select().from(archiveRuns).where(eq(archiveRuns.projectId, p.id));
    expect(parts.map((r) => [r.part, r.rows])).toEqual([
      [0, 2],
      [1, 2],
      [2, 1],
    ]);
    for (const id of ids) expect((await p.api.get<{ id: string; archived: boolean }>(`/emails/${id}`)).body).toMatchObject({ id, archived: true });
    expect((await exportLines(p, "emails", dayName(130), dayName(101))).map((l) => l.id)).toEqual(ids);
  });

  it("loses and duplicates nothing when a tick dies between the R2 put and the D1 commit", async () => {
    const p = await newProject();
    const ids = await oldEmails(p.id, 150, 3);
    // The first run puts the part object, then its D1 batch fails (the invocation died): nothing committed.
    const dying = new Proxy(env.DB, {
      get(target, key) {
        if (key === "batch") return () => Promise.reject(new Error("invocation died"));
        const value = Reflect.get(target, key);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    await expect(archiveKind(dying, env.STORAGE, readConfig(env), "emails", new Date())).rejects.toThrow("invocation died");
    const listed = await env.STORAGE.list({ prefix: `archive/emails/${p.id}/` });
    expect(listed.objects).toHaveLength(1);
    expect(await inD1(ids)).toEqual(ids);
    expect(await db().select().from(archiveRuns).where(eq(archiveRuns.projectId, p.id))).toHaveLength(0);
    // While it is so, reads and exports see each email once (from D1).
    expect((await exportLines(p, "emails", dayName(160), dayName(131))).map((l) => [l.id, l.archived])).toEqual(ids.map((id) => [id, false]));

    // The next tick writes the same part again (same key) and commits it.
    await tick();
    expect(await inD1(ids)).toEqual([]);
    expect((await env.STORAGE.list({ prefix: `archive/emails/${p.id}/` })).objects.map((o) => o.key)).toEqual(listed.objects.map((o) => o.key));
    expect((await exportLines(p, "emails", dayName(160), dayName(131))).map((l) => [l.id, l.archived])).toEqual(ids.map((id) => [id, true]));
    for (const id of ids) expect((await p.api.get(`/emails/${id}`)).status).toBe(200);
  });

  it("leaves a row that changed while its part was written to the next tick, with the change", async () => {
    const p = await newProject();
    const [id] = await oldEmails(p.id, 95, 1);
    // A late open lands between the read of the rows and the commit.
    const racing = new Proxy(env.DB, {
      get(target, key) {
        if (key === "batch") {
          return async (statements: D1PreparedStatement[]) => {
            await target.prepare("UPDATE emails SET opens = opens + 1, updated_at = updated_at + 1 WHERE id = ?").bind(id).run();
            return target.batch(statements);
          };
        }
        const value = Reflect.get(target, key);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const first = await archiveKind(racing, env.STORAGE, readConfig(env), "emails", new Date());
    expect(first.rows).toBe(0);
    expect(first.retry).toBeDefined();
    expect(await inD1([id])).toEqual([id]);
    await tick();
    expect(await inD1([id])).toEqual([]);
    expect((await p.api.get<{ opens: number; archived: boolean }>(`/emails/${id}`)).body).toMatchObject({ opens: 1, archived: true });
  });

  it("keeps QUEUED mail, and whatever retention would delete sooner than the hot window (webhook deliveries, 30 days), in D1", async () => {
    const p = await newProject();
    const stuck = await insertOldEmail(p.id, 100, { status: "QUEUED" });
    const result = (await tick()) as { archive: Record<string, Record<string, { rows: number }>> };
    expect(await inD1([stuck])).toEqual([stuck]);
    expect(result.archive[0]["webhook-deliveries"].rows).toBe(0);
  });

  it("archives on every data shard: a project on SHARD_1 gets its old email moved and reads it back", async () => {
    const placed = await createProject(getDb(env.DB), "on shard 1", { shard: 1, d1: env.SHARD_1! });
    const created = Date.now() - 100 * DAY;
    const id = uuidv7({ msecs: created });
    await getDb(env.SHARD_1!)
      .insert(emails)
      .values({
        id,
        projectId: placed.id,
        sendId: uuidv7({ msecs: created }),
        fromAddress: "news@sender.example",
        toAddress: "far@example.com",
        subject: "From shard 1",
        html: "",
        status: "DELIVERED",
        messageId: `${id}@sender.example`,
        createdAt: new Date(created),
        updatedAt: new Date(created),
      });
    await tick();
    expect(await getDb(env.SHARD_1!).select().from(emails).where(eq(emails.id, id))).toHaveLength(0);
    expect(await getDb(env.SHARD_1!).select().from(archiveRuns).where(eq(archiveRuns.projectId, placed.id))).toHaveLength(1);
    expect(await db().select().from(archiveRuns).where(eq(archiveRuns.projectId, placed.id))).toHaveLength(0);
    const read = await call<{ id: string; subject: string; archived: boolean }>("GET", `/emails/${id}`, { key: placed.secretKey });
    expect(read.body).toMatchObject({ id, subject: "From shard 1", archived: true });
  });

  it("GET /project says how far lists reach back (historyDays, EMAIL_HOT_DAYS)", async () => {
    const p = await newProject();
    const res = await p.api.get<{ data: { historyDays: number } }>("/project");
    expect(res.status).toBe(200);
    expect(res.body.data.historyDays).toBe(90);
    const patched = await p.api.patch<{ data: { historyDays: number } }>("/project", { trackingEnabled: false });
    expect(patched.body.data.historyDays).toBe(90);
  });

  it("answers a bad export range with the contract's 422 naming the field, and needs a secret key", async () => {
    const p = await newProject();
    const bad = async (query: string, field: string) => {
      const error = expectError(await p.api.get(`/exports/emails?${query}`), 422, "VALIDATION_ERROR");
      expect(error.errors?.map((e) => e.field)).toContain(field);
    };
    await bad("from=2026-03-10&to=2026-03-01", "to");
    await bad("from=2025-01-01&to=2026-01-02", "to");
    await bad("from=2026-02-30&to=2026-03-01", "from");
    await bad("from=yesterday&to=2026-03-01", "from");
    await bad("from=2026-03-01", "to");
    expectError(await p.publicApi.get("/exports/emails?from=2026-03-01&to=2026-03-02"), 403);
    // 366 days is the most.
    expect((await exportLines(p, "emails", "2025-01-01", "2026-01-01")).length).toBe(0);
  });
});
