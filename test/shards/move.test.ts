import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { forgetRoute } from "../../src/db/shards";
import { runScheduledJobs } from "../../src/scheduled";
import { MOVE_RETRY_SECONDS } from "../../src/services/shards/moving";
import { clearMoving, markMoving } from "../../src/store/moves";
import type { Email, Execution } from "../support/api";
import { call, expectError, newProject } from "../support/http";
import { sendingSetup } from "../support/sending";
import { eventually } from "../support/wait";
import { automationProject } from "../support/workflows";
import { shardOf } from "./world";
import { notification, sesEvent, sign, snsHandler } from "../fakes/sns";
import { move, POPULATED, populatedProject, rowsOn, shard } from "./support";

describe("npm run project -- move (ProjectMoveWorkflow)", () => {
  it("copies every row of a project to the other shard, switches it and deletes the old rows", async () => {
    const p = await populatedProject();
    const before = await rowsOn(0, p.project.id);
    expect(Object.keys(before).sort()).toEqual(expect.arrayContaining(POPULATED.sort()));
    expect(await rowsOn(1, p.project.id)).toEqual({});

    const moved = await move(p.project.id, 1);
    expect(moved, moved.error).toMatchObject({ status: "complete", output: { status: "moved", from: 0, to: 1 } });

    expect(await rowsOn(1, p.project.id)).toEqual(before);
    // The control database keeps the project's registry row, nothing else.
    expect(await rowsOn(0, p.project.id)).toEqual({ projects: 1 });
    const route = await env.DB.prepare("SELECT shard, moving_to FROM project_shards WHERE project_id = ?1").bind(p.project.id).first();
    expect(route).toEqual({ shard: 1, moving_to: null });
  }, 60_000);
});

describe("while a project moves", () => {
  it("its API writes answer 503 with Retry-After and change nothing; reads go on; writes work again after", async () => {
    const p = await newProject("busy");
    expect((await p.api.post("/contacts", { email: "first@example.org" })).status).toBeLessThan(300);
    // The move's first step: the mark (a fresh app below, so no isolate cache still says otherwise).
    await markMoving(env.DB, p.id, 0, 1).run();
    forgetRoute(p.id);
    const app = createApp();
    const as = (method: string, path: string, body?: unknown) => call(method, path, { key: p.secretKey, body, handler: app.fetch });

    const refused = await as("POST", "/contacts", { email: "during@example.org" });
    const error = expectError(refused, 503, "SERVICE_UNAVAILABLE");
    expect(error.message).toContain("being moved");
    expect(refused.headers.get("Retry-After")).toBe(String(MOVE_RETRY_SECONDS));
    expectError(await as("POST", "/v1/track", { email: "during@example.org", event: "x" }), 503);
    expectError(await as("DELETE", "/contacts/first@example.org"), 503);
    const list = await as("GET", "/contacts");
    expect(list.status).toBe(200);
    expect((list.body as { contacts: { email: string }[] }).contacts.map((c) => c.email)).toEqual(["first@example.org"]);

    await clearMoving(env.DB, p.id).run();
    forgetRoute(p.id);
    const after = createApp();
    expect((await call("POST", "/contacts", { key: p.secretKey, body: { email: "during@example.org" }, handler: after.fetch })).status).toBeLessThan(300);
  });

  it("a queued email waits (sent again later, not failed) and is sent once after the move, from the new shard", async () => {
    const s = await sendingSetup();
    const sent = await s.send({ to: "wait@example.org", from: s.from, subject: "Held", body: "<p>Held</p>" });
    expect(sent.status).toBe(200);
    const emailId = sent.body.data.emails[0].email;
    const queued = s.queue.take().map((m) => m.body);
    await markMoving(env.DB, s.project.id, 0, 1).run();
    forgetRoute(s.project.id);

    const held = await s.deliver(queued);
    expect(held.retryMessages).toEqual([]);
    expect(s.ses.calls).toHaveLength(0);
    const again = s.queue.take();
    expect(again.map((m) => [m.body.emailId, m.delaySeconds])).toEqual([[emailId, MOVE_RETRY_SECONDS]]);
    expect(await env.DB.prepare("SELECT status FROM emails WHERE id = ?1").bind(emailId).first("status")).toBe("QUEUED");

    // The move itself (marked already: the workflow goes on from the mark).
    expect(await move(s.project.id, 1)).toMatchObject({ status: "complete", output: { status: "moved", from: 0, to: 1 } });
    await s.deliver(again.map((m) => m.body));
    await s.deliver(queued); // the first message again (a queue delivers at least once): nothing twice
    expect(s.ses.calls).toHaveLength(1);
    expect(await env.SHARD_1!.prepare("SELECT status FROM emails WHERE id = ?1").bind(emailId).first("status")).toBe("SENT");
    expect(await env.DB.prepare("SELECT count(*) AS n FROM emails WHERE id = ?1").bind(emailId).first("n")).toBe(0);
    // Through a fresh app: the move waits out the isolates' key caches (5 s) before it switches; the test skips that wait.
    const read = await call<Email>("GET", `/emails/${emailId}`, { key: s.project.secretKey, handler: createApp().fetch, env: s.env });
    expect(read.body.status).toBe("SENT");
  });

  it("the cron leaves both shards' project jobs alone until the move ends", async () => {
    const p = await newProject("cron");
    await markMoving(env.DB, p.id, 0, 1).run();
    const results = await runScheduledJobs(env, { scheduledTime: Date.now() });
    expect(results.stuckEmails).toEqual({ skipped: "a project is moving between shards 0 and 1" });
    expect(results["stuckEmails@1"]).toEqual({ skipped: "a project is moving between shards 0 and 1" });
    expect(results.domainChecks).not.toHaveProperty("skipped");
    await clearMoving(env.DB, p.id).run();
    expect((await runScheduledJobs(env, { scheduledTime: Date.now() })).stuckEmails).not.toHaveProperty("skipped");
  });
});

