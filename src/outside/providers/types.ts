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
 * A provider failure, one of three (docs/reliability.md):
 * - refused (`retryable` false): a definite answer for this message (4xx other than throttling); retrying cannot help;
 * - retryable (`retryable` true): a definite "not now" (429, 5xx, throttling, a deployment problem): the same email again later;
 * - outcome unknown (`outcomeUnknown` true): the request may have reached the provider (a timeout after it was
 *   sent, a connection lost); the call is never made again, the email is reconciled from the provider's events.
 */
export class ProviderError extends Error {
  readonly outcomeUnknown: boolean;
  constructor(
    message: string,
    readonly retryable: boolean,
    readonly status?: number,
    options: { outcomeUnknown?: boolean } = {},
  ) {
    super(message);
    this.name = "ProviderError";
    this.outcomeUnknown = options.outcomeUnknown === true;
  }

  /** A call whose outcome cannot be known: never retried. */
  static unknown(message: string): ProviderError {
    return new ProviderError(message, false, undefined, { outcomeUnknown: true });
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
  /**
   * Optional: everything before the call (building and signing the request), so the call itself is all
   * that is left once the consumer has marked it as started (keeps the window in which a crash leaves a
   * call marked but not made as short as possible). Without it the consumer calls send().
   */
  prepare?(message: OutgoingMessage): Promise<() => Promise<ProviderResult>>;
}

/**
 * The longest a provider call may take, whatever SES_TIMEOUT_MS says: a call must end (or be given up as
 * unknown) well inside the claim lease (CLAIM_LEASE_MS, send/reasons.ts), so a live consumer always
 * records its outcome before the sweep could settle the claim.
 */
export const MAX_PROVIDER_CALL_MS = 20_000;
export const providerCallTimeoutMs = (configured: number) => Math.min(configured, MAX_PROVIDER_CALL_MS);
