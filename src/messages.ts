/**
 * Every queue of the Worker: its name (as in wrangler.toml; a batch says which
 * queue it came from) and the body of its messages. Messages carry ids, not
 * payloads, and redelivery is harmless (each consumer claims or keys its work).
 */

/** Transactional mail: one message per email record. */
export const SEND_QUEUE = "edge-mail-send";
/** Bulk mail (campaigns, MARKETING workflow steps) has its own queue and DLQ, so transactional mail never waits behind it. */
export const BULK_QUEUE = "edge-mail-bulk";
/** Workflow triggers and terminations. */
export const WORKFLOW_QUEUE_NAME = "edge-mail-workflows";
/** Cloudflare Email Service delivery events (a Queues event subscription). */
export const EMAIL_EVENTS_QUEUE = "edge-mail-email-events";
/** Contact import chunks (byte ranges of the uploaded CSV in R2). */
export const IMPORT_QUEUE = "edge-mail-imports";
/** Event webhooks: fan-out and delivery attempts (src/services/webhooks/consumer.ts). */
export const WEBHOOK_QUEUE_NAME = "edge-mail-webhooks";
/** Received mail to parse and link (src/services/inbound/consume.ts); the email() handler produces it. */
export const INBOUND_QUEUE_NAME = "edge-mail-inbound";
/** The dead-letter queue of a queue. */
export const deadLetterQueue = (name: string) => `${name}-dlq`;

/**
 * The data shard of the message's project (src/db/shards.ts), set by every producer from the
 * env it runs with; the consumer runs the message on it without a lookup. A message without
 * one (sent before shards existed) is shard 0.
 */
export interface OnShard {
  shard?: number;
}

/** A unit of send work: one email record (the record is claimed first). */
export interface SendEmailMessage extends OnShard {
  emailId: string;
  projectId: string;
}

/** The email ids named by well-formed send message bodies. */
export const emailIdsOf = (bodies: readonly unknown[]) =>
  bodies.map((body) => (body as { emailId?: unknown } | undefined)?.emailId).filter((id): id is string => typeof id === "string");

/** A page of a campaign's audience to turn into email records; `after` is the last contact id already walked. */
export interface CampaignPageMessage extends OnShard {
  kind: "campaign-page";
  campaignId: string;
  projectId: string;
  after: string | null;
}

/** A resumed campaign's emails still QUEUED to queue again, a page at a time; `after` is the last email id already queued. */
export interface CampaignResumeMessage extends OnShard {
  kind: "campaign-resume";
  campaignId: string;
  projectId: string;
  after: string | null;
}

/** A campaign email to send (bulk mail). */
export interface CampaignEmailMessage extends SendEmailMessage {
  campaignId: string;
}

/** What the bulk queue carries: audience pages, campaign emails and MARKETING workflow emails. */
export type BulkMessage = CampaignPageMessage | CampaignResumeMessage | CampaignEmailMessage | SendEmailMessage;

/** A unit of work on the workflow queue. */
export type WorkflowQueueMessage = (
  | {
      kind: "trigger";
      /** The outbox row it came from (a CONTACT_SUBSCRIBED trigger's identity). */
      outboxId: number;
      projectId: string;
      contactId: string;
      type: "EVENT" | "CONTACT_CREATED" | "CONTACT_SUBSCRIBED";
      eventName: string | null;
      eventId: string | null;
    }
  | { kind: "terminate"; executionIds: string[] }
) &
  OnShard;

/** What an instance of the workflow class is started with; its id is the execution id. */
export interface ExecutionParams extends OnShard {
  executionId: string;
  projectId: string;
  workflowId: string;
  /** The definition version this execution runs, whatever edits come later. */
  version: number;
  contactId: string;
  eventId: string | null;
}

/** What a run of the project move workflow (src/entrypoints/project-move.ts, `npm run project -- move`) is started with. */
export interface MoveParams {
  projectId: string;
  /** The data shard the project goes to. */
  to: number;
}

/** A chunk of a contact import: its rows numbered fromRow..toRow, a byte range of the file (contact_import_ranges; claimed in its batch). */
export interface ImportChunkMessage extends OnShard {
  importId: string;
  projectId: string;
  fromRow: number;
  toRow: number;
}
/** Event webhooks' queue: fan out a recorded event, or one attempt of one delivery (src/services/webhooks/consumer.ts). */
export type WebhookQueueMessage = (
  | { kind: "event"; eventId: string; projectId: string }
  | { kind: "delivery"; deliveryId: string; projectId: string; attempt: number }
) &
  OnShard;

/** A received message to parse and link: its inbound_messages row (RECEIVED), the raw message in R2. */
export interface InboundQueueMessage extends OnShard {
  inboundId: string;
  projectId: string;
}
