import type { Env, SendEmailMessage } from "./env";
import { EMAIL_EVENTS_QUEUE, handleEmailServiceEvents } from "./services/feedback/email-service";
import { handleDeadLetters, handleSendBatch } from "./services/send/deliver";
import type { WorkflowQueueMessage } from "./services/workflows/executions";
import { handleWorkflowBatch } from "./services/workflows/triggers";

/** The workflow queue (wrangler.toml): trigger and terminate messages. */
export const WORKFLOW_QUEUE_NAME = "edge-mail-workflows";

/** Routes each queue's batches to its consumer (queue names from wrangler.toml). */
export async function handleQueue(batch: MessageBatch<unknown>, env: Env): Promise<void> {
  if (batch.queue === EMAIL_EVENTS_QUEUE) return handleEmailServiceEvents(batch, env);
  if (batch.queue === WORKFLOW_QUEUE_NAME) return handleWorkflowBatch(batch as MessageBatch<WorkflowQueueMessage>, env);
  if (batch.queue.endsWith("-dlq")) return handleDeadLetters(batch as MessageBatch<SendEmailMessage>, env);
  return handleSendBatch(batch as MessageBatch<SendEmailMessage>, env);
}
