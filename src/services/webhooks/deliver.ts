import type { Env } from "../../env";
import { enqueueDeliveries, enqueueWebhookEvents } from "../../queues";

/**
 * Transitional: the old hand-over names, kept until their last callers use
 * src/queues.ts or their invocation's AfterCommit. Deleted with them.
 */

/** @deprecated enqueueDeliveries (src/queues.ts). */
export const queueDeliveries = enqueueDeliveries;

/** @deprecated the invocation's AfterCommit, or enqueueWebhookEvents (src/queues.ts). */
export function queueWebhookEvents(env: Env, projectId: string, eventIds: string[]) {
  return enqueueWebhookEvents(
    env,
    eventIds.map((id) => ({ id, projectId })),
  );
}

/** @deprecated the invocation's AfterCommit (a WriteBatch collects the events it recorded). */
export function queueRecordedEvents(env: Env, rows: readonly Record<string, unknown>[]) {
  return enqueueWebhookEvents(
    env,
    rows.flatMap((r) => (typeof r.id === "string" && typeof r.project_id === "string" ? [{ id: r.id, projectId: r.project_id }] : [])),
  );
}
