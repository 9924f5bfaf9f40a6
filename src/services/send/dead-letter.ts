import { sql } from "drizzle-orm";
import { emails } from "../../db/schema";
import type { Env } from "../../env";
import { ACK, type QueuedMessage, type Verdict } from "../../lib/queue-consumer";
import { settleDeadClaims, updateEmailsById } from "../../store/emails";
import { emailIdsOf } from "../../messages";
import { WriteBatch } from "../../store/batch";
import { OUTCOME_UNKNOWN_REASON } from "./reasons";

/**
 * Dead-letter consumer: a message that exhausted its retries marks its email
 * FAILED with how many attempts were made and the last reason (unless it is
 * done already: SENT mail is never touched). A claim whose provider call had
 * started is settled as an unknown outcome instead, as the sweep would, so the
 * provider's events can still reconcile it (docs/reliability.md). Every
 * message is acked.
 */
export async function settleDeadLetters(messages: readonly QueuedMessage<unknown>[], env: Env): Promise<Verdict[]> {
  const now = new Date();
  const ids = emailIdsOf(messages.map((m) => m.body));
  const batch = new WriteBatch(env.DB);
  batch.add(
    ...updateEmailsById(env.DB, ids, ["QUEUED"], {
      status: "FAILED",
      failedAt: now,
      updatedAt: now,
      error: sql`'Gave up after ' || ${emails.attempts} || ' attempts' || COALESCE(': ' || ${emails.error}, '')`,
    }),
    ...settleDeadClaims(env.DB, ids, now.getTime(), OUTCOME_UNKNOWN_REASON),
  );
  await batch.run();
  return messages.map(() => ACK);
}
