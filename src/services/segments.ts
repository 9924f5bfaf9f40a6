import { and, count, desc, eq, inArray, lt } from "drizzle-orm";
import { fromRow, runStatements, type Database } from "../db/client";
import { campaigns, contacts, segments, type Segment } from "../db/schema";
import type { ConfigInput } from "../lib/config";
import { ApiError } from "../lib/errors";
import { newId } from "../lib/ids";
import { decodeCursor, toPage } from "../lib/pagination";
import { compileCondition, ConditionSchema, type Condition } from "./conditions";
import type { CreateSegmentRequest, SegmentMembersRequest, SegmentView, UpdateSegmentRequest } from "../schemas/segments";
import { toContactView } from "./contacts";
import { countGuard, quotaGuard, runGuarded } from "../store/guards";
import {
  addSegmentMembers,
  deleteSegment as deleteSegmentRow,
  existingAddresses,
  insertSegment,
  removeSegmentMembers,
  type SegmentChange,
  updateSegment as updateSegmentRow,
} from "../store/segments";
import { upsertContacts } from "../store/contacts";
import { WriteBatch } from "../store/batch";
import { contactWriteEvents } from "./webhooks/record";
import type { AfterCommit } from "../lib/after-commit";

/** Bytes a static segment's member counts in projects.stored_bytes (the segment_members_bytes_* triggers, migration 0038). */
const MEMBER_BYTES = 64;

/**
 * A static segment's stored condition: `segment equals <its id>`, its members. Every reader of a
 * segment's condition (member counts and lists, campaign audiences and their snapshot at start)
 * then walks the members with no special case; the API shows a static segment's condition as null.
 */
export const membershipCondition = (segmentId: string): Condition => ({
  logic: "AND",
  groups: [{ filters: [{ field: "segment", operator: "equals", value: segmentId }] }],
});

/** The `segment` filters of a condition, with their paths under `prefix`. */
function segmentFilters(condition: Condition, prefix: string): { path: string; id: string }[] {
  return condition.groups.flatMap((group, g) => [
    ...group.filters.flatMap((f, i) => (f.field === "segment" ? [{ path: `${prefix}.groups.${g}.filters.${i}.value`, id: String(f.value) }] : [])),
    ...(group.conditions ? segmentFilters(group.conditions, `${prefix}.groups.${g}.conditions`) : []),
  ]);
}

/** 422 naming the filter whose `segment` value is not a static segment of this project. */
async function checkSegmentFilters(db: Database, projectId: string, condition: Condition, prefix = "condition"): Promise<void> {
  const refs = segmentFilters(condition, prefix);
  if (refs.length === 0) return;
  const found = await db
    .select({ id: segments.id })
    .from(segments)
    .where(and(eq(segments.projectId, projectId), eq(segments.type, "STATIC"), inArray(segments.id, [...new Set(refs.map((r) => r.id))])));
  const known = new Set(found.map((r) => r.id));
  const bad = refs.filter((r) => !known.has(r.id));
  if (bad.length > 0)
    throw ApiError.validation(bad.map((r) => ({ field: r.path, message: "No static segment with this id in this project", code: "not_found" })));
}

/** A stored condition was validated on write; parsing again only fills defaults of older rows. */
export const storedCondition = (raw: unknown): Condition => ConditionSchema.parse(raw);

export function toSegmentView(segment: Segment, memberCount: number): SegmentView {
  return {
    id: segment.id,
    name: segment.name,
    description: segment.description ?? null,
    type: segment.type,
    condition: segment.type === "STATIC" ? null : (segment.condition as Condition),
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
  const id = newId();
  if (input.condition) await checkSegmentFilters(db, projectId, input.condition);
  const insert = insertSegment(db.$client, {
    id,
    projectId,
    name: input.name,
    description: input.description ?? null,
    type: input.type,
    condition: input.type === "STATIC" ? membershipCondition(id) : input.condition,
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
  if (input.condition !== undefined) {
    const current = await getSegment(db, projectId, id);
    if (current.type === "STATIC") {
      throw ApiError.validation([
        { field: "condition", message: "A STATIC segment has no condition: change its members with POST or DELETE /segments/{id}/members", code: "invalid" },
      ]);
    }
    await checkSegmentFilters(db, projectId, input.condition);
    set.condition = input.condition;
  }
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

async function staticSegment(db: Database, projectId: string, id: string): Promise<Segment> {
  const segment = await getSegment(db, projectId, id);
  if (segment.type !== "STATIC") {
    throw ApiError.invalidState(
      "Members can only be added to or removed from a STATIC segment",
      "A DYNAMIC segment's members are the contacts matching its condition.",
    );
  }
  return segment;
}

/**
 * Adds the contacts with these addresses to a static segment, in one batch: with `createMissing`, first
 * a contact (subscribed) for each address that has none (QUOTA_CONTACTS and the members' stored bytes
 * checked by the batch's guard), then the memberships, then which addresses have a contact.
 */
export async function addMembers(db: Database, env: ConfigInput, projectId: string, id: string, input: SegmentMembersRequest, afterCommit?: AfterCommit) {
  await staticSegment(db, projectId, id);
  const addresses = [...new Set(input.emails)];
  const d1 = db.$client;
  const now = new Date();
  const upsert = input.createMissing
    ? upsertContacts(
        d1,
        projectId,
        addresses.map((email) => ({ email })),
        { onExisting: "keep", subscribedByDefault: true, now },
      )
    : undefined;
  const guard = quotaGuard(
    d1,
    env,
    projectId,
    { contacts: input.createMissing ? addresses : undefined, storedBytesAtMost: addresses.length * MEMBER_BYTES + (upsert?.storedBytesAtMost() ?? 0) },
    now,
  );
  // contact.created webhook events for the contacts the batch creates (as POST /contacts would).
  const hooks = upsert
    ? contactWriteEvents(d1, { projectId, at: now, contacts: addresses.map((email, i) => ({ email, creates: true, newId: upsert.ids[i] })) })
    : { before: [], after: [] };
  const batch = new WriteBatch(d1);
  batch.add(guard, ...hooks.before, ...(upsert?.statements ?? []), ...hooks.after);
  const added = batch.add(addSegmentMembers(d1, projectId, id, addresses, now));
  const existing = batch.add(existingAddresses(d1, projectId, addresses));
  const result = await batch.run({ env, now, afterCommit });
  const known = new Set(result.rows(existing).map((r) => String(r.email)));
  return { added: result.rows(added).length, missing: addresses.filter((a) => !known.has(a)) };
}

/** Removes the contacts with these addresses from a static segment (the contacts stay). */
export async function removeMembers(db: Database, projectId: string, id: string, emails: string[]) {
  await staticSegment(db, projectId, id);
  const { results } = await removeSegmentMembers(db.$client, projectId, id, [...new Set(emails)]).all();
  return { removed: results.length };
}
