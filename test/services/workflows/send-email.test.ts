import { eq } from "drizzle-orm";
import { afterEach, describe, expect, it, vi } from "vitest";
import { emails, projects, workflowExecutions } from "../../../src/db/schema";
import { newId } from "../../../src/lib/ids";
import { buildResumeSending } from "../../../src/services/projects";
import { CLAIM_LEASE_MS } from "../../../src/services/send/reasons";
import { sweepStuckEmails } from "../../../src/services/send/sweep";
import { sendWorkflowEmail, workflowSendId } from "../../../src/services/workflows/send-email";
import { BULK_QUEUE, callsPerAddress, campaignSetup, SEND_QUEUE } from "../../support/campaigns";
import type { CreatedWorkflow, Email, EmailList, Template } from "../../support/api";

afterEach(() => vi.restoreAllMocks());

/**
 * The SEND_EMAIL step's body (what the Workflows engine runs, and re-runs on a
 * retry) against the real D1 and the real queue consumers, with recording
 * queues and the fake SES: which queue the email travels on, and how often it
 * reaches the provider.
 */
async function stepSetup(overrides: Parameters<typeof campaignSetup>[0] = {}) {
  const s = await campaignSetup(overrides);
  const template = async (type: "MARKETING" | "TRANSACTIONAL") => {
    const res = await s.request<Template>("POST", "/templates", {
      name: `${type} news`,
      subject: `${type} for {{firstName ?? friend}}`,
      body: "<p>Hi {{firstName}}</p>",
      type,
      from: s.from,
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body.id as string;
  };
  const marketing = await template("MARKETING");
  const transactional = await template("TRANSACTIONAL");
  // A disabled workflow: nothing starts it; the executions below stand for running instances.
  const workflow = await s.request<CreatedWorkflow>("POST", "/workflows", {
    name: "steps",
    enabled: false,
    trigger: { type: "EVENT", eventName: "never" },
    steps: [
      { id: "news", type: "SEND_EMAIL", config: { templateId: marketing }, next: "receipt" },
      { id: "receipt", type: "SEND_EMAIL", config: { templateId: transactional } },
    ],
  });
  expect(workflow.status, JSON.stringify(workflow.body)).toBe(201);

  async function execution(email: string) {
    const [contact] = await s.addContacts([{ email, data: { firstName: "Ada" } }]);
    const id = newId();
    await s.db.insert(workflowExecutions).values({
      id,
      projectId: s.project.id,
      workflowId: workflow.body.id,
      workflowVersion: 1,
      contactId: contact.id,
      triggerKey: `test:${id}`,
      status: "RUNNING",
      history: [],
      startedAt: new Date(),
    });
    const run = (stepId: "news" | "receipt") =>
      sendWorkflowEmail(s.db, s.env, {
        projectId: s.project.id,
        executionId: id,
        stepId,
        contactId: contact.id,
        templateId: stepId === "news" ? marketing : transactional,
      });
    return { id, contact, run };
  }

  const emailRows = (executionId: string, stepId: string) =>
    s.db
      .select()
      .from(emails)
      .where(eq(emails.sendId, workflowSendId(executionId, stepId)));

  return { ...s, execution, emailRows };
}

describe("SEND_EMAIL steps: bulk and transactional mail travel separately", () => {
  it("a MARKETING step queues bulk mail on the bulk queue, a TRANSACTIONAL step on the send queue; both reach the provider once", async () => {
    const s = await stepSetup();
    const e = await s.execution("ada@example.org");

    const news = await e.run("news");
    expect(news.outcome).toBe("queued");
    const bulkMessages = s.bulk.take();
    expect(bulkMessages.map((m) => m.body)).toEqual([{ emailId: (news as { emailId: string }).emailId, projectId: s.project.id }]);
    expect(s.queue.messages).toHaveLength(0);
    const [newsRow] = await s.emailRows(e.id, "news");
    expect(newsRow).toMatchObject({ bulk: true, marketing: true, campaignId: null, status: "QUEUED" });

    const receipt = await e.run("receipt");
    expect(receipt.outcome).toBe("queued");
    expect(s.bulk.messages).toHaveLength(0);
    expect(s.queue.take().map((m) => m.body)).toEqual([{ emailId: (receipt as { emailId: string }).emailId, projectId: s.project.id }]);
    const [receiptRow] = await s.emailRows(e.id, "receipt");
    expect(receiptRow).toMatchObject({ bulk: false, marketing: false });

    // The bulk consumer sends a bulk email that belongs to no campaign.
    expect(await s.runBatch(BULK_QUEUE, bulkMessages)).toEqual([]);
    expect(await s.runBatch(SEND_QUEUE, [{ body: { emailId: receiptRow.id, projectId: s.project.id } }])).toEqual([]);
    expect(s.ses.calls.map((c) => c.to)).toEqual([["ada@example.org"], ["ada@example.org"]]);
    for (const id of [newsRow.id, receiptRow.id]) expect((await s.request<Email>("GET", `/emails/${id}`)).body.status).toBe("SENT");
  });

  it("the bulk DLQ marks a campaign-less bulk email FAILED; the sweep re-queues stuck bulk mail onto the bulk queue", async () => {
    const s = await stepSetup();
    const dead = await s.execution("dead@example.org");
    const stuck = await s.execution("stuck@example.org");
    const deadEmail = (await dead.run("news")) as { emailId: string };
    const stuckEmail = (await stuck.run("news")) as { emailId: string };
    s.bulk.take();

    expect(await s.runBatch(`${BULK_QUEUE}-dlq`, [{ body: { emailId: deadEmail.emailId, projectId: s.project.id } }])).toEqual([]);
    const failed = (await s.request<Email>("GET", `/emails/${deadEmail.emailId}`)).body;
    expect(failed.status).toBe("FAILED");
    expect(failed.error).toMatch(/^Gave up after/);

    // The enqueue was lost: the sweep finds the record QUEUED past the lease.
    await sweepStuckEmails(s.env, new Date(Date.now() + CLAIM_LEASE_MS + 60_000));
    expect(s.queue.messages).toHaveLength(0);
    const swept = s.bulk.take();
    expect(swept.map((m) => m.body)).toContainEqual({ emailId: stuckEmail.emailId, projectId: s.project.id });
    await s.runBatch(BULK_QUEUE, swept);
    expect(callsPerAddress(s.ses.calls)).toEqual(new Map([["stuck@example.org", 1]]));
  });

  it("bulk mail whose contact unsubscribed before it went is not sent: FAILED with the reason", async () => {
    const s = await stepSetup();
    const e = await s.execution("late@example.org");
    const news = (await e.run("news")) as { emailId: string };
    expect((await s.request("PATCH", `/contacts/${e.contact.id}`, { subscribed: false })).status).toBe(200);
    await s.runBatch(BULK_QUEUE, s.bulk.take());
    const row = (await s.request<Email>("GET", `/emails/${news.emailId}`)).body;
    expect(row.status).toBe("FAILED");
    expect(row.error).toMatch(/unsubscribed/);
    expect(s.ses.calls).toHaveLength(0);
  });
});

describe("SEND_EMAIL steps: a retried step sends once", () => {
  it("the step body run again after its email was written (and after it was sent) creates one email and one delivery", async () => {
    const s = await stepSetup();
    const e = await s.execution("retry@example.org");
    const first = await e.run("receipt");
    const second = await e.run("receipt");
    expect(second).toEqual(first);
    expect(await s.emailRows(e.id, "receipt")).toHaveLength(1);
    // Both runs queued it; the consumer's claim lets one through.
    const queued = s.queue.take();
    expect(queued).toHaveLength(2);
    expect(await s.runBatch(SEND_QUEUE, queued.slice(0, 1))).toEqual([]);
    expect(await s.runBatch(SEND_QUEUE, queued.slice(1))).toEqual([]);
    // A third run after it was sent queues nothing.
    expect(await e.run("receipt")).toEqual(first);
    expect(s.queue.messages).toHaveLength(0);
    expect(await s.emailRows(e.id, "receipt")).toHaveLength(1);
    expect(s.ses.calls).toHaveLength(1);
  });

  it("two overlapping runs of the step (a retry while the first attempt still runs) write one email", async () => {
    const s = await stepSetup();
    const e = await s.execution("overlap@example.org");
    const [a, b] = await Promise.all([e.run("news"), e.run("news")]);
    expect(a.outcome).toBe("queued");
    expect(b).toEqual(a);
    expect(await s.emailRows(e.id, "news")).toHaveLength(1);
    await s.pump();
    expect(s.ses.calls).toHaveLength(1);
    expect((await s.request<EmailList>("GET", "/emails?limit=10")).body.data.total).toBe(1);
  });
});

describe("SEND_EMAIL steps and the emails-per-day quota", () => {
  it("a step's email counts toward the quota; a step past it is skipped with the reason and writes nothing", async () => {
    const s = await stepSetup({ QUOTA_EMAILS_PER_DAY: "2" });
    expect((await s.request("POST", "/v1/send", { to: "t1@example.org", from: s.from, subject: "Hi", body: "<p>Hi</p>" })).status).toBe(200);
    const first = await s.execution("w1@example.org");
    expect((await first.run("receipt")).outcome).toBe("queued");
    const second = await s.execution("w2@example.org");
    const skipped = await second.run("receipt");
    expect(skipped).toEqual({ outcome: "skipped", reason: "This project has reached its quota of 2 emails per day" });
    expect(await s.emailRows(second.id, "receipt")).toHaveLength(0);
    // ... and /v1/send sees the step's email too.
    expect((await s.request("POST", "/v1/send", { to: "t2@example.org", from: s.from, subject: "Hi", body: "<p>Hi</p>" })).status).toBe(429);
  });
});

describe("SEND_EMAIL steps of a project whose sending is paused (reputation breaker)", () => {
  it("are skipped with the reason and write no email; after a resume they queue again", async () => {
    const s = await stepSetup();
    const e = await s.execution("paused@example.org");
    await s.db.update(projects).set({ sendingPausedAt: new Date(), sendingPausedReason: "Bounce rate 9.00% ..." }).where(eq(projects.id, s.project.id));
    const skipped = await e.run("receipt");
    expect(skipped).toEqual({ outcome: "skipped", reason: expect.stringContaining("SENDING_PAUSED") });
    expect(await s.emailRows(e.id, "receipt")).toHaveLength(0);
    expect(s.queue.messages).toHaveLength(0);

    await s.db.batch(buildResumeSending(s.db, s.project.id));
    expect((await e.run("receipt")).outcome).toBe("queued");
    expect(await s.emailRows(e.id, "receipt")).toHaveLength(1);
  });
});
