import { type Database, getDb, runBatch } from "../db/client";
import { controlDb, placeProject, type ShardId, shardDb } from "../db/shards";
import type { Env } from "../env";
import { newId } from "../lib/ids";
import { insertApiKeys, insertProject, insertProjectShard, revokeApiKeys, setProjectDisabled, setProjectSettings } from "../store/projects";
import { operatorResume } from "../store/reputation";
import { cancelProjectExecutions } from "../store/executions";
import { generateApiKey, type GeneratedKey } from "./api-keys";

/**
 * Project administration. These build queries without running them, so the
 * same writes run inside the Worker (db.batch) and from the `npm run project`
 * CLI (rendered to SQL and applied with `wrangler d1 execute`).
 */

const keyRow = (projectId: string, key: GeneratedKey, now: Date) => ({
  id: newId(),
  projectId,
  kind: key.kind,
  keyHash: key.hash,
  keyPrefix: key.prefix,
  createdAt: now,
});

/**
 * A new project on `shard` (default 0): `queries` for the control database (the project's
 * registry row, its keys and, off shard 0, its project_shards row), `shardQueries` for its data
 * shard (its data-side projects row; none on shard 0, which is the control database).
 */
export async function buildProjectCreation(db: Database, name: string, shard: ShardId = 0, shardD1: D1Database = db.$client) {
  const now = new Date();
  const id = newId();
  const secret = await generateApiKey("secret");
  const pub = await generateApiKey("public");
  return {
    project: { id, name, shard },
    secretKey: secret.key,
    publicKey: pub.key,
    queries: [
      insertProject(db.$client, { id, name, now }),
      insertApiKeys(db.$client, [keyRow(id, secret, now), keyRow(id, pub, now)]),
      ...(shard === 0 ? [] : [insertProjectShard(db.$client, id, shard, now)]),
    ],
    shardQueries: shard === 0 ? [] : [insertProject(shardD1, { id, name, now })],
  };
}

/** Revokes every active key of the project and issues one new key of each kind. */
export async function buildKeyRotation(db: Database, projectId: string) {
  const now = new Date();
  const secret = await generateApiKey("secret");
  const pub = await generateApiKey("public");
  return {
    secretKey: secret.key,
    publicKey: pub.key,
    queries: [revokeApiKeys(db.$client, projectId, now), insertApiKeys(db.$client, [keyRow(projectId, secret, now), keyRow(projectId, pub, now)])] as const,
  };
}

export function buildSetProjectDisabled(db: Database, projectId: string, disabled: boolean) {
  return setProjectDisabled(db.$client, projectId, disabled);
}

/**
 * With disabling: the project's running and waiting workflow executions
 * become CANCELLED; their instances stop at their next step.
 */
export function buildCancelProjectExecutions(db: Database, projectId: string) {
  return cancelProjectExecutions(db.$client, projectId);
}

/** Open and click tracking on or off for a project (on by default). */
export function buildSetProjectTracking(db: Database, projectId: string, enabled: boolean) {
  return setProjectSettings(db.$client, projectId, { trackingEnabled: enabled, trackingMode: enabled ? "ENABLED" : "DISABLED", updatedAt: new Date() });
}

/**
 * Creates a project with one secret and one public key; the keys are returned once and stored only as hashes.
 * `db` is the control database; `placement` the data shard and its D1 (default shard 0: the control database).
 * The shard's row first: a project the control database names always has its data-side row.
 */
export async function createProject(db: Database, name: string, placement?: { shard: ShardId; d1: D1Database }) {
  const creation = await buildProjectCreation(db, name, placement?.shard ?? 0, placement?.d1);
  if (placement) await runBatch(getDb(placement.d1), creation.shardQueries);
  await runBatch(db, creation.queries);
  return { id: creation.project.id, name, shard: creation.project.shard, secretKey: creation.secretKey, publicKey: creation.publicKey };
}

/** Creates a project on the least-filled data shard under SHARD_FILL_LIMIT_BYTES (src/db/shards.ts placeProject). */
export async function createPlacedProject(env: Env, name: string) {
  const shard = await placeProject(env);
  return createProject(getDb(controlDb(env)), name, { shard, d1: shardDb(env, shard) });
}

/**
 * The operator's resume of a project the reputation breaker paused
 * (`npm run project -- resume <id>`): sending works again with a fresh window
 * (the project's reputation counters are cleared). Not limited, unlike the
 * owner's POST /project/sending/resume.
 */
export function buildResumeSending(db: Database, projectId: string) {
  return operatorResume(db.$client, projectId);
}
