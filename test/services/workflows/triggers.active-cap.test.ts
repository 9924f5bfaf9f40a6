import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { afterEach, describe, expect, it, vi } from "vitest";
import { getDb } from "../../../src/db/client";
import { workflowExecutions } from "../../../src/db/schema";
import { readConfig } from "../../../src/lib/config";
import { automationProject } from "../../support/workflows";
import { eventually } from "../../support/wait";

vi.setConfig({ testTimeout: 60_000 });
afterEach(() => vi.restoreAllMocks());

const hold = [{ id: "hold", type: "WAIT_FOR_EVENT", config: { eventName: "never", timeout: { amount: 1, unit: "days" } } }];

interface ExecutionList {
  data: { items: { id: string; contactId: string; status: string }[] };
}

describe("workflows: active executions per project", () => {
  it("past MAX_ACTIVE_EXECUTIONS_PER_PROJECT (default 10,000) a trigger starts nothing; once one ends, triggers start again", async () => {
    const cap = readConfig(env).MAX_ACTIVE_EXECUTIONS_PER_PROJECT;
    expect(cap).toBe(10_000);
    const warn = vi.spyOn(console, "warn");
    const a = await automationProject();
    const filler = await a.createWorkflow({ name: "filler", eventName: "filler", steps: hold });
    const workflow = await a.createWorkflow({ name: "hold", eventName: "start", steps: hold });
    // cap - 1 executions already waiting (rows as the engine writes them), in the filler workflow.
    await env.DB.prepare(
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?3)
       INSERT INTO workflow_executions (id, project_id, workflow_id, workflow_version, contact_id, trigger_key, status, history, started_at, updated_at)
       SELECT 'filler-' || i, ?1, ?2, 1, 'nobody-' || i, 'filler:' || i, 'WAITING', '[]', 0, 0 FROM n`,
    )
      .bind(a.project.id, filler.id, cap - 1)
      .run();
    const list = async () => (await a.project.api.get<ExecutionList>(`/workflows/${workflow.id}/executions`)).body.data.items;

    const first = await a.track("first@example.org", "start");
    await eventually(async () => expect((await list()).map((e) => e.contactId)).toEqual([first.contact]));

    // The project now has `cap` active executions: the next trigger is skipped, and logged.
    const second = await a.track("second@example.org", "start");
    await eventually(async () =>
      expect(warn).toHaveBeenCalledWith(expect.stringContaining(`has ${cap} active executions (MAX_ACTIVE_EXECUTIONS_PER_PROJECT ${cap})`)),
    );
    expect((await list()).map((e) => e.contactId)).toEqual([first.contact]);
    expect((await list()).some((e) => e.contactId === second.contact)).toBe(false);

    // Another project is not affected.
    const b = await automationProject();
    const theirs = await b.createWorkflow({ name: "hold", eventName: "start", steps: hold });
    await b.track("second@example.org", "start");
    await b.executionWhere(theirs.id, (e) => e.status === "WAITING");

    // One execution ends: a new trigger starts again.
    await getDb(env.DB).update(workflowExecutions).set({ status: "COMPLETED" }).where(eq(workflowExecutions.id, "filler-1"));
    const third = await a.track("third@example.org", "start");
    await eventually(async () => expect((await list()).map((e) => e.contactId).sort()).toEqual([first.contact, third.contact].sort()));
  });
});
