import { and, eq, isNull } from "drizzle-orm";
import { getDb } from "../db/client";
import { apiKeys, projects, projectShards } from "../db/schema";

/**
 * A project and its API keys (projects, api_keys). Statements are built, not
 * run, so the same writes run in the Worker (one batch) and from the
 * `npm run project` CLI (rendered to SQL for `wrangler d1 execute`).
 * The sending pause and its counters are in reputation.ts.
 */

export interface NewApiKey {
  id: string;
  projectId: string;
  kind: "secret" | "public";
  keyHash: string;
  keyPrefix: string;
  createdAt: Date;
}

export function insertProject(d1: D1Database, project: { id: string; name: string; now: Date }) {
  return getDb(d1).insert(projects).values({ id: project.id, name: project.name, createdAt: project.now, updatedAt: project.now });
}

/** A project placed off shard 0 (control database; src/db/shards.ts). */
export function insertProjectShard(d1: D1Database, projectId: string, shard: number, now: Date) {
  return getDb(d1).insert(projectShards).values({ projectId, shard, createdAt: now });
}

/** Only hashes of the keys are stored. */
export function insertApiKeys(d1: D1Database, keys: NewApiKey[]) {
  return getDb(d1).insert(apiKeys).values(keys);
}

/** Revokes every active key of the project. */
export function revokeApiKeys(d1: D1Database, projectId: string, now: Date) {
  return getDb(d1)
    .update(apiKeys)
    .set({ revokedAt: now })
    .where(and(eq(apiKeys.projectId, projectId), isNull(apiKeys.revokedAt)));
}

export function setProjectDisabled(d1: D1Database, projectId: string, disabled: boolean, now = new Date()) {
  return getDb(d1).update(projects).set({ disabled, updatedAt: now }).where(eq(projects.id, projectId));
}

/** The settings an owner (PATCH /project) or the operator (tracking on/off) changes: the fields given. */
export function setProjectSettings(
  d1: D1Database,
  projectId: string,
  set: Pick<
    typeof projects.$inferInsert,
    | "trackingEnabled"
    | "trackingMode"
    | "doubleOptIn"
    | "doubleOptInTemplateId"
    | "defaultFromEmail"
    | "defaultFromName"
    | "trackReplies"
    | "unsubscribeFooter"
    | "updatedAt"
  >,
) {
  return getDb(d1).update(projects).set(set).where(eq(projects.id, projectId));
}

/**
 * The control row's copy of the sending pause (the API key lookup reads it): for a project on
 * another shard than 0, written after its shard's row (the authoritative one) changed.
 */
export function mirrorSendingPause(d1: D1Database, projectId: string, pausedAt: Date | null, reason: string | null, now = new Date()) {
  return getDb(d1).update(projects).set({ sendingPausedAt: pausedAt, sendingPausedReason: reason, updatedAt: now }).where(eq(projects.id, projectId));
}

/** The module's fixed SQL, by name (none: drizzle builds its statements). */
export const FIXED_SQL = {};
