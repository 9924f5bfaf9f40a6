import { and, count, desc, eq, inArray, lt } from "drizzle-orm";
import { fromRow, runStatements, type Database } from "../db/client";
import { campaigns, contacts, segments, type Segment } from "../db/schema";
import type { ConfigInput } from "../lib/config";
import { ApiError } from "../lib/errors";
import { newId } from "../lib/ids";
import { decodeCursor, toPage } from "../lib/pagination";
import { compileCondition, ConditionSchema, type Condition } from "./conditions";
import type { CreateSegmentRequest, SegmentView, UpdateSegmentRequest } from "../schemas/segments";
import { toContactView } from "./contacts";
import { countGuard, runGuarded } from "../store/guards";
import { deleteSegment as deleteSegmentRow, insertSegment, type SegmentChange, updateSegment as updateSegmentRow } from "../store/segments";

/** A stored condition was validated on write; parsing again only fills defaults of older rows. */
export const storedCondition = (raw: unknown): Condition => ConditionSchema.parse(raw);

export function toSegmentView(segment: Segment, memberCount: number): SegmentView {
  return {
    id: segment.id,
    name: segment.name,
    description: segment.description ?? null,
    condition: segment.condition as Condition,
    memberCount,
    createdAt: segment.createdAt.toISOString(),
    updatedAt: segment.updatedAt.toISOString(),
  };
}

/** The project's contacts matching the condition (subscribed or not). */
export const segmentMembersWhere = (projectId: string, condition: Condition, now = Date.now()) =>
  and(eq(contacts.projectId, projectId), compileCondition(condition, now));

const memberCountQuery = (db: Database, segment: Segment, now: number) =>
  db
    .select({ n: count() })
    .from(contacts)
    .where(segmentMembersWhere(segment.projectId, storedCondition(segment.condition), now));

/** Live member counts of these segments, one COUNT each, in one D1 batch. */
export async function countMembers(db: Database, list: Segment[]): Promise<number[]> {
  if (list.length === 0) return [];
  const now = Date.now();
  const queries = list.map((s) => memberCountQuery(db, s, now));
  const results = (await db.batch(queries as [(typeof queries)[0], ...(typeof queries)[0][]])) as { n: number }[][];
  return results.map((rows) => rows[0]?.n ?? 0);
}

export async function viewOf(db: Database, segment: Segment): Promise<SegmentView> {
  const [memberCount] = await countMembers(db, [segment]);
  return toSegmentView(segment, memberCount);
}

/** Within QUOTA_SEGMENTS (checked in the insert's batch). */
export async function createSegment(db: Database, env: ConfigInput, projectId: string, input: CreateSegmentRequest): Promise<Segment> {
  const now = new Date();
  const insert = insertSegment(db.$client, {
    id: newId(),
    projectId,
    name: input.name,
    description: input.description ?? null,
    condition: input.condition,
    createdAt: now,
    updatedAt: now,
  });
  const [, rows] = await runGuarded(env, () => runStatements(db, [countGuard(db.$client, env, "QUOTA_SEGMENTS", projectId), insert]));
  return fromRow(segments, rows[0]);
}

export async function getSegment(db: Database, projectId: string, id: string): Promise<Segment> {
  const segment = await db.query.segments.findFirst({ where: and(eq(segments.id, id), eq(segments.projectId, projectId)) });
  if (!segment) throw ApiError.notFound("Segment");
  return segment;
}

export async function updateSegment(db: Database, projectId: string, id: string, input: UpdateSegmentRequest): Promise<Segment> {
  const set: SegmentChange = {};
  if (input.name !== undefined) set.name = input.name;
  if (input.description !== undefined) set.description = input.description;
  if (input.condition !== undefined) set.condition = input.condition;
  if (Object.keys(set).length === 0) return getSegment(db, projectId, id);
  set.updatedAt = new Date();
  const [segment] = await updateSegmentRow(db.$client, projectId, id, set);
  if (!segment) throw ApiError.notFound("Segment");
  return segment;
}

/** A segment that a DRAFT, SCHEDULED or SENDING campaign targets cannot be deleted. */
export async function deleteSegment(db: Database, projectId: string, id: string): Promise<void> {
  await getSegment(db, projectId, id);
  const [inUse] = await db
    .select({ id: campaigns.id, status: campaigns.status })
    .from(campaigns)
    .where(and(eq(campaigns.segmentId, id), eq(campaigns.projectId, projectId), inArray(campaigns.status, ["DRAFT", "SCHEDULED", "SENDING"])))
    .limit(1);
  if (inUse) {
    throw ApiError.invalidState(
      `Segment is used by campaign ${inUse.id} (${inUse.status})`,
      "Point the campaign at another audience, or delete it, before deleting the segment.",
    );
  }
  await deleteSegmentRow(db.$client, projectId, id);
}

export async function listSegments(db: Database, projectId: string, page: { limit: number; cursor?: string }) {
  const after = decodeCursor(page.cursor);
  const where = eq(segments.projectId, projectId);
  const [rows, [{ total }]] = await db.batch([
    db
      .select()
      .from(segments)
      .where(after ? and(where, lt(segments.id, after)) : where)
      .orderBy(desc(segments.id))
      .limit(page.limit + 1),
    db.select({ total: count() }).from(segments).where(where),
  ]);
  const result = toPage(rows, page.limit);
  const counts = await countMembers(db, result.items);
  return { ...result, items: result.items.map((s, i) => toSegmentView(s, counts[i])), total };
}

/** Live members, newest first, keyset on contact id; `total` is the member count. */
export async function listSegmentMembers(db: Database, projectId: string, id: string, page: { limit: number; cursor?: string }) {
  const segment = await getSegment(db, projectId, id);
  const after = decodeCursor(page.cursor);
  const now = Date.now();
  const where = segmentMembersWhere(projectId, storedCondition(segment.condition), now);
  const [rows, [{ total }]] = await db.batch([
    db
      .select()
      .from(contacts)
      .where(after ? and(where, lt(contacts.id, after)) : where)
      .orderBy(desc(contacts.id))
      .limit(page.limit + 1),
    db.select({ total: count() }).from(contacts).where(where),
  ]);
  const result = toPage(rows, page.limit);
  return { ...result, items: result.items.map(toContactView), total };
}
