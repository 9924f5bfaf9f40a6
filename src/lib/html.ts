import type { Context } from "hono";

/** Text made safe inside HTML element content and quoted attribute values. */
export const escapeHtml = (text: string) =>
  text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;").replace(/'/g, "&#39;");

/**
 * A small HTML page answered to a person following a signed link (the
 * unsubscribe and double opt-in pages): `title` as its heading, `text` under
 * it, then `extra` (a form). The caller escapes what it puts in; never cached.
 */
export function htmlPage(
  c: Context,
  status: 200 | 400 | 404 | 410 | 503,
  title: string,
  text: string,
  extra = "",
  headers: Record<string, string> = {},
): Response {
  const page = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex"><title>${title}</title>
<style>body{font-family:system-ui,sans-serif;max-width:32rem;margin:4rem auto;padding:0 1rem;color:#222;line-height:1.5}button{font:inherit;padding:.5rem 1.25rem;cursor:pointer}</style>
</head><body><h1>${title}</h1><p>${text}</p>${extra}</body></html>`;
  return c.body(page, status, { "Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-store", ...headers });
}

/** 503 with Retry-After: the page's action is paused for a moment (its project is moving between databases); nothing was changed. */
export function tryAgainPage(c: Context, retryAfterSeconds: number): Response {
  return htmlPage(c, 503, "Please try again in a minute", "We are doing some quick maintenance. Nothing was changed: please try again in a minute.", "", {
    "Retry-After": String(retryAfterSeconds),
  });
}

const NAMED_ENTITIES: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'", nbsp: "\u00a0" };

/** Attribute values come from HTMLRewriter undecoded; decode the character references a URL may carry. */
export function decodeHtmlAttribute(value: string): string {
  return value.replace(/&(#x[0-9a-f]+|#[0-9]+|[a-z]+);/gi, (whole, ref: string) => {
    if (ref[0] === "#") {
      const code = ref[1] === "x" || ref[1] === "X" ? parseInt(ref.slice(2), 16) : parseInt(ref.slice(1), 10);
      return Number.isFinite(code) && code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : whole;
    }
    return NAMED_ENTITIES[ref.toLowerCase()] ?? whole;
  });
}

/** Attributes whose value a mail client may load or follow as a URL. */
const URL_ATTRIBUTES = new Set([
  "href",
  "src",
  "srcset",
  "action",
  "formaction",
  "background",
  "poster",
  "data",
  "xlink:href",
  "lowsrc",
  "dynsrc",
  "longdesc",
  "cite",
]);
/** Schemes mail may carry: web links, mail and phone links, and inline attachments. */
const SAFE_SCHEMES = new Set(["http", "https", "mailto", "tel", "cid"]);

/**
 * Whether a URL attribute may stay: relative URLs and fragments, or one of
 * SAFE_SCHEMES. Read as a browser reads it: character references decoded,
 * ASCII control characters and whitespace removed, scheme case-insensitive,
 * so `jav&#x09;ascript:` or ` JavaScript:` are recognised too.
 */
export function isSafeUrl(raw: string): boolean {
  const url = decodeHtmlAttribute(raw)
    .replace(/[\u0000-\u0020\u007f]+/g, "")
    .toLowerCase();
  // A character reference left undecoded (HTML knows ~2,000 names, e.g. &colon; &Tab;)
  // before the path could be part of a scheme in a mail client: not safe.
  if (/^[^/?#]*&/.test(url)) return false;
  const scheme = /^([a-z][a-z0-9+.-]*):/.exec(url)?.[1];
  if (scheme === undefined) return !/^[^/?#]*:/.test(url);
  return SAFE_SCHEMES.has(scheme);
}

/**
 * Every spot in the HTML that could be a URL attribute: a name ending in one of
 * the URL attribute names (or style), optional whitespace, `=`, whitespace, then
 * the value as the HTML tokenizer reads it: "double-quoted", 'single-quoted',
 * an opening quote that never closes (group 4), or unquoted up to whitespace or `>`.
 * Attribute names are never entity-encoded, so every URL attribute (href, src,
 * srcset, lowsrc, dynsrc, action, formaction, background, poster, data,
 * longdesc, cite, xlink:href) and style is found. It also matches text that
 * only looks like an attribute, which can only make the check below more careful.
 */
const URL_ATTRIBUTE_SPOT = /(srcset|style|href|src|action|background|poster|data|longdesc|cite)\s*=\s*(?:"([^"]*)"|'([^']*)'|(["'])|([^\s>]*))/gi;

/**
 * The shortcut of keepSafeUrls (one regular-expression pass instead of an
 * HTMLRewriter pass per rendered email; most mail has only ordinary links):
 * true only when every spot that could be a URL attribute holds a URL that
 * attributeIsSafe keeps (the rewriter's own test), so the rewriter would remove
 * nothing. An unclosed quote is false, and the rewriter decides.
 */
function everyUrlAttributeLooksSafe(html: string): boolean {
  const spot = new RegExp(URL_ATTRIBUTE_SPOT);
  let valueEnd = 0;
  let rereads = 0;
  for (let match = spot.exec(html); match !== null; match = spot.exec(html)) {
    if (match[4] !== undefined) return false;
    // A spot inside the previous spot's value reads that text again: past a few, the
    // rewriter (one linear pass) decides, so `href=href=href=...` is not quadratic.
    if (match.index < valueEnd && ++rereads > MAX_SHORTCUT_REREADS) return false;
    valueEnd = Math.max(valueEnd, match.index + match[0].length);
    const name = match[1].toLowerCase();
    if (!attributeIsSafe(name === "style" ? "style" : name === "srcset" ? "srcset" : "href", match[2] ?? match[3] ?? match[5] ?? "")) return false;
    // Go on right after the name, not after the value: what this spot read as its
    // value may be text in front of a real attribute (title='cite=https://x'href=...).
    spot.lastIndex = match.index + match[1].length;
  }
  return true;
}

/** Spots the shortcut may read inside an earlier spot's value before it leaves the decision to the rewriter. */
const MAX_SHORTCUT_REREADS = 16;
/** Most `url(` in one style attribute; past it the attribute is removed (each is a regex search to its end). */
const MAX_STYLE_URLS = 32;

/** Whether a URL attribute (URL_ATTRIBUTES) or a style attribute may stay as it is. */
function attributeIsSafe(name: string, value: string): boolean {
  if (name === "style") {
    const style = decodeHtmlAttribute(value);
    const lower = style.toLowerCase();
    let urls = 0;
    for (let at = lower.indexOf("url("); at !== -1 && urls <= MAX_STYLE_URLS; at = lower.indexOf("url(", at + 4)) urls++;
    return urls <= MAX_STYLE_URLS && [...style.matchAll(STYLE_URL)].every((m) => isSafeUrl(m[2]));
  }
  if (name === "srcset") {
    return decodeHtmlAttribute(value)
      .split(",")
      .every((candidate) => isSafeUrl(candidate.trim().split(/\s+/)[0] ?? ""));
  }
  return isSafeUrl(value);
}

/** `url(...)` references inside a style attribute, each checked like a URL attribute. */
const STYLE_URL = /url\(\s*(['"]?)(.*?)\1\s*\)/gi;

/**
 * Removes every URL attribute (and style with `url(...)`) whose URL is not
 * safe, e.g. `javascript:` and `data:` links and images, whether the template
 * or a value put it there. Runs on the finished body before it is stored.
 */
export async function keepSafeUrls(html: string): Promise<string> {
  // Most mail (no URL attribute at all, or only ordinary links) never needs the rewriter.
  if (everyUrlAttributeLooksSafe(html)) return html;
  const rewriter = new HTMLRewriter().on("*", {
    element(element) {
      const unsafe: string[] = [];
      for (const [name, value] of element.attributes) {
        if ((URL_ATTRIBUTES.has(name) || name === "style") && !attributeIsSafe(name, value)) unsafe.push(name);
      }
      for (const name of unsafe) element.removeAttribute(name);
    },
  });
  return rewriter.transform(new Response(html, { headers: { "Content-Type": "text/html; charset=utf-8" } })).text();
}
