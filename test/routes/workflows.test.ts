import { describe, expect, it } from "vitest";
import { expectError, newProject, type TestProject } from "../support/http";
import type { CreatedWorkflow, Template, Workflow, WorkflowList } from "../support/api";

async function template(p: TestProject, overrides: Record<string, unknown> = {}) {
  const res = await p.api.post<Template>("/templates", {
    name: "Welcome",
    subject: "Hi {{firstName}}",
    body: "<p>Hi</p>",
    type: "TRANSACTIONAL",
    from: "hello@example.com",
    ...overrides,
  });
  expect(res.status).toBe(201);
  return res.body.id;
}

const send = (id: string, templateId: string, next?: string) => ({ id, type: "SEND_EMAIL", config: { templateId }, ...(next ? { next } : {}) });

describe("POST /workflows", () => {
  it("creates a disabled workflow (201), shows the webhook secret once, and reads back without it", async () => {
    const p = await newProject();
    const t = await template(p);
    const res = await p.api.post<CreatedWorkflow>("/workflows", {
      name: "Welcome series",
      trigger: { type: "EVENT", eventName: "signup" },
      steps: [send("a", t, "pause"), { id: "pause", type: "DELAY", config: { amount: 2, unit: "days" } }],
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body).toMatchObject({
      id: expect.any(String),
      name: "Welcome series",
      description: null,
      enabled: false,
      allowReentry: false,
      trigger: { type: "EVENT", eventName: "signup" },
      version: 1,
      stats: { running: 0, waiting: 0, completed: 0, exited: 0, failed: 0, cancelled: 0 },
    });
    expect(res.body.webhookSecret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(atob(res.body.webhookSecret.slice(6))).toHaveLength(32);

    const fetched = await p.api.get<Workflow & { webhookSecret?: string }>(`/workflows/${res.body.id}`);
    expect(fetched.status).toBe(200);
    expect(fetched.body.webhookSecret).toBeUndefined();
    const { webhookSecret: _secret, ...withoutSecret } = res.body;
    expect(fetched.body).toEqual(withoutSecret);
  });

  it("takes Plunk's top-level eventName as an EVENT trigger", async () => {
    const p = await newProject();
    const res = await p.api.post("/workflows", { name: "Plunk style", eventName: "purchase", enabled: true });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ trigger: { type: "EVENT", eventName: "purchase" }, enabled: true, steps: [] });
  });

  it("needs a trigger", async () => {
    const p = await newProject();
    const err = expectError(await p.api.post("/workflows", { name: "No trigger" }), 422, "VALIDATION_ERROR");
    expect(err.errors!.map((e) => e.field)).toEqual(["trigger"]);
  });

  describe("refuses each invalid graph with a 422 naming the step, and stores nothing", () => {
    const cases: [string, (t: string, other: string) => unknown[], string][] = [
      ["an unknown step type", () => [{ id: "a", type: "SEND_SMS", config: {} }], "steps.0.type"],
      ["an unknown config field", (t) => [{ id: "a", type: "SEND_EMAIL", config: { templateId: t, cc: "x" } }], "steps.0.config"],
      ["a missing config field", () => [{ id: "a", type: "DELAY", config: { unit: "days" } }], "steps.0.config.amount"],
      ["a next to a missing step", (t) => [send("a", t, "nowhere")], "steps.0.next"],
      [
        "a branch to a missing step",
        () => [{ id: "w", type: "WAIT_FOR_EVENT", config: { eventName: "x", timeout: { amount: 1, unit: "days" } }, branches: { event: "gone" } }],
        "steps.0.branches.event",
      ],
      ["a cycle", (t) => [send("a", t, "b"), send("b", t, "c"), send("c", t, "a")], "steps.2.next"],
      ["a self loop", (t) => [send("a", t, "a")], "steps.0.next"],
      ["an unreachable step", (t) => [send("a", t), send("island", t)], "steps.1"],
      ["an unknown template", () => [send("a", "00000000-0000-7000-8000-000000000000")], "steps.0.config.templateId"],
      ["another project's template", (_t, other) => [send("a", other)], "steps.0.config.templateId"],
      ["a delay over 365 days", () => [{ id: "d", type: "DELAY", config: { amount: 366, unit: "days" } }], "steps.0.config.amount"],
      [
        "a wait timeout over 365 days",
        () => [{ id: "w", type: "WAIT_FOR_EVENT", config: { eventName: "x", timeout: { amount: 9000, unit: "hours" } } }],
        "steps.0.config.timeout.amount",
      ],
      ["more than 100 steps", (t) => Array.from({ length: 101 }, (_, i) => send(`s${i}`, t, i < 100 ? `s${i + 1}` : undefined)), "steps"],
      ["a duplicate step id", (t) => [send("a", t, "a2"), { ...send("a", t), id: "a" }], "steps.1.id"],
      [
        "a bad condition",
        () => [{ id: "c", type: "CONDITION", config: { condition: { logic: "AND", groups: [{ filters: [{ field: "data.plan", operator: "bogus" }] }] } } }],
        "steps.0.config.condition.groups.0.filters.0.operator",
      ],
      ["an http webhook URL", () => [{ id: "h", type: "WEBHOOK", config: { url: "http://hooks.example.com/x" } }], "steps.0.config.url"],
      ["a loopback webhook URL", () => [{ id: "h", type: "WEBHOOK", config: { url: "https://127.0.0.1/x" } }], "steps.0.config.url"],
      ["a private webhook URL", () => [{ id: "h", type: "WEBHOOK", config: { url: "https://10.1.2.3/x" } }], "steps.0.config.url"],
      ["a link-local webhook URL", () => [{ id: "h", type: "WEBHOOK", config: { url: "https://[fe80::1]/x" } }], "steps.0.config.url"],
      ["a metadata-service webhook URL", () => [{ id: "h", type: "WEBHOOK", config: { url: "https://169.254.169.254/latest" } }], "steps.0.config.url"],
      ["a localhost webhook URL", () => [{ id: "h", type: "WEBHOOK", config: { url: "https://localhost:8443/x" } }], "steps.0.config.url"],
      ["a next on an EXIT step", () => [{ id: "e", type: "EXIT", config: {}, next: "e" }], "steps.0"],
    ];
    for (const [name, steps, field] of cases) {
      it(name, async () => {
        const p = await newProject();
        const other = await newProject("other");
        const t = await template(p);
        const otherTemplate = await template(other);
        const res = await p.api.post("/workflows", { name: "Bad", eventName: "signup", steps: steps(t, otherTemplate) });
        const err = expectError(res, 422, "VALIDATION_ERROR");
        expect(
          err.errors!.map((e) => e.field),
          JSON.stringify(err.errors),
        ).toContain(field);
        const list = await p.api.get<WorkflowList>("/workflows");
        expect(list.body.data.total).toBe(0);
      });
    }

    it("also on PATCH, which then changes nothing", async () => {
      const p = await newProject();
      const t = await template(p);
      const created = await p.api.post<CreatedWorkflow>("/workflows", { name: "Ok", eventName: "signup", steps: [send("a", t)] });
      const err = expectError(await p.api.patch(`/workflows/${created.body.id}`, { steps: [send("a", t, "b")] }), 422);
      expect(err.errors![0]).toMatchObject({ field: "steps.0.next" });
      expect(err.errors![0].message).toContain('"a"');
      const after = await p.api.get<Workflow>(`/workflows/${created.body.id}`);
      expect(after.body.version).toBe(1);
      expect(after.body.steps).toEqual([send("a", t)]);
    });
  });

  it("refuses a template without a from address", async () => {
    const p = await newProject();
    const t = await template(p, { from: null });
    const err = expectError(await p.api.post("/workflows", { name: "x", eventName: "e", steps: [send("a", t)] }), 422);
    expect(err.errors!.map((e) => e.field)).toEqual(["steps.0.config.templateId"]);
  });
});

