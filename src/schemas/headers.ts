/**
 * Rules for what a sender may put in mail headers. Every address, name,
 * subject and header value is refused with a 422 if it carries CR or LF, so a
 * request can never add or split headers.
 */

/** Headers the service owns; custom headers may not set them. */
const RESERVED = new Set([
  "from",
  "to",
  "cc",
  "bcc",
  "subject",
  "message-id",
  "date",
  "sender",
  "reply-to",
  "return-path",
  "mime-version",
  "content-type",
  "content-transfer-encoding",
  "list-unsubscribe",
  "list-unsubscribe-post",
]);

/**
 * Header prefixes that steer the email provider rather than the message
 * (SES: X-SES-CONFIGURATION-SET, X-SES-MESSAGE-TAGS, X-SES-SOURCE-ARN,
 * X-SES-FROM-ARN, X-SES-RETURN-PATH-ARN; AWS X-Amz-*; and the equivalents of
 * other providers). A sender could otherwise pick another tenant's
 * configuration set or identity, or turn off feedback.
 */
const PROVIDER_CONTROL_PREFIXES = ["x-ses-", "x-amz-", "x-amzn-", "x-mailgun-", "x-smtpapi", "x-pm-", "x-mc-", "x-sg-", "x-cf-"];

/** RFC 5322 field-name: printable ASCII except ':' (and no spaces). */
const FIELD_NAME = /^[!-9;-~]{1,76}$/;
/** Printable ASCII and tab: non-ASCII header values would need encoding, so they are refused. */
const FIELD_VALUE = /^[\t -~]{0,998}$/;

export function headerNameProblem(name: string): string | null {
  if (!FIELD_NAME.test(name)) return "Header names are 1-76 printable ASCII characters without ':' or spaces";
  const lower = name.toLowerCase();
  if (RESERVED.has(lower) || lower.startsWith("dkim-") || lower.startsWith("arc-")) {
    return `The ${name} header is set by the service and cannot be overridden`;
  }
  if (PROVIDER_CONTROL_PREFIXES.some((prefix) => lower.startsWith(prefix))) {
    return `The ${name} header controls the email provider and cannot be set`;
  }
  return null;
}

export function headerValueProblem(value: string): string | null {
  return FIELD_VALUE.test(value) ? null : "Header values are printable ASCII, at most 998 characters, without CR or LF";
}
