import { sign, verify } from "./signing";
import { decodeHtmlAttribute } from "../../lib/html";

/**
 * Tracking and unsubscribe links. Every link the service puts in mail is
 * signed with LINK_SIGNING_SECRET, so the click redirector only redirects to
 * URLs this service wrote into a message (it is not an open redirect) and an
 * unsubscribe token cannot be made up for someone else's email.
 */

/**
 * The id a link signs: the email's id, and `~<shard>` after it when the email's project is on a data
 * shard other than 0 (src/db/shards.ts), so the key-less route reaches the shard without a lookup.
 * Links without it (all links sent before shards existed) are shard 0.
 */
export function linkId(emailId: string, shard: number): string {
  return shard === 0 ? emailId : `${emailId}~${shard}`;
}

/** A signed link id's email and shard (see linkId). */
export function parseLinkId(id: string): { emailId: string; shard: number } {
  const match = /^(.+)~([1-9][0-9]{0,5})$/.exec(id);
  return match ? { emailId: match[1], shard: Number(match[2]) } : { emailId: id, shard: 0 };
}

const PURPOSE_OPEN = "open";
const PURPOSE_CLICK = "click";
const PURPOSE_UNSUBSCRIBE = "unsubscribe";
const PURPOSE_CONFIRM = "confirm";
const PURPOSE_PREFERENCES = "preferences";

export const openSignature = (secret: string, emailId: string) => sign(secret, PURPOSE_OPEN, emailId);
/** Secrets a link may be verified with: the current one first, then the previous one during a rotation. */
export type VerificationSecrets = string | readonly string[];

export const verifyOpenSignature = (secret: VerificationSecrets, emailId: string, signature: string | undefined) =>
  verify(secret, signature, PURPOSE_OPEN, emailId);

export const clickSignature = (secret: string, emailId: string, url: string) => sign(secret, PURPOSE_CLICK, emailId, url);
export const verifyClickSignature = (secret: VerificationSecrets, emailId: string, url: string, signature: string | undefined) =>
  verify(secret, signature, PURPOSE_CLICK, emailId, url);

const trimSlash = (baseUrl: string) => baseUrl.replace(/\/+$/, "");

export async function openPixelUrl(baseUrl: string, secret: string, emailId: string): Promise<string> {
  return `${trimSlash(baseUrl)}/t/o/${encodeURIComponent(emailId)}?s=${await openSignature(secret, emailId)}`;
}

export async function clickUrl(baseUrl: string, secret: string, emailId: string, url: string): Promise<string> {
  const s = await clickSignature(secret, emailId, url);
  return `${trimSlash(baseUrl)}/t/c/${encodeURIComponent(emailId)}?u=${encodeURIComponent(url)}&s=${s}`;
}

/** The one-click (POST) and landing page (GET) URL: `${baseUrl}/unsubscribe/<emailId>.<signature>`. */
export async function unsubscribeUrl(baseUrl: string, secret: string, emailId: string): Promise<string> {
  return `${trimSlash(baseUrl)}/unsubscribe/${await unsubscribeToken(secret, emailId)}`;
}

export async function unsubscribeToken(secret: string, emailId: string): Promise<string> {
  return `${emailId}.${await sign(secret, PURPOSE_UNSUBSCRIBE, emailId)}`;
}

/** The email id an unsubscribe token stands for, or null when the token is malformed or forged. */
export async function parseUnsubscribeToken(secret: VerificationSecrets, token: string): Promise<string | null> {
  const dot = token.lastIndexOf(".");
  if (dot <= 0 || dot > 128) return null;
  const emailId = token.slice(0, dot);
  return (await verify(secret, token.slice(dot + 1), PURPOSE_UNSUBSCRIBE, emailId)) ? emailId : null;
}

/** The double opt-in link of a confirmation email: `${baseUrl}/confirm/<emailId>.<signature>` (GET: a page, POST: confirms). */
export async function confirmUrl(baseUrl: string, secret: string, emailId: string): Promise<string> {
  return `${trimSlash(baseUrl)}/confirm/${emailId}.${await sign(secret, PURPOSE_CONFIRM, emailId)}`;
}

/** The confirmation email's id a confirm token stands for, or null when it is malformed or forged (an unsubscribe token is neither). */
export async function parseConfirmToken(secret: VerificationSecrets, token: string): Promise<string | null> {
  const dot = token.lastIndexOf(".");
  if (dot <= 0 || dot > 128) return null;
  const emailId = token.slice(0, dot);
  return (await verify(secret, token.slice(dot + 1), PURPOSE_CONFIRM, emailId)) ? emailId : null;
}

