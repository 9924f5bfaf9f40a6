import type { Env, SendEmailMessage } from "./env";
import { EMAIL_EVENTS_QUEUE, handleEmailServiceEvents } from "./services/feedback/email-service";
import { getDb } from "./db/client";
import { campaignIdsOf, finalizeCampaigns, handleBulkBatch, type BulkMessage } from "./services/campaigns/audience";
import { handleDeadLetters, handleSendBatch } from "./services/send/deliver";
import type { WorkflowQueueMessage } from "./services/workflows/executions";
import { handleWorkflowBatch } from "./services/workflows/triggers";

/** The workflow queue (wrangler.toml): trigger and terminate messages. */
export const WORKFLOW_QUEUE_NAME = "edge-mail-workflows";

/** Queue names from wrangler.toml: bulk (campaign) mail has its own queue and DLQ. */
export const BULK_QUEUE = "edge-mail-bulk";

/** Routes each queue's batches to its consumer (queue names from wrangler.toml). */
export async function handleQueue(batch: MessageBatch<unknown>, env: Env): Promise<void> {
  if (batch.queue === EMAIL_EVENTS_QUEUE) return handleEmailServiceEvents(batch, env);
  if (batch.queue === WORKFLOW_QUEUE_NAME) return handleWorkflowBatch(batch as MessageBatch<WorkflowQueueMessage>, env);
  if (batch.queue === `${BULK_QUEUE}-dlq`) {
    await handleDeadLetters(batch as MessageBatch<SendEmailMessage>, env);
    return finalizeCampaigns(getDb(env.DB), campaignIdsOf(batch.messages));
  }
  if (batch.queue.endsWith("-dlq")) return handleDeadLetters(batch as MessageBatch<SendEmailMessage>, env);
  if (batch.queue === BULK_QUEUE) return handleBulkBatch(batch as MessageBatch<BulkMessage>, env);
  return handleSendBatch(batch as MessageBatch<SendEmailMessage>, env);
}
