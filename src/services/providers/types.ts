/**
 * What the queue consumer hands to a provider: one message for one recipient,
 * both as the finished RFC 5322 text (`raw`: SES, capture) and as the parts it
 * was built from (`parts`: APIs that take a structured message, such as
 * Cloudflare Email Service). Both carry the same tracked HTML and headers.
 */
export interface OutgoingMessage {
  emailId: string;
  projectId: string;
  from: string;
  to: string;
  subject: string;
  raw: string;
  parts: MessageParts;
}

export interface MessageParts {
  fromName?: string;
  toName?: string;
  replyTo?: string;
  html: string;
  text: string;
  /** Custom headers and List-Unsubscribe(-Post); never From/To/Subject/Message-ID. */
  headers: Record<string, string>;
  /** Content is base64. */
  attachments: { filename: string; contentType: string; content: string }[];
}

export interface ProviderResult {
  /** The provider's id of the accepted message; null when it answered none (stored as NULL, so feedback never matches it). */
  providerMessageId: string | null;
}

/**
 * A provider failure. `retryable` (throttling, 5xx, network) means "try the
 * same email again later"; otherwise the provider rejected this message and
 * retrying cannot help.
 */
export class ProviderError extends Error {
  constructor(
    message: string,
    readonly retryable: boolean,
    readonly status?: number,
  ) {
    super(message);
    this.name = "ProviderError";
  }
}

export interface EmailProvider {
  readonly name: string;
  /**
   * Calls the consumer may have in flight at once (default PROVIDER_CONCURRENCY
   * in send/deliver.ts: a Worker's 6 simultaneous connections).
   */
  readonly maxConcurrency?: number;
  send(message: OutgoingMessage): Promise<ProviderResult>;
}
