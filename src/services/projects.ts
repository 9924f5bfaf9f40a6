import { and, eq, inArray, isNull } from "drizzle-orm";
import type { Database } from "../db/client";
import { apiKeys, projectReputation, projects, workflowExecutions, workflows } from "../db/schema";
import { newId } from "../lib/ids";
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

export async function buildProjectCreation(db: Database, name: string) {
  const now = new Date();
  const id = newId();
  const secret = await generateApiKey("secret");
  const pub = await generateApiKey("public");
  return {
    project: { id, name },
    secretKey: secret.key,
    publicKey: pub.key,
    queries: [
      db.insert(projects).values({ id, name, createdAt: now, updatedAt: now }),
      db.insert(apiKeys).values([keyRow(id, secret, now), keyRow(id, pub, now)]),
    ] as const,
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
    queries: [
      db
        .update(apiKeys)
        .set({ revokedAt: now })
        .where(and(eq(apiKeys.projectId, projectId), isNull(apiKeys.revokedAt))),
      db.insert(apiKeys).values([keyRow(projectId, secret, now), keyRow(projectId, pub, now)]),
    ] as const,
  };
}

export function buildSetProjectDisabled(db: Database, projectId: string, disabled: boolean) {
  return db.update(projects).set({ disabled, updatedAt: new Date() }).where(eq(projects.id, projectId));
}

/**
 * With disabling: the project's running and waiting workflow executions
 * become CANCELLED (by workflow, on the workflow/status index). Their
 * instances stop at their next step, which checks the execution first.
 */
export function buildCancelProjectExecutions(db: Database, projectId: string) {
  const now = new Date();
  return db
    .update(workflowExecutions)
    .set({ status: "CANCELLED", finishedAt: now, waitingEvent: null, resumeAt: null, error: "The project is disabled", updatedAt: now })
    .where(
      and(
        inArray(workflowExecutions.workflowId, db.select({ id: workflows.id }).from(workflows).where(eq(workflows.projectId, projectId))),
        inArray(workflowExecutions.status, ["RUNNING", "WAITING"]),
      ),
    );
}

/** Open and click tracking on or off for a project (on by default). */
export function buildSetProjectTracking(db: Database, projectId: string, enabled: boolean) {
  return db.update(projects).set({ trackingEnabled: enabled, updatedAt: new Date() }).where(eq(projects.id, projectId));
}

/** Creates a project with one secret and one public key; the keys are returned once and stored only as hashes. */
export async function createProject(db: Database, name: string) {
  const creation = await buildProjectCreation(db, name);
  await db.batch(creation.queries);
  return { id: creation.project.id, name, secretKey: creation.secretKey, publicKey: creation.publicKey };
}

/**
 * The operator's resume of a project the reputation breaker paused
 * (`npm run project -- resume <id>`): sending works again with a fresh window
 * (the project's reputation counters are cleared). Not limited, unlike the
 * owner's POST /project/sending/resume.
 */
export function buildResumeSending(db: Database, projectId: string) {
  return [
    db.update(projects).set({ sendingPausedAt: null, sendingPausedReason: null, updatedAt: new Date() }).where(eq(projects.id, projectId)),
    db.delete(projectReputation).where(eq(projectReputation.projectId, projectId)),
  ] as const;
}
