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

/** Longest line of a message, CRLF excluded (RFC 5322 2.1.1: MUST); lines SHOULD stay within 78. */
export const MAX_LINE_OCTETS = 998;
const SOFT_LINE_OCTETS = 78;

/**
 * The value of `Name: value` folded at its spaces and tabs (RFC 5322 3.2.2):
 * CRLF goes before a whitespace character, so unfolding gives the value back
 * unchanged. Lines stay within 78 octets where the whitespace allows and never
 * pass 998; null when a word is too long for that. For ASCII values.
 */
export function foldHeaderValue(name: string, value: string): string | null {
  let folded = "";
  let line = name.length + 2; // "Name: "
  for (const piece of value.match(/[ \t]*[^ \t]+|[ \t]+$/g) ?? []) {
    // Every piece after the first starts with whitespace; a trailing run of whitespace alone is never a line.
    if (folded && line + piece.length > SOFT_LINE_OCTETS && /[^ \t]/.test(piece)) {
      folded += "\r\n";
      line = 0;
    }
    folded += piece;
    line += piece.length;
    if (line > MAX_LINE_OCTETS) return null;
  }
  return folded;
}

/**
 * Fields left unstructured (RFC 5322: Comments, and extension fields, here the
 * X- ones): a value too long to fold may be written as RFC 2047 encoded-words,
 * which every reader decodes back. A structured field (References, List-Id, ...)
 * must keep its syntax, so one that cannot be folded is refused instead.
 */
export function isUnstructuredField(name: string): boolean {
  const lower = name.toLowerCase();
  return lower.startsWith("x-") || lower === "comments";
}

/** What is wrong with a custom header's value, or null; with `name`, also whether `Name: value` can be written in lines of at most 998 octets. */
export function headerValueProblem(value: string, name?: string): string | null {
  if (!FIELD_VALUE.test(value)) return "Header values are printable ASCII, at most 998 characters, without CR or LF";
  if (name === undefined || isUnstructuredField(name) || foldHeaderValue(name, value) !== null) return null;
  const word = /^[ \t]*[^ \t]*/.exec(value)![0].length;
  const room = MAX_LINE_OCTETS - name.length - 2;
  return `The ${name} header starts with ${word} characters without a space or tab to fold at, but a header line is at most ${MAX_LINE_OCTETS} octets (RFC 5322), so at most ${room} fit after "${name}: ". Add a space, shorten it, or use an X- header (those are encoded to fit).`;
}
