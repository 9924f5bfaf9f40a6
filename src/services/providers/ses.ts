import type { Env } from "../../env";
import { utf8ToBase64 } from "../../lib/base64";
import { readConfig } from "../../lib/config";
import { sesApi, sesErrorMessage, sesErrorType, SES_NOT_CONFIGURED, type SesApi } from "./ses-client";
import { ProviderError, type EmailProvider, type OutgoingMessage } from "./types";

/**
 * AWS SES v2 `SendEmail` with raw content (POST /v2/email/outbound-emails),
 * signed with SigV4 by aws4fetch. SES signs with the domain's DKIM key
 * (registered through BYODKIM when the domain was added).
 */
export class SesProvider implements EmailProvider {
  readonly name = "ses";
  private readonly ses: SesApi;

  constructor(private readonly env: Env) {
    const ses = sesApi(env);
    // Not a message problem: retried, and each email record says what to set.
    if (!ses) throw new ProviderError(SES_NOT_CONFIGURED, true);
    this.ses = ses;
  }

  async send(message: OutgoingMessage) {
    const { SES_CONFIGURATION_SET: configurationSet, SES_TIMEOUT_MS: timeoutMs } = readConfig(this.env);
    const payload = {
      FromEmailAddress: message.from,
      Destination: { ToAddresses: [message.to] },
      // The MIME message is ASCII (every part and header is encoded), so btoa
      // takes it directly; that matters for 10 MB messages.
      Content: { Raw: { Data: /^[\x00-\x7f]*$/.test(message.raw) ? btoa(message.raw) : utf8ToBase64(message.raw) } },
      ...(configurationSet ? { ConfigurationSetName: configurationSet } : {}),
    };
    const controller = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    let response: Response;
    try {
      // Raced as well as aborted: the answer must come well inside the claim
      // lease whether or not the HTTP stack honours the signal.
      response = await Promise.race([
        this.ses.client.fetch(`${this.ses.baseUrl}/v2/email/outbound-emails`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify(payload),
          signal: controller.signal,
        }),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => {
            controller.abort();
            reject(new Error(`no answer within ${timeoutMs} ms`));
          }, timeoutMs);
        }),
      ]);
    } catch (err) {
      throw new ProviderError(`SES unreachable: ${err instanceof Error ? err.message : String(err)}`, true);
    } finally {
      if (timer !== undefined) clearTimeout(timer);
    }
    if (response.ok) {
      // SES accepted the message: never retry it, even if the body is odd.
      const body = (await response.json().catch(() => ({}))) as { MessageId?: string };
      return { providerMessageId: typeof body.MessageId === "string" ? body.MessageId.trim() || null : null };
    }
    const retryable = response.status === 429 || response.status >= 500 || sesErrorType(response) === "TooManyRequestsException";
    throw new ProviderError(await sesErrorMessage(response), retryable, response.status);
  }
}
