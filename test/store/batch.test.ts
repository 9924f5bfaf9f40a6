import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { newId } from "../../src/lib/ids";
import type { Committed } from "../../src/lib/after-commit";
import { WriteBatch } from "../../src/store/batch";
import { outboxProbe } from "../../src/store/guards";
import { recordWebhookEvent } from "../../src/store/webhooks/events";
import { webhookProject } from "../support/webhooks";

describe("WriteBatch", () => {
  it("answers each part's rows by its handle, whatever was added around it", async () => {
    const batch = new WriteBatch(env.DB);
    const before = batch.add(env.DB.prepare("SELECT 1 AS n"), env.DB.prepare("SELECT 2 AS n"));
    const empty = batch.add(null, undefined);
    const after = batch.add(env.DB.prepare("SELECT 3 AS n UNION ALL SELECT 4"));
    const result = await batch.run();
    expect(result.each(before)).toEqual([[{ n: 1 }], [{ n: 2 }]]);
    expect(result.rows(empty)).toEqual([]);
    expect(result.rows(after)).toEqual([{ n: 3 }, { n: 4 }]);
    expect(() => result.rows(new WriteBatch(env.DB).add(env.DB.prepare("SELECT 1")))).toThrow(/another batch/);
  });

  it("runs all its statements in one transaction: a failing statement writes nothing of the others", async () => {
    const { id: projectId } = await webhookProject("batch atomic");
    const batch = new WriteBatch(env.DB);
    batch.add(env.DB.prepare("UPDATE projects SET name = 'changed' WHERE id = ?1").bind(projectId));
    batch.add(env.DB.prepare("INSERT INTO no_such_table VALUES (1)"));
    await expect(batch.run()).rejects.toThrow();
    const row = await env.DB.prepare("SELECT name FROM projects WHERE id = ?1").bind(projectId).first<{ name: string }>();
    expect(row?.name).toBe("batch atomic");
  });

  it("reports the webhook events its record statements wrote and the workflow outbox it probed, to the door it was given", async () => {
    const project = await webhookProject("batch events");
    await project.createWebhook({ url: "https://hooks.example.net/in", events: ["contact.created"] });
    const batch = new WriteBatch(env.DB);
    const subscribed = newId();
    const ignored = newId();
    batch.add(recordWebhookEvent(env.DB, { id: subscribed, projectId: project.id, type: "contact.created", data: {}, at: new Date() }));
    // No endpoint subscribes to this type: the statement records nothing, and the batch reports nothing for it.
    batch.add(recordWebhookEvent(env.DB, { id: ignored, projectId: project.id, type: "email.sent", data: {}, at: new Date() }));
    batch.add(outboxProbe(env.DB, project.id));
    const told: Committed[] = [];
    const result = await batch.run({ afterCommit: { committed: (r) => told.push(r) } });
    expect(result.webhookEvents).toEqual([{ id: subscribed, projectId: project.id }]);
    expect(result.workflowTriggersPending(project.id)).toBe(false);
    expect(result.workflowTriggersPending("another project")).toBeUndefined();
    expect(told).toEqual([result]);
  });

  it("answers how many rows each part's statements wrote", async () => {
    const { id: projectId } = await webhookProject("batch changes");
    const batch = new WriteBatch(env.DB);
    const renamed = batch.add(env.DB.prepare("UPDATE projects SET name = 'renamed' WHERE id = ?1").bind(projectId));
    const none = batch.add(env.DB.prepare("UPDATE projects SET name = 'x' WHERE id = 'no such project'"));
    const result = await batch.run();
    expect(result.changes(renamed)).toBe(1);
    expect(result.changes(none)).toBe(0);
  });

  it("costs no round trip when empty", async () => {
    const told: Committed[] = [];
    const result = await new WriteBatch(env.DB).run({ afterCommit: { committed: (r) => told.push(r) } });
    expect(result.webhookEvents).toEqual([]);
    expect(told).toHaveLength(1);
  });
});
