import { and, eq, sql } from "drizzle-orm";
import type { Database } from "../../db/client";
import { contacts, emails, events, segmentMembers } from "../../db/schema";
import type { ContactActivity } from "./evaluate";
import type { Condition } from "../../schemas/conditions";
import { compileCondition } from "./sql";
import { EMAIL_ACTIVITIES } from "../../schemas/conditions";

/** Most distinct event names read for one contact (a bound on the in-memory evaluation's input). */
const MAX_EVENT_NAMES = 1000;

/** Most static segments read for one contact. */
const MAX_SEGMENTS = 1000;

/** The latest time of each event name and each email activity of one contact, and its static segments, in one D1 batch. */
export async function loadContactActivity(db: Database, contactId: string): Promise<ContactActivity> {
  const [eventRows, [activityRow], segmentRows] = await db.batch([
    db
      .select({ name: events.name, at: sql<number>`max(${events.createdAt})` })
      .from(events)
      .where(eq(events.contactId, contactId))
      .groupBy(events.name)
      .limit(MAX_EVENT_NAMES),
    db
      .select({
        sent: sql<number | null>`max(${emails.sentAt})`,
        delivered: sql<number | null>`max(${emails.deliveredAt})`,
        opened: sql<number | null>`max(${emails.openedAt})`,
        clicked: sql<number | null>`max(${emails.clickedAt})`,
        bounced: sql<number | null>`max(${emails.bouncedAt})`,
        complained: sql<number | null>`max(${emails.complainedAt})`,
      })
      .from(emails)
      .where(eq(emails.contactId, contactId)),
    db.select({ id: segmentMembers.segmentId }).from(segmentMembers).where(eq(segmentMembers.contactId, contactId)).limit(MAX_SEGMENTS),
  ]);
  return {
    events: eventRows.map((e) => ({ name: e.name, createdAt: Number(e.at) })),
    emailActivity: EMAIL_ACTIVITIES.filter((a) => activityRow?.[a] != null).map((a) => ({ activity: a, at: Number(activityRow[a]) })),
    segments: segmentRows.map((r) => r.id),
  };
}

/** Whether one contact of the project matches, answered by D1 with the compiled condition. */
export async function contactMatches(db: Database, condition: Condition, projectId: string, contactId: string, now: Date | number = Date.now()) {
  const [row] = await db
    .select({ id: contacts.id })
    .from(contacts)
    .where(and(eq(contacts.projectId, projectId), eq(contacts.id, contactId), compileCondition(condition, now)))
    .limit(1);
  return row !== undefined;
}