/** The preference page of an email's recipient (`{{preferencesUrl}}`): `${baseUrl}/preferences/<emailId>.<signature>` (GET: the page, POST: saves). */
export async function preferencesUrl(baseUrl: string, secret: string, emailId: string): Promise<string> {
  return `${trimSlash(baseUrl)}/preferences/${emailId}.${await sign(secret, PURPOSE_PREFERENCES, emailId)}`;
}

/** The email id a preferences token stands for, or null when it is malformed or forged (no other link's token is one). */
export async function parsePreferencesToken(secret: VerificationSecrets, token: string): Promise<string | null> {
  const dot = token.lastIndexOf(".");
  if (dot <= 0 || dot > 128) return null;
  const emailId = token.slice(0, dot);
  return (await verify(secret, token.slice(dot + 1), PURPOSE_PREFERENCES, emailId)) ? emailId : null;
}

/** A URL the click redirector may send a browser to: absolute http(s), nothing else. */
export function isTrackableUrl(url: string): boolean {
  if (!/^https?:\/\//i.test(url)) return false;
  try {
    const parsed = new URL(url);
    return (parsed.protocol === "http:" || parsed.protocol === "https:") && parsed.hostname.length > 0;
  } catch {
    return false;
  }
}

const escapeAttribute = (value: string) => value.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

export interface TrackingOptions {
  emailId: string;
  baseUrl: string;
  secret: string;
  trackOpens: boolean;
  trackClicks: boolean;
  /** The host of tracked links and the pixel (a sending domain's verified tracking hostname); default `baseUrl`. */
  trackingBaseUrl?: string;
}

async function openPixel(baseUrl: string, secret: string, emailId: string): Promise<string> {
  return `<img src="${escapeAttribute(await openPixelUrl(baseUrl, secret, emailId))}" width="1" height="1" alt="" style="display:none">`;
}

/**
 * Rewrites absolute http(s) `<a href>` links to signed click redirects and
 * appends a 1x1 open pixel at the end of `<body>` (or of the document when
 * there is no body). mailto:, tel:, fragments, relative links and links to
 * this service's own unsubscribe page are left as they are.
 */
export async function addTracking(html: string, opts: TrackingOptions): Promise<string> {
  if (!opts.trackOpens && !opts.trackClicks) return html;
  const ownBaseUrl = trimSlash(opts.baseUrl);
  // Tracked links and the pixel on the tracking host; the service's own links (unsubscribe, ...) are still recognised on its own.
  const baseUrl = trimSlash(opts.trackingBaseUrl ?? opts.baseUrl);
  // No "<a" and no "<body" tag: there is no link to track and the pixel goes at
  // the end of the document, which is what the rewriter below would produce.
  if (!/<(a|body)[\s/>]/i.test(html)) return opts.trackOpens ? html + (await openPixel(baseUrl, opts.secret, opts.emailId)) : html;
  const ownPrefixes = [`${baseUrl}/unsubscribe/`, `${baseUrl}/preferences/`, `${baseUrl}/t/`];
  if (baseUrl !== ownBaseUrl) ownPrefixes.push(...ownPrefixes.map((prefix) => ownBaseUrl + prefix.slice(baseUrl.length)));
  let rewriter = new HTMLRewriter();

  if (opts.trackClicks) {
    rewriter = rewriter.on("a[href]", {
      async element(element) {
        const raw = element.getAttribute("href");
        if (raw === null) return;
        const href = decodeHtmlAttribute(raw).trim();
        if (!isTrackableUrl(href)) return;
        const lower = href.toLowerCase();
        if (ownPrefixes.some((prefix) => lower.startsWith(prefix.toLowerCase()))) return;
        const tracked = await clickUrl(baseUrl, opts.secret, opts.emailId, href);
        // setAttribute writes the value as given; escape it for a double-quoted attribute.
        element.setAttribute("href", escapeAttribute(tracked));
      },
    });
  }

  if (opts.trackOpens) {
    const pixel = await openPixel(baseUrl, opts.secret, opts.emailId);
    let placed = false;
    rewriter = rewriter
      .on("body", {
        element(element) {
          element.onEndTag((end) => {
            if (placed) return;
            end.before(pixel, { html: true });
            placed = true;
          });
        },
      })
      .onDocument({
        end(end) {
          if (!placed) end.append(pixel, { html: true });
          placed = true;
        },
      });
  }

  return rewriter.transform(new Response(html, { headers: { "Content-Type": "text/html; charset=utf-8" } })).text();
}
