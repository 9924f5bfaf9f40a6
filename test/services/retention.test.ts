import { env } from "cloudflare:workers";
import { eq, inArray } from "drizzle-orm";
import { v7 as uuidv7 } from "uuid";
import { afterEach, describe, expect, it, vi } from "vitest";
import { getDb } from "../../src/db/client";
import { emailAttachments, emails, events, projectDailyUsage, projects } from "../../src/db/schema";
import { dropOldEmailHtml, pruneDailyUsage, pruneOldEvents, runRetention } from "../../src/services/retention";
import { insertOldEmail, insertSentEmail } from "../support/emails";
import { newProject } from "../support/http";
import { sendingSetup } from "../support/sending";
import type { Email } from "../support/api";

afterEach(() => {
  vi.restoreAllMocks();
});

const db = () => getDb(env.DB);
const DAY = 24 * 3600_000;
const attachment = (text: string) => ({ filename: "notes.txt", contentType: "text/plain", content: btoa(text) });

/** A send's attachment rows, and its objects in R2 (which expire by the attachments/ lifecycle rule, not with the rows). */
async function attachmentsOf(emailId: string) {
  const [email] = await db().select({ sendId: emails.sendId, projectId: emails.projectId }).from(emails).where(eq(emails.id, emailId));
  const rows = await db().select().from(emailAttachments).where(eq(emailAttachments.sendId, email.sendId));
  const objects = (await env.STORAGE.list({ prefix: `attachments/${email.projectId}/${email.sendId}/` })).objects;
  return { rows, objects };
}

const storedBytes = async (projectId: string) => (await db().select({ b: projects.storedBytes }).from(projects).where(eq(projects.id, projectId)))[0].b;

describe("retention (cron)", () => {
  it("deletes a send's attachments once every email of it is final, and only then", async () => {
    const s = await sendingSetup();
    const done = await s.send({ to: ["a@example.com", "b@example.com"], from: s.from, subject: "A", body: "<p>a</p>", attachments: [attachment("first")] });
    const waiting = await s.send({ to: "c@example.com", from: s.from, subject: "B", body: "<p>b</p>", attachments: [attachment("second")] });
    expect([done.status, waiting.status]).toEqual([200, 200]);
    const doneIds = done.body.data.emails.map((e) => e.email);
    const waitingId = waiting.body.data.emails[0].email;

    const queued = s.queue.take().map((m) => m.body);
    // One email of the first send delivered, the other not yet: nothing is deleted.
    await s.deliver(queued.filter((m) => m.emailId === doneIds[0]));
    await runRetention(s.env);
    expect((await attachmentsOf(doneIds[0])).rows).toHaveLength(1);

    await s.deliver(queued.filter((m) => m.emailId === doneIds[1]));
    expect((await db().select({ status: emails.status }).from(emails).where(inArray(emails.id, doneIds))).map((e) => e.status)).toEqual(["SENT", "SENT"]);
    const before = await storedBytes(s.project.id);
    const result = await runRetention(s.env);
    expect(result.attachments).toBe(1);
    const gone = await attachmentsOf(doneIds[0]);
    expect([gone.rows.length, gone.objects.length]).toEqual([0, 1]);
    // The other send is still QUEUED: its attachment stays.
    const kept = await attachmentsOf(waitingId);
    expect([kept.rows.length, kept.objects.length]).toEqual([1, 1]);
    // Attachments are counted in R2 (r2_usage), not in D1's stored bytes (`before` is read after the sends' HTML left D1 at SENT).
    expect(await storedBytes(s.project.id)).toBe(before);
  });

  it("drops the HTML of finished emails older than EMAIL_HTML_RETENTION_DAYS (default 30), keeping the record", async () => {
    const p = await newProject();
    const old = await insertOldEmail(p.id, 31);
    const stuck = await insertOldEmail(p.id, 31, { status: "QUEUED" });
    const recent = await insertOldEmail(p.id, 29);
    await runRetention(env);
    const rows = new Map(
      (
        await db()
          .select()
          .from(emails)
          .where(inArray(emails.id, [old, stuck, recent]))
      ).map((r) => [r.id, r]),
    );
    expect(rows.get(old)!.html).toBe("");
    expect(rows.get(old)!.status).toBe("SENT");
    expect(rows.get(old)!.subject).toBe("Old news");
    expect(rows.get(stuck)!.html).not.toBe("");
    expect(rows.get(recent)!.html).not.toBe("");
    // Still listed through the API, with its status.
    const view = await p.api.get<Email>(`/emails/${old}`);
    expect(view.status).toBe(200);
    expect(view.body.status).toBe("SENT");

    // The setting shortens it.
    await runRetention({ ...env, EMAIL_HTML_RETENTION_DAYS: "7" });
    expect((await db().select().from(emails).where(eq(emails.id, recent)))[0].html).toBe("");
  });

  it("works in bounded batches, oldest first", async () => {
    const p = await newProject();
    const ids = [await insertOldEmail(p.id, 400), await insertOldEmail(p.id, 300), await insertOldEmail(p.id, 200)];
    expect(await dropOldEmailHtml(db(), env, new Date(), 2)).toBe(2);
    const html = async () => new Map((await db().select().from(emails).where(inArray(emails.id, ids))).map((r) => [r.id, r.html]));
    const first = await html();
    expect([first.get(ids[0]), first.get(ids[1])]).toEqual(["", ""]);
    expect(first.get(ids[2])).not.toBe("");
    expect(await dropOldEmailHtml(db(), env, new Date(), 2)).toBeGreaterThanOrEqual(1);
    expect((await html()).get(ids[2])).toBe("");
  });

  it("prunes events older than EVENT_RETENTION_DAYS (default 365)", async () => {
    const p = await newProject();
    const email = await insertSentEmail(p);
    const at = (daysAgo: number) => {
      const t = Date.now() - daysAgo * DAY;
      return { id: uuidv7({ msecs: t }), projectId: p.id, contactId: email.contactId, name: "visited", data: {}, createdAt: new Date(t) };
    };
    const ancient = at(366);
    const lastYear = at(364);
    await db().insert(events).values([ancient, lastYear]);
    expect(await pruneOldEvents(db(), env)).toBeGreaterThanOrEqual(1);
    const left = (await db().select({ id: events.id }).from(events).where(eq(events.projectId, p.id))).map((e) => e.id);
    expect(left).toContain(lastYear.id);
    expect(left).not.toContain(ancient.id);
  });
});

describe("usage counters", () => {
  it("keep today's and yesterday's daily counts and drop older days", async () => {
    const p = await newProject();
    const now = new Date("2026-11-23T12:00:00Z");
    const today = Math.floor(now.getTime() / 86_400_000);
    const db = getDb(env.DB);
    await db.insert(projectDailyUsage).values([0, 1, 2, 30].map((ago) => ({ projectId: p.id, day: today - ago, events: 5, emails: 7 })));
    expect(await pruneDailyUsage(db, now)).toBeGreaterThanOrEqual(2);
    const left = await db.select({ day: projectDailyUsage.day }).from(projectDailyUsage).where(eq(projectDailyUsage.projectId, p.id));
    expect(left.map((r) => today - r.day).sort()).toEqual([0, 1]);
  });
});
