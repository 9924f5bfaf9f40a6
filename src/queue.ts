import type { Env, SendEmailMessage } from "./env";
import { EMAIL_EVENTS_QUEUE, handleEmailServiceEvents } from "./services/feedback/email-service";
import { handleDeadLetters, handleSendBatch } from "./services/send/deliver";

/** Routes each queue's batches to its consumer (queue names from wrangler.toml). */
export async function handleQueue(batch: MessageBatch<unknown>, env: Env): Promise<void> {
  if (batch.queue === EMAIL_EVENTS_QUEUE) return handleEmailServiceEvents(batch, env);
  if (batch.queue.endsWith("-dlq")) return handleDeadLetters(batch as MessageBatch<SendEmailMessage>, env);
  return handleSendBatch(batch as MessageBatch<SendEmailMessage>, env);
}
