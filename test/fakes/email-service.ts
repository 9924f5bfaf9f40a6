/**
 * A fake Cloudflare Email Service `send_email` binding (the object the Worker
 * gets as env.EMAIL). It refuses what the real binding refuses, with the same
 * error shape (an Error with a string `code`), per
 * https://developers.cloudflare.com/email-service/api/send-emails/workers-api/#error-codes
 * and .../reference/headers/:
 * - from, to and subject are required (E_FIELD_MISSING), addresses must be
 *   addresses (E_VALIDATION_ERROR);
 * - at most 50 recipients over to/cc/bcc (E_TOO_MANY_RECIPIENTS), at most 32
 *   attachments (E_TOO_MANY_ATTACHMENTS);
 * - a sender outside `allowedSenderAddresses` is refused the way `wrangler dev`'s
 *   binding does it ("email from <x> not allowed", no code); a sender whose
 *   domain is not onboarded gets E_SENDER_DOMAIN_NOT_AVAILABLE;
 * - headers: platform-controlled ones (Message-ID, Date, DKIM-Signature, ...)
 *   E_HEADER_NOT_ALLOWED, ones with an API field (From, Subject, ...)
 *   E_HEADER_USE_API_FIELD, anything neither allow-listed nor X-
 *   E_HEADER_NOT_ALLOWED, List-Unsubscribe without https/mailto URIs
 *   E_HEADER_VALUE_INVALID.
 * Only the structured form of send() (the one the provider uses) is modelled.
 * Accepted messages are kept; answers can be scripted with failNext().
 */

type Address = string | EmailAddress;
export interface Builder {
  from: Address;
  to: Address | Address[];
  subject: string;
  replyTo?: Address;
  cc?: Address | Address[];
  bcc?: Address | Address[];
  headers?: Record<string, string>;
  text?: string;
  html?: string;
  attachments?: EmailAttachment[];
}

export interface SentMessage extends Builder {
  messageId: string;
}

const PLATFORM_HEADERS = new Set([
  "date",
  "message-id",
  "mime-version",
  "content-type",
  "content-transfer-encoding",
  "dkim-signature",
  "return-path",
  "received",
  "feedback-id",
  "tls-required",
  "tls-report-domain",
  "tls-report-submitter",
  "cfbl-address",
  "cfbl-feedback-id",
]);
const API_FIELD_HEADERS = new Set(["from", "to", "cc", "bcc", "subject", "reply-to"]);
const ALLOWED_HEADERS = new Set(
  [
    "In-Reply-To",
    "References",
    "List-Unsubscribe",
    "List-Unsubscribe-Post",
    "List-Id",
    "List-Archive",
    "List-Help",
    "List-Owner",
    "List-Post",
    "List-Subscribe",
    "Precedence",
    "Auto-Submitted",
    "Content-Language",
    "Keywords",
    "Comments",
    "Importance",
    "Priority",
    "Sensitivity",
    "Organization",
    "Require-Recipient-Valid-Since",
    "Expires",
    "Reply-By",
    "Archived-At",
  ].map((h) => h.toLowerCase()),
);
const ADDRESS = /^[^\s@<>]+@[^\s@<>]+\.[^\s@<>]+$/;

export class EmailServiceError extends Error {
  constructor(
    readonly code: string | undefined,
    message: string,
  ) {
    super(message);
  }
}

const fail = (code: string | undefined, message: string): never => {
  throw new EmailServiceError(code, message);
};

const emailOf = (a: Address) => (typeof a === "string" ? a : a?.email);
const list = (a: Address | Address[] | undefined): Address[] => (a === undefined ? [] : Array.isArray(a) ? a : [a]);

