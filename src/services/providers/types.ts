/** What the queue consumer hands to a provider: one finished RFC 5322 message for one recipient. */
export interface OutgoingMessage {
  emailId: string;
  projectId: string;
  from: string;
  to: string;
  subject: string;
  raw: string;
}

export interface ProviderResult {
  providerMessageId: string;
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
  send(message: OutgoingMessage): Promise<ProviderResult>;
}