describe("GET/PATCH/DELETE /workflows/{id}", () => {
  it("PATCH of steps or trigger makes a new version; other fields do not", async () => {
    const p = await newProject();
    const t = await template(p);
    const created = await p.api.post<CreatedWorkflow>("/workflows", { name: "v", eventName: "signup", steps: [send("a", t)] });
    const patch = async (id: string, body: unknown) => {
      const res = await p.api.patch<Workflow>(`/workflows/${id}`, body);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return res.body;
    };
    const renamed = await patch(created.body.id, { name: "renamed", enabled: true, allowReentry: true });
    expect(renamed).toMatchObject({ name: "renamed", enabled: true, allowReentry: true, version: 1 });
    const v2 = await patch(created.body.id, { steps: [send("first", t)] });
    expect(v2.version).toBe(2);
    const v3 = await patch(created.body.id, { trigger: { type: "CONTACT_CREATED" } });
    expect(v3).toMatchObject({ version: 3, trigger: { type: "CONTACT_CREATED" } });
    const same = await patch(created.body.id, { trigger: { type: "CONTACT_CREATED" } });
    expect(same.version).toBe(3);
  });

  it("lists newest first with the general list shape and cursor pagination", async () => {
    const p = await newProject();
    for (const name of ["one", "two", "three"]) await p.api.post("/workflows", { name, eventName: name });
    const first = await p.api.get<WorkflowList>("/workflows?limit=2");
    expect(first.body).toMatchObject({ success: true, data: { hasMore: true, total: 3 } });
    expect(first.body.data.items.map((w) => w.name)).toEqual(["three", "two"]);
    const second = await p.api.get<WorkflowList>(`/workflows?limit=2&cursor=${first.body.data.nextCursor}`);
    expect(second.body.data).toMatchObject({ hasMore: false, nextCursor: null });
    expect(second.body.data.items.map((w) => w.name)).toEqual(["one"]);
  });

  it("another project's workflow is a 404 everywhere", async () => {
    const p = await newProject();
    const other = await newProject("other");
    const created = await p.api.post<CreatedWorkflow>("/workflows", { name: "mine", eventName: "x" });
    const id = created.body.id;
    expectError(await other.api.get(`/workflows/${id}`), 404, "NOT_FOUND");
    expectError(await other.api.patch(`/workflows/${id}`, { name: "stolen" }), 404, "NOT_FOUND");
    expectError(await other.api.get(`/workflows/${id}/executions`), 404, "NOT_FOUND");
    expectError(await other.api.delete(`/workflows/${id}`), 404, "NOT_FOUND");
    expect((await p.api.get<Workflow>(`/workflows/${id}`)).body.name).toBe("mine");
  });

  it("DELETE answers 204, then 404", async () => {
    const p = await newProject();
    const created = await p.api.post<CreatedWorkflow>("/workflows", { name: "gone", eventName: "x" });
    const res = await p.api.delete(`/workflows/${created.body.id}`);
    expect(res.status).toBe(204);
    expectError(await p.api.get(`/workflows/${created.body.id}`), 404);
    expectError(await p.api.delete(`/workflows/${created.body.id}`), 404);
  });

  it("a public key cannot use the workflow API", async () => {
    const p = await newProject();
    expectError(await p.publicApi.get("/workflows"), 403);
  });
});
