/**
 * Marketing mail always carries a visible unsubscribe link (Gmail and Yahoo's bulk-sender rules): a
 * campaign body or a MARKETING template / broadcast send without `{{unsubscribeUrl}}` gets this
 * footer with one, the project's own when it set one (docs/api.md "Unsubscribe links in marketing mail").
 * A body that uses the variable anywhere is left as it is.
 */
import { USES_UNSUBSCRIBE_URL } from "../../schemas/project";

const UNSUBSCRIBE_FOOTER =
  '<p style="font-size:12px;color:#6b7280;text-align:center;margin-top:24px"><a href="{{unsubscribeUrl}}" style="color:#6b7280">Unsubscribe</a></p>';

/**
 * The body, with the footer before `</body>` (or at the end) unless it already uses `{{unsubscribeUrl}}`.
 * `projectFooter`: the project's own (PATCH /project unsubscribeFooter, which uses the variable); null: the built-in one.
 */
export function withUnsubscribeLink(body: string, projectFooter?: string | null): string {
  if (USES_UNSUBSCRIBE_URL.test(body)) return body;
  const footer = projectFooter ?? UNSUBSCRIBE_FOOTER;
  // A function replacement: a `$` in the footer is text, not a replacement pattern.
  return /<\/body>/i.test(body) ? body.replace(/<\/body>/i, () => `${footer}</body>`) : body + footer;
}
