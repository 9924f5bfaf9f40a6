import { sql } from "drizzle-orm";
import { getDb } from "../../db/client";
import { emails } from "../../db/schema";
import type { Env } from "../../env";
import { ACK, type QueuedMessage, type Verdict } from "../../lib/queue-consumer";
import { emailIdsOf, updateEmailsById } from "./records";

/**
 * Dead-letter consumer: a message that exhausted its retries marks its email
 * FAILED with how many attempts were made and the last reason (unless it is
 * done already: SENT mail is never touched). Every message is acked.
 */
export async function settleDeadLetters(messages: readonly QueuedMessage<unknown>[], env: Env): Promise<Verdict[]> {
  const db = getDb(env.DB);
  const now = new Date();
  await updateEmailsById(db, emailIdsOf(messages.map((m) => m.body)), ["QUEUED", "SENDING"], {
    status: "FAILED",
    failedAt: now,
    updatedAt: now,
    error: sql`'Gave up after ' || ${emails.attempts} || ' attempts' || COALESCE(': ' || ${emails.error}, '')`,
  });
  return messages.map(() => ACK);
}
