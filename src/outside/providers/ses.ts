import type { Env } from "../../env";
import { utf8ToBase64 } from "../../lib/base64";
import { readConfig } from "../../lib/config";
import { withDeadline } from "../../lib/limited";
import { sesApi, sesErrorMessage, sesErrorType, SES_NOT_CONFIGURED, type SesApi } from "./ses-client";
import { ProviderError, providerCallTimeoutMs, type EmailProvider, type OutgoingMessage } from "./types";

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
    return (await this.prepare(message))();
  }

  /** Builds and signs the SendEmail request; the function it returns makes the call. */
  async prepare(message: OutgoingMessage): Promise<() => Promise<{ providerMessageId: string | null }>> {
    const { SES_CONFIGURATION_SET: configurationSet, SES_TIMEOUT_MS: configured } = readConfig(this.env);
    const timeoutMs = providerCallTimeoutMs(configured);
    const payload = {
      FromEmailAddress: message.from,
      Destination: { ToAddresses: [message.to] },
      // The MIME message is ASCII (every part and header is encoded), so btoa
      // takes it directly; that matters for 10 MB messages.
      Content: { Raw: { Data: /^[\x00-\x7f]*$/.test(message.raw) ? btoa(message.raw) : utf8ToBase64(message.raw) } },
      ...(configurationSet ? { ConfigurationSetName: configurationSet } : {}),
      // Carried into SES's event publishing (mail.tags): an email whose call had no answer is found by them (reconciliation).
      EmailTags: emailTags(message),
    };
    const controller = new AbortController();
    const signed = await this.ses.client.sign(`${this.ses.baseUrl}/v2/email/outbound-emails`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(payload),
      signal: controller.signal,
    });
    return () => this.call(signed, controller, timeoutMs);
  }

  private async call(signed: Request, controller: AbortController, timeoutMs: number) {
    let response: Response;
    try {
      // Raced as well as aborted: the answer must come well inside the claim
      // lease whether or not the HTTP stack honours the signal.
      response = await withDeadline(fetch(signed), timeoutMs, () => {
        controller.abort();
        return new Error(`no answer within ${timeoutMs} ms`);
      });
    } catch (err) {
      // No answer: a timeout, or a connection that failed. workerd reports a refused connection and one lost
      // after the request was written alike ("Network connection lost."), so neither may be retried: SES may
      // have the message (docs/reliability.md).
      throw ProviderError.unknown(`SES gave no answer: ${err instanceof Error ? err.message : String(err)}`);
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

/** Message tag names: the email and its project, as SES event publishing hands them back in `mail.tags`. */
export const EMAIL_TAG = "em_email";
export const PROJECT_TAG = "em_project";
/** What SES allows in a tag's name and value. */
const TAG_VALUE = /^[A-Za-z0-9_-]{1,256}$/;

/** The SendEmail EmailTags of a message (ids are UUIDs; a value SES would refuse is left out rather than failing the send). */
function emailTags(message: OutgoingMessage): { Name: string; Value: string }[] {
  return [
    { Name: EMAIL_TAG, Value: message.emailId },
    { Name: PROJECT_TAG, Value: message.projectId },
  ].filter((tag) => TAG_VALUE.test(tag.Value));
}
