/**
 * The key that makes two endpoint URLs the same destination (one endpoint per
 * URL and project, W3): WHATWG parsing (scheme and host lower-cased, the
 * default port and empty path made explicit, percent-encoding normalised),
 * without the fragment (never sent) and the host's trailing dot. Path and query
 * stay as they are: they may mean different things to the receiver.
 */
export function webhookUrlKey(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url.trim());
  } catch {
    return url.trim();
  }
  parsed.hash = "";
  if (parsed.hostname.endsWith(".")) parsed.hostname = parsed.hostname.slice(0, -1);
  return parsed.href;
}
