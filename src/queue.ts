import type { Env, SendEmailMessage } from "./env";
import { handleDeadLetters, handleSendBatch } from "./services/send/deliver";

/** Routes each queue's batches to its consumer (queue names from wrangler.toml). */
export async function handleQueue(batch: MessageBatch<unknown>, env: Env): Promise<void> {
  if (batch.queue.endsWith("-dlq")) return handleDeadLetters(batch as MessageBatch<SendEmailMessage>, env);
  return handleSendBatch(batch as MessageBatch<SendEmailMessage>, env);
}