describe("a workflow execution across a move", () => {
  it("one waiting for an event when its project moves goes on from the new shard", async () => {
    const a = await automationProject();
    const template = await a.template("Done");
    const workflow = await a.createWorkflow({
      name: "hold",
      eventName: "start",
      steps: [
        { id: "hold", type: "WAIT_FOR_EVENT", config: { eventName: "go", timeout: { amount: 1, unit: "days" } }, branches: { event: "mail", timeout: null } },
        { id: "mail", type: "SEND_EMAIL", config: { templateId: template } },
      ],
    });
    await a.track("eve@example.org", "start");
    const waiting = await a.executionWhere(workflow.id, (e) => e.status === "WAITING");
    const from = await shardOf(a.project.id);
    const to = from === 0 ? 1 : 0;
    expect(await move(a.project.id, to)).toMatchObject({ status: "complete", output: { status: "moved", from, to } });

    // Through fresh apps: the move's waits for the isolates' key caches are skipped here.
    const api = <T>(method: string, path: string, body?: unknown) => call<T>(method, path, { key: a.project.secretKey, body, handler: createApp().fetch });
    expect((await api("POST", "/v1/track", { email: "eve@example.org", event: "go" })).status).toBe(200);
    const done = await eventually(async () => {
      const got = await api<Execution>("GET", `/workflows/${workflow.id}/executions/${waiting.id}`);
      expect(got.body.status).toBe("COMPLETED");
      return got.body;
    });
    expect(done.history.map((h) => [h.stepId, h.status])).toEqual([
      ["hold", "COMPLETED"],
      ["mail", "COMPLETED"],
    ]);
    expect(await rowsOn(from, a.project.id)).toEqual(from === 0 ? { projects: 1 } : {});
  }, 90_000);
});

describe("SES feedback during a move", () => {
  it("answers 503 (SNS delivers it again later) and changes nothing; after the move it applies on the new shard", async () => {
    const s = await sendingSetup();
    s.serve(snsHandler);
    const sent = await s.send({ to: "gone@example.org", from: s.from, subject: "Bounce me", body: "<p>x</p>" });
    const emailId = sent.body.data.emails[0].email;
    await s.deliver();
    const from = await shardOf(s.project.id);
    const to = from === 0 ? 1 : 0;
    const bounce = JSON.stringify(await sign(notification(sesEvent("Bounce", s.ses.calls[0]))));
    const post = () => call("POST", "/webhooks/ses", { env: s.env, rawBody: bounce, headers: { "Content-Type": "text/plain" } });

    await markMoving(env.DB, s.project.id, from, to).run();
    forgetRoute(s.project.id);
    const refused = await post();
    expectError(refused, 503, "SERVICE_UNAVAILABLE");
    expect(refused.headers.get("Retry-After")).toBe(String(MOVE_RETRY_SECONDS));
    expect(await shard(from).prepare("SELECT status FROM emails WHERE id = ?1").bind(emailId).first("status")).toBe("SENT");

    expect(await move(s.project.id, to)).toMatchObject({ status: "complete" });
    expect((await post()).status).toBe(200);
    expect(await shard(to).prepare("SELECT status FROM emails WHERE id = ?1").bind(emailId).first("status")).toBe("BOUNCED");
  }, 60_000);
});
