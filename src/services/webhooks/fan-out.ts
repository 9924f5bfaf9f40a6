import type { Env } from "../../env";
import { readConfig } from "../../lib/config";
import { newId } from "../../lib/ids";
import { enqueueDeliveries } from "../../queues";
import { WriteBatch } from "../../store/batch";
import { attemptInputs, fanOutInputs, insertDeliveries, type NewDeliveryMode } from "../../store/webhooks/deliveries";
import { markEventsFannedOut } from "../../store/webhooks/events";
import { CLAIM_MS, leaseAttempts, type Claimed } from "./attempts";
import { groupBy } from "./lanes";

/** First attempts a fan-out makes itself (the rest are queued): the queue's max_batch_size, inside the subrequest limit. */
const INLINE_ATTEMPTS = 100;
/** Deliveries per INSERT: ~110 bytes per row as JSON, well inside D1's statement size. */
const INSERT_ROWS = 500;

const subscribes = (endpoint: { events: string[] | null }, type: string) => !endpoint.events?.length || endpoint.events.includes(type);

/**
 * Fan-out: one delivery per recorded event and enabled, subscribed endpoint (a
 * unique (endpoint, event) pair, so a redelivered message makes none twice).
 * Per project, past WEBHOOK_PENDING_PER_PROJECT PENDING deliveries a new one
 * is FAILED at once with the reason; of the first INLINE_ATTEMPTS, those the
 * per-minute cap allows are claimed as they are created and returned for the
 * caller to attempt, the others wait for the drain; the rest are queued. The
 * pending count is read before the inserts, so concurrent fan-outs may pass
 * the cap by at most their batches.
 */
export async function fanOut(env: Env, eventIds: string[]): Promise<Claimed> {
  const config = readConfig(env);
  const reads = new WriteBatch(env.DB);
  const inputs = fanOutInputs(env.DB, eventIds);
  const eventsPart = reads.add(inputs.events);
  const endpointsPart = reads.add(inputs.endpoints);
  const pendingPart = reads.add(inputs.pending);
  const read = await reads.run();
  const events = read.rows(eventsPart) as { id: string; project_id: string; type: string }[];
  const targets = (read.rows(endpointsPart) as { id: string; project_id: string; events: string | null }[]).map((e) => ({
    id: e.id,
    projectId: e.project_id,
    events: JSON.parse(e.events ?? "[]") as string[] | null,
  }));
  const pendingOf = new Map((read.rows(pendingPart) as { project_id: string; pending: number }[]).map((r) => [r.project_id, r.pending]));

  const rows = events.flatMap((event) =>
    targets
      .filter((t) => t.projectId === event.project_id && subscribes(t, event.type))
      .map((t) => ({ id: newId(), projectId: event.project_id, webhookId: t.id, eventId: event.id, type: event.type, mode: "queued" as NewDeliveryMode })),
  );
  const now = new Date();
  let inlineLeft = INLINE_ATTEMPTS;
  await Promise.all(
    [...groupBy(rows, (r) => r.projectId)].map(async ([projectId, list]) => {
      let room = Math.max(0, config.WEBHOOK_PENDING_PER_PROJECT - (pendingOf.get(projectId) ?? 0));
      const accepted = [];
      for (const r of list) {
        if (room > 0) {
          room--;
          accepted.push(r);
        } else r.mode = "refused";
      }
      const inline = accepted.slice(0, Math.max(0, inlineLeft));
      inlineLeft -= inline.length;
      const granted = await leaseAttempts(env, projectId, inline.length, now.getTime());
      inline.forEach((r, i) => {
        r.mode = i < granted ? "claimed" : "parked";
      });
    }),
  );

  const refusal = `Not sent: the project had ${config.WEBHOOK_PENDING_PER_PROJECT} deliveries pending (WEBHOOK_PENDING_PER_PROJECT)`;
  const claimUntil = new Date(now.getTime() + CLAIM_MS);
  const writes = new WriteBatch(env.DB);
  writes.add(markEventsFannedOut(env.DB, eventIds));
  const inserts = [];
  for (let i = 0; i < rows.length; i += INSERT_ROWS) inserts.push(insertDeliveries(env.DB, rows.slice(i, i + INSERT_ROWS), now, claimUntil, refusal));
  const createdPart = writes.add(...inserts);
  // What the claimed ones' calls need, read after their inserts.
  const attempt = attemptInputs(
    env.DB,
    rows.filter((r) => r.mode === "claimed").map((r) => r.id),
  );
  const payloadsPart = writes.add(attempt.payloads);
  const endpointRowsPart = writes.add(attempt.endpoints);
  const written = await writes.run();

  const created = written.rows(createdPart);
  const modeOf = new Map(rows.map((r) => [r.id, r.mode]));
  await enqueueDeliveries(
    env,
    created.filter((d) => modeOf.get(d.id as string) === "queued").map((d) => ({ deliveryId: d.id as string, projectId: d.project_id as string, attempt: 1 })),
  );
  return {
    rows: created.filter((d) => modeOf.get(d.id as string) === "claimed"),
    payloads: written.rows(payloadsPart),
    endpoints: written.rows(endpointRowsPart),
  };
}
