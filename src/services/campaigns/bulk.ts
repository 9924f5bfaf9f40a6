import type { AfterCommit } from "../../lib/after-commit";
import type { Env } from "../../env";
import { ACK, retryAfter, type QueuedMessage, type Verdict } from "../../lib/queue-consumer";
import { deliverBatch } from "../send/deliver";
import { settleDeadLetters } from "../send/dead-letter";
import { finalizeCampaigns, handleCampaignPage, type CampaignEmailMessage, type CampaignPageMessage } from "./audience";
import { handleCampaignResume } from "./pause";
import type { CampaignResumeMessage } from "../../messages";

export type { BulkMessage } from "../../messages";

const isPage = (body: unknown): body is CampaignPageMessage => (body as CampaignPageMessage | undefined)?.kind === "campaign-page";
const isResume = (body: unknown): body is CampaignResumeMessage => (body as CampaignResumeMessage | undefined)?.kind === "campaign-resume";

export const campaignIdsOf = (bodies: readonly unknown[]) => [
  ...new Set(bodies.map((body) => (body as Partial<CampaignEmailMessage> | undefined)?.campaignId).filter((id): id is string => typeof id === "string")),
];

/**
 * The bulk queue's consumer: audience pages, and campaign emails, which go
 * through the same send consumer as every email (claims, rate, retries) as
 * bulk mail, deferring back onto the bulk queue. Pages go first, one at a
 * time; then the batch's campaign emails as one delivery batch.
 */
export async function consumeBulk(messages: readonly QueuedMessage<unknown>[], env: Env, afterCommit: AfterCommit): Promise<Verdict[]> {
  const verdicts: Verdict[] = messages.map(() => ACK);
  const sends: { index: number; message: QueuedMessage<unknown> }[] = [];
  for (const [index, message] of messages.entries()) {
    const body = message.body;
    if (!isPage(body) && !isResume(body)) {
      sends.push({ index, message });
      continue;
    }
    try {
      await (isResume(body) ? handleCampaignResume(env, body) : handleCampaignPage(env, body, afterCommit));
    } catch (err) {
      console.error("campaign page failed; retrying", err);
      verdicts[index] = retryAfter(5);
    }
  }
  if (sends.length === 0) return verdicts;
  const bodies = sends.map((s) => s.message.body);
  // The claim also settles emails whose contact left the audience since their page was written (deliverBatch, bulk).
  const sent = await deliverBatch(
    sends.map((s) => s.message),
    env,
    afterCommit,
    { kind: "bulk", requeue: env.EMAIL_BULK_QUEUE },
  );
  for (const [i, s] of sends.entries()) verdicts[s.index] = sent[i];
  await finalizeCampaigns(env.DB, campaignIdsOf(bodies), afterCommit);
  return verdicts;
}

/** The bulk dead-letter queue: like the send queue's, then campaigns whose last emails just failed are finished. */
export async function settleBulkDeadLetters(messages: readonly QueuedMessage<unknown>[], env: Env, afterCommit: AfterCommit): Promise<Verdict[]> {
  const verdicts = await settleDeadLetters(messages, env);
  await finalizeCampaigns(env.DB, campaignIdsOf(messages.map((m) => m.body)), afterCommit);
  return verdicts;
}
