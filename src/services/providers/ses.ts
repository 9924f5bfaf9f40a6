import { AwsClient } from "aws4fetch";
import type { Env } from "../../env";
import { utf8ToBase64 } from "../../lib/base64";
import { sesBaseUrl } from "../domains/ses";
import { ProviderError, type EmailProvider, type OutgoingMessage } from "./types";

/**
 * AWS SES v2 `SendEmail` with raw content (POST /v2/email/outbound-emails),
 * signed with SigV4 by aws4fetch. SES signs with the domain's DKIM key
 * (registered through BYODKIM when the domain was added).
 */
export class SesProvider implements EmailProvider {
  readonly name = "ses";
  private readonly client: AwsClient;
  private readonly url: string;

  constructor(private readonly env: Env) {
    if (!env.SES_ACCESS_KEY_ID || !env.SES_SECRET_ACCESS_KEY) {
      // Not a message problem: retried, and the deployment's logs say what to set.
      throw new ProviderError(
        "SES is not configured: set the SES_ACCESS_KEY_ID and SES_SECRET_ACCESS_KEY secrets (wrangler secret put)",
        true,
      );
    }
    this.client = new AwsClient({
      accessKeyId: env.SES_ACCESS_KEY_ID,
      secretAccessKey: env.SES_SECRET_ACCESS_KEY,
      region: env.SES_REGION || "us-east-1",
      service: "ses",
      retries: 0,
    });
    this.url = `${sesBaseUrl(env)}/v2/email/outbound-emails`;
  }

  async send(message: OutgoingMessage) {
    const payload = {
      FromEmailAddress: message.from,
      Destination: { ToAddresses: [message.to] },
      Content: { Raw: { Data: utf8ToBase64(message.raw) } },
      ...(this.env.SES_CONFIGURATION_SET ? { ConfigurationSetName: this.env.SES_CONFIGURATION_SET } : {}),
    };
    let response: Response;
    try {
      response = await this.client.fetch(this.url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(payload),
      });
    } catch (err) {
      throw new ProviderError(`SES unreachable: ${err instanceof Error ? err.message : String(err)}`, true);
    }
    const text = await response.text();
    let body: { MessageId?: string; message?: string; Message?: string } = {};
    try {
      body = JSON.parse(text);
    } catch {
      // non-JSON error pages are reported by status below
    }
    // SES accepted the message: never retry it, even if the body is odd.
    if (response.ok) return { providerMessageId: body.MessageId ?? "" };
    const errorType = response.headers.get("x-amzn-ErrorType")?.split(":")[0] ?? "";
    const reason = `SES ${response.status}${errorType ? ` ${errorType}` : ""}: ${body.message ?? body.Message ?? text.slice(0, 200)}`;
    const retryable = response.status === 429 || response.status >= 500 || errorType === "TooManyRequestsException";
    throw new ProviderError(reason, retryable, response.status);
  }
}
