import type { Env } from "../../env";
import { base64ToBytes } from "../../lib/base64";
import { readConfig } from "../../lib/config";
import { withDeadline } from "../../lib/limited";
import { ProviderError, providerCallTimeoutMs, type EmailProvider, type OutgoingMessage } from "./types";

/**
 * Cloudflare Email Service through the Worker's `send_email` binding
 * (`[[send_email]] name = "EMAIL"` in wrangler.toml). No credentials: the
 * binding is the authorisation. The structured form of `send()` is used (the
 * one Cloudflare recommends): Cloudflare builds the MIME, sets Message-ID and
 * Date, and signs with the sending domain's DKIM key (selector `cf-bounce`).
 */
export class CloudflareEmailProvider implements EmailProvider {
  readonly name = "cloudflare";
  private readonly binding: SendEmail;

  constructor(private readonly env: Env) {
    // A deployment problem, not a message problem: retried, and each email record says what to add.
    if (!env.EMAIL) throw new ProviderError(CLOUDFLARE_NOT_CONFIGURED, true);
    this.binding = env.EMAIL;
  }

  async send(message: OutgoingMessage) {
    const { parts } = message;
    let result: EmailSendResult;
    try {
      // Bounded like an SES call, so the claim is settled inside its lease; no answer in time is an unknown outcome.
      const timeoutMs = providerCallTimeoutMs(readConfig(this.env).SES_TIMEOUT_MS);
      result = await withDeadline(
        this.binding.send({
          from: parts.fromName ? { email: message.from, name: parts.fromName } : message.from,
          to: parts.toName ? { email: message.to, name: parts.toName } : message.to,
          subject: message.subject,
          html: parts.html,
          text: parts.text,
          ...(parts.replyTo ? { replyTo: parts.replyTo } : {}),
          ...(Object.keys(parts.headers).length > 0 ? { headers: parts.headers } : {}),
          ...(parts.attachments.length > 0
            ? {
                // Bytes, not a string: the service reads a string as either base64 or raw text depending on the release.
                attachments: parts.attachments.map((a) => ({
                  disposition: "attachment" as const,
                  filename: a.filename,
                  type: a.contentType,
                  content: base64ToBytes(a.content),
                })),
              }
            : {}),
        }),
        timeoutMs,
        () => ProviderError.unknown(`Cloudflare Email Service gave no answer within ${timeoutMs} ms`),
      );
    } catch (err) {
      throw err instanceof ProviderError ? err : classifyEmailServiceError(err);
    }
    // Accepted: never retried from here on, even if the answer lacks an id.
    return { providerMessageId: typeof result?.messageId === "string" ? normalizeMessageId(result.messageId) || null : null };
  }
}

/**
 * send() answers with a Message-ID such as "<id@domain>"; delivery events may
 * carry the id without brackets. Stored and matched without them.
 */
export const normalizeMessageId = (id: string): string => id.trim().replace(/^<(.*)>$/, "$1");

export const CLOUDFLARE_NOT_CONFIGURED = 'EMAIL_PROVIDER=cloudflare needs a send_email binding named EMAIL ([[send_email]] name = "EMAIL" in wrangler.toml)';

/**
 * Error codes the binding throws (`err.code`) that mean "try again later":
 * throttling, the daily quota, and the service's own failures. Every other
 * code is a rejection of this message (unverified sender, recipient not
 * allowed or suppressed, invalid header, too large, delivery refused) and
 * retrying the same message cannot help.
 * https://developers.cloudflare.com/email-service/api/send-emails/workers-api/#error-codes
 */
const RETRYABLE_CODES = new Set(["E_RATE_LIMIT_EXCEEDED", "E_DAILY_LIMIT_EXCEEDED", "E_INTERNAL_SERVER_ERROR"]);

export function classifyEmailServiceError(err: unknown): ProviderError {
  const code = typeof (err as { code?: unknown })?.code === "string" ? (err as { code: string }).code : undefined;
  const text = (err instanceof Error ? err.message : String(err)).slice(0, 500);
  if (code) {
    return new ProviderError(`Cloudflare Email Service: ${code}: ${text}`, RETRYABLE_CODES.has(code));
  }
  // Without a code: `wrangler dev`'s local simulation refuses senders/recipients
  // outside the binding's allow-lists with "email from|to <x> not allowed";
  // anything else (a dropped RPC connection) says nothing about whether the
  // service took the message: an unknown outcome, never sent again.
  if (/\bnot allowed\b/i.test(text)) return new ProviderError(`Cloudflare Email Service: ${text}`, false);
  return ProviderError.unknown(`Cloudflare Email Service gave no answer: ${text}`);
}