export function fakeEmailService(options: { allowedSenderAddresses?: string[]; onboardedDomains?: string[] } = {}) {
  const sent: SentMessage[] = [];
  /** Every call, accepted or refused, with the code it got ("ok" when accepted). */
  const calls: { code: string }[] = [];
  const script: { code?: string; message: string }[] = [];
  let counter = 0;

  function validate(message: Builder) {
    if (!message.from || !emailOf(message.from)) fail("E_FIELD_MISSING", "Missing required field: from");
    if (list(message.to).length === 0) fail("E_FIELD_MISSING", "Missing required field: to");
    if (typeof message.subject !== "string" || message.subject.trim() === "") fail("E_FIELD_MISSING", "Missing required field: subject");
    const from = emailOf(message.from);
    const recipients = [...list(message.to), ...list(message.cc), ...list(message.bcc)];
    for (const address of [from, ...recipients.map(emailOf)]) {
      if (typeof address !== "string" || !ADDRESS.test(address)) fail("E_VALIDATION_ERROR", `Invalid email address: ${address}`);
    }
    if (recipients.length > 50) fail("E_TOO_MANY_RECIPIENTS", `${recipients.length} recipients; at most 50 over to, cc and bcc`);
    if ((message.attachments?.length ?? 0) > 32) fail("E_TOO_MANY_ATTACHMENTS", "At most 32 attachments");
    if (options.allowedSenderAddresses && !options.allowedSenderAddresses.includes(from)) fail(undefined, `email from ${from} not allowed`);
    const domain = from.split("@")[1].toLowerCase();
    if (options.onboardedDomains && !options.onboardedDomains.includes(domain)) {
      fail("E_SENDER_DOMAIN_NOT_AVAILABLE", `Domain ${domain} is not available for sending`);
    }
    for (const [name, value] of Object.entries(message.headers ?? {})) {
      const lower = name.toLowerCase();
      if (PLATFORM_HEADERS.has(lower) || lower.startsWith("arc-"))
        fail("E_HEADER_NOT_ALLOWED", `Header '${name}' is not allowed. It is auto-generated by the platform.`);
      if (API_FIELD_HEADERS.has(lower)) fail("E_HEADER_USE_API_FIELD", `Header '${name}' must be set via the API field, not the 'headers' object.`);
      if (!ALLOWED_HEADERS.has(lower) && !/^x-[a-z0-9_-]+$/i.test(name)) fail("E_HEADER_NOT_ALLOWED", `Header '${name}' is not allowed.`);
      if (value === "" || /[\r\n]/.test(value)) fail("E_HEADER_VALUE_INVALID", `Header '${name}' value is invalid.`);
      if (new TextEncoder().encode(value).length > 2048) fail("E_HEADER_VALUE_TOO_LONG", `Header '${name}' value exceeds 2048 byte limit.`);
      if (lower === "list-unsubscribe") {
        const uris = [...value.matchAll(/<([^>]*)>/g)].map((m) => m[1]);
        if (uris.length === 0 || uris.some((u) => !/^(https:\/\/|mailto:)/i.test(u))) {
          fail("E_HEADER_VALUE_INVALID", `Header '${name}' must contain angle-bracket HTTPS or mailto URI(s).`);
        }
      }
      if (lower === "list-unsubscribe-post" && value !== "List-Unsubscribe=One-Click") {
        fail("E_HEADER_VALUE_INVALID", `Header '${name}' must be exactly List-Unsubscribe=One-Click.`);
      }
    }
  }

  const binding = {
    async send(message: Builder): Promise<EmailSendResult> {
      try {
        const builder = message as Builder;
        validate(builder);
        const next = script.shift();
        if (next) fail(next.code, next.message);
        const messageId = `<fake-${++counter}@${emailOf(builder.from).split("@")[1]}>`;
        sent.push({ ...builder, messageId });
        calls.push({ code: "ok" });
        return { messageId };
      } catch (err) {
        calls.push({ code: (err as EmailServiceError).code ?? "no-code" });
        throw err;
      }
    },
  };

  return {
    binding: binding as unknown as SendEmail,
    sent,
    calls,
    /** The next answers, in order, after validation passed (then acceptance again). */
    failNext(...answers: { code?: string; message: string }[]) {
      script.push(...answers);
    },
  };
}
