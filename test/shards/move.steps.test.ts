import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { copyCounters, copyTable, countBoth, moveTable, ROW_TABLES } from "../../src/services/shards/move";
import { newProject } from "../support/http";
import { move, populatedProject, rowsOn } from "./support";

describe("a move's steps, repeated or failing", () => {
  it("a copy call run again (a retried step) copies nothing twice", async () => {
    const p = await populatedProject();
    const id = p.project.id;
    for (let round = 0; round < 2; round++) {
      for (const t of ROW_TABLES) {
        // Small pages: the keyset walk crosses page boundaries.
        let cursor: Awaited<ReturnType<typeof copyTable>>["cursor"] = null;
        do cursor = (await copyTable(env.DB, env.SHARD_1!, t, id, cursor, 2)).cursor;
        while (cursor !== null);
      }
      await copyCounters(env.DB, env.SHARD_1!, id);
      const counts = await countBoth(env.DB, env.SHARD_1!, id);
      expect(counts.filter((c) => c.source !== c.target)).toEqual([]);
    }
    const stored = "SELECT stored_bytes, r2_stored_bytes FROM projects WHERE id = ?1";
    expect(await env.SHARD_1!.prepare(stored).bind(id).first()).toEqual(await env.DB.prepare(stored).bind(id).first());
  }, 60_000);

  it("a workflow trigger waiting in the outbox keeps its id unless the target uses it, and is copied once", async () => {
    const a = await newProject("outbox a");
    const b = await newProject("outbox b");
    const row =
      "INSERT INTO workflow_trigger_outbox (id, project_id, contact_id, kind, event_name, event_id, created_at) VALUES (?1, ?2, ?3, 'EVENT', 'signup', ?4, ?5)";
    await env.DB.batch([env.DB.prepare(row).bind(900_001, a.id, "c1", "e1", 1), env.DB.prepare(row).bind(900_002, a.id, "c2", "e2", 2)]);
    // On the target, another project's trigger already has the first id.
    await env.SHARD_1!.batch([
      env.SHARD_1!.prepare("INSERT INTO projects (id, name) VALUES (?1, 'b')").bind(b.id),
      env.SHARD_1!.prepare(row).bind(900_001, b.id, "c9", "e9", 9),
    ]);
    const outbox = moveTable("workflow_trigger_outbox");
    await copyTable(env.DB, env.SHARD_1!, outbox, a.id, null);
    await copyTable(env.DB, env.SHARD_1!, outbox, a.id, null);
    const { results } = await env
      .SHARD_1!.prepare("SELECT id, project_id AS projectId, event_id AS eventId FROM workflow_trigger_outbox ORDER BY event_id")
      .all();
    expect(results).toEqual([
      { id: expect.any(Number), projectId: a.id, eventId: "e1" },
      { id: 900_002, projectId: a.id, eventId: "e2" },
      { id: 900_001, projectId: b.id, eventId: "e9" },
    ]);
    expect(results[0].id).not.toBe(900_001);
  });

  it("a copy that does not match its source is undone: the project stays where it was and takes writes again", async () => {
    const p = await populatedProject();
    const id = p.project.id;
    const before = await rowsOn(0, id);
    // A stray row of the project on the target (say, from an earlier run stopped by hand): the counts cannot match.
    await env.SHARD_1!.batch([
      env.SHARD_1!.prepare("INSERT OR IGNORE INTO projects (id, name) VALUES (?1, 'x')").bind(id),
      env.SHARD_1!.prepare("INSERT INTO contacts (id, project_id, email) VALUES (?1, ?2, 'stray@example.org')").bind(crypto.randomUUID(), id),
    ]);
    const moved = await move(id, 1);
    expect(moved.status).toBe("errored");
    expect(await rowsOn(0, id)).toEqual(before);
    expect(await rowsOn(1, id)).toEqual({});
    expect(await env.DB.prepare("SELECT shard, moving_to FROM project_shards WHERE project_id = ?1").bind(id).first()).toEqual({ shard: 0, moving_to: null });
    // Nothing switched: the API answers from shard 0 as before.
    expect((await p.project.api.get(`/emails/${p.emails[0]}`)).status).toBe(200);
    expect((await p.project.api.post("/contacts", { email: "after@example.org" })).status).toBeLessThan(300);
  }, 90_000);

  it("refuses a shard the deployment does not have and a project that does not exist, changing nothing", async () => {
    const p = await newProject("nowhere");
    const none = await move(p.id, 7);
    expect(none).toMatchObject({ status: "errored" });
    const ghost = await move("no-such-project", 1);
    expect(ghost).toMatchObject({ status: "errored" });
    expect(await env.DB.prepare("SELECT count(*) AS n FROM project_shards WHERE project_id = ?1 AND moving_to IS NOT NULL").bind(p.id).first("n")).toBe(0);
  });
});
