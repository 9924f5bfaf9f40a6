import { env } from "cloudflare:workers";
import { expect } from "vitest";
import { getDb } from "../../src/db/client";
import { capturedMessages } from "../../src/db/schema";
import { eq } from "drizzle-orm";
import { fakeDns } from "../fakes/dns";
import { newProject, type TestProject } from "./http";
import { verifiedDomain } from "./sending";
import type { CreatedWorkflow, Execution, ExecutionList, Template, TrackResponse } from "./api";
import { eventually } from "./wait";

/**
 * A project with a VERIFIED sending domain (verified through the API against
 * the fake DNS) and helpers for workflows. Outbound HTTP other than DNS goes to
 * `other` (webhook receivers).
 */
export async function automationProject(other?: (request: Request) => Promise<Response> | Response) {
  const dns = fakeDns(other);
  const project = await newProject("automations");
  const domain = await verifiedDomain(project, dns);
  const from = `hello@${domain}`;

  async function template(name: string, overrides: Record<string, unknown> = {}) {
    const res = await project.api.post<Template>("/templates", {
      name,
      subject: `${name} for {{firstName ?? friend}}`,
      body: `<p>${name}: hello {{firstName}}</p>`,
      type: "TRANSACTIONAL",
      from,
      ...overrides,
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body.id;
  }

  async function createWorkflow(body: Record<string, unknown>) {
    const res = await project.api.post<CreatedWorkflow>("/workflows", { enabled: true, ...body });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body;
  }

  async function track(email: string, event: string, data?: Record<string, unknown>) {
    const res = await project.api.post<TrackResponse>("/v1/track", { email, event, data });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.data;
  }

  async function executions(workflowId: string, query = "") {
    const res = await project.api.get<ExecutionList>(`/workflows/${workflowId}/executions${query}`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.data.items;
  }

  /** Waits until the workflow has exactly one execution matching `predicate`, and returns it. */
  async function executionWhere(workflowId: string, predicate: (e: Execution) => boolean, timeoutMs?: number) {
    return eventually(async () => {
      const items = await executions(workflowId);
      const match = items.filter(predicate);
      expect(match, JSON.stringify(items)).toHaveLength(1);
      return match[0];
    }, timeoutMs);
  }

  /** Subjects of the mail the (capture) provider got for this project, oldest first. */
  async function delivered() {
    const rows = await getDb(env.DB)
      .select({ subject: capturedMessages.subject, to: capturedMessages.toAddress })
      .from(capturedMessages)
      .where(eq(capturedMessages.projectId, project.id));
    return rows.map((r) => `${r.to}: ${r.subject}`).sort();
  }

  return { project, dns, domain, from, template, createWorkflow, track, executions, executionWhere, delivered };
}

export type AutomationProject = Awaited<ReturnType<typeof automationProject>> & { project: TestProject };
