/**
 * Marketing mail always carries a visible unsubscribe link (Gmail and Yahoo's bulk-sender rules): a
 * campaign body or a MARKETING template / broadcast send without `{{unsubscribeUrl}}` gets this
 * footer with one (docs/api.md "Unsubscribe links in marketing mail"). A body that uses the variable
 * anywhere is left as it is.
 */
const UNSUBSCRIBE_FOOTER =
  '<p style="font-size:12px;color:#6b7280;text-align:center;margin-top:24px"><a href="{{unsubscribeUrl}}" style="color:#6b7280">Unsubscribe</a></p>';

/** The body, with the footer before `</body>` (or at the end) unless it already uses `{{unsubscribeUrl}}`. */
export function withUnsubscribeLink(body: string): string {
  if (/\{\{\s*unsubscribeUrl\s*\}\}/.test(body)) return body;
  return /<\/body>/i.test(body) ? body.replace(/<\/body>/i, `${UNSUBSCRIBE_FOOTER}</body>`) : body + UNSUBSCRIBE_FOOTER;
}
