import { Liquid } from "liquidjs";
import { marked } from "marked";
import type { JsonObject } from "../../db/schema";
import { ApiError } from "../../lib/errors";
import { decodeHtmlAttribute } from "../tracking/links";

/**
 * Template variables (CONTRACT.md): `{{name}}` and `{{data.name}}` fill from the
 * request's data, falling back to the contact's data; `{{name ?? default}}`
 * gives a default; a missing variable renders empty. Built-ins:
 * `{{email}}` and `{{unsubscribeUrl}}`. Liquid does the work; values are
 * HTML-escaped in bodies and inserted as text in subjects.
 */
const engineOptions = {
  strictVariables: false,
  strictFilters: true,
  // Bound the cost of a hostile template (Workers have a CPU limit per invocation).
  parseLimit: 1_000_000,
  renderLimit: 500,
  memoryLimit: 10_000_000,
};
const htmlEngine = new Liquid({ ...engineOptions, outputEscape: "escape" });
const textEngine = new Liquid(engineOptions);

/** `{{ name ?? fallback }}` -> `{{ name | default: "fallback" }}` (quotes around the fallback are optional). */
function translateDefaults(template: string): string {
  return template.replace(/\{\{\s*([A-Za-z_][\w.-]*)\s*\?\?\s*(.*?)\s*\}\}/g, (_all, name: string, fallback: string) => {
    const unquoted = /^(["']).*\1$/.test(fallback) ? fallback.slice(1, -1) : fallback;
    const quote = unquoted.includes('"') ? "'" : '"';
    return `{{ ${name} | default: ${quote}${unquoted.replace(new RegExp(quote, "g"), "")}${quote} }}`;
  });
}

export interface RenderVariables {
  /** Contact data merged with the request's data (request wins). */
  data: JsonObject;
  email: string;
  unsubscribeUrl: string;
}

function scope(vars: RenderVariables) {
  return { ...vars.data, data: vars.data, email: vars.email, unsubscribeUrl: vars.unsubscribeUrl };
}

async function render(engine: Liquid, template: string, vars: RenderVariables, field: string): Promise<string> {
  try {
    return await engine.parseAndRender(translateDefaults(template), scope(vars));
  } catch (err) {
    const detail = err instanceof Error ? err.message.split("\n")[0] : String(err);
    throw ApiError.validation([{ field, message: `Template error: ${detail}`, code: "template_error" }]);
  }
}

export const renderSubject = (template: string, vars: RenderVariables) => render(textEngine, template, vars, "subject");

/**
 * Renders an HTML body. In an HTML body each value is HTML-escaped. In a
 * markdown body each value stands in the markdown as an opaque placeholder
 * and is put into the finished HTML as escaped text, so no value can make a
 * link, image, autolink, emphasis or raw HTML, and a value inside a code span
 * shows exactly as it is. Either way, the finished HTML keeps only safe URLs
 * (see `keepSafeUrls`).
 */
export async function renderBody(template: string, vars: RenderVariables, format: "html" | "markdown" = "html") {
  if (format === "html") return keepSafeUrls(await render(htmlEngine, template, vars, "body"));
  const values: string[] = [];
  // Letters and digits only: nothing markdown (or GFM's bare-URL autolinks) reads as syntax.
  const nonce = crypto.randomUUID().replace(/-/g, "");
  const placeholder = new RegExp(`mdv${nonce}n(\\d+)x`, "g");
  const engine = new Liquid({
    ...engineOptions,
    outputEscape: (value: unknown) => `mdv${nonce}n${values.push(liquidText(value)) - 1}x`,
  });
  const markdown = await render(engine, template, vars, "body");
  const html = await marked.parse(markdown, { async: true });
  return keepSafeUrls(html.replace(placeholder, (_all, i: string) => escapeHtml(values[Number(i)] ?? "")));
}

/** A value as Liquid prints it: nil is empty, arrays are joined, everything else is String(). */
function liquidText(value: unknown): string {
  if (value === null || value === undefined) return "";
  if (Array.isArray(value)) return value.map(liquidText).join("");
  return String(value);
}

const escapeHtml = (text: string) =>
  text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;").replace(/'/g, "&#39;");

/** Attributes whose value a mail client may load or follow as a URL. */
const URL_ATTRIBUTES = new Set(["href", "src", "srcset", "action", "formaction", "background", "poster", "data", "xlink:href", "lowsrc", "dynsrc", "longdesc", "cite"]);
/** Schemes mail may carry: web links, mail and phone links, and inline attachments. */
const SAFE_SCHEMES = new Set(["http", "https", "mailto", "tel", "cid"]);

/**
 * Whether a URL attribute may stay: relative URLs and fragments, or one of
 * SAFE_SCHEMES. Read as a browser reads it: character references decoded,
 * ASCII control characters and whitespace removed, scheme case-insensitive,
 * so `jav&#x09;ascript:` or ` JavaScript:` are recognised too.
 */
export function isSafeUrl(raw: string): boolean {
  const url = decodeHtmlAttribute(raw).replace(/[\u0000-\u0020\u007f]+/g, "").toLowerCase();
  // A character reference left undecoded (HTML knows ~2,000 names, e.g. &colon; &Tab;)
  // before the path could be part of a scheme in a mail client: not safe.
  if (/^[^/?#]*&/.test(url)) return false;
  const scheme = /^([a-z][a-z0-9+.-]*):/.exec(url)?.[1];
  if (scheme === undefined) return !/^[^/?#]*:/.test(url);
  return SAFE_SCHEMES.has(scheme);
}

/** `url(...)` references inside a style attribute, each checked like a URL attribute. */
const STYLE_URL = /url\(\s*(['"]?)(.*?)\1\s*\)/gi;

/**
 * Removes every URL attribute (and style with `url(...)`) whose URL is not
 * safe, e.g. `javascript:` and `data:` links and images, whether the template
 * or a value put it there. Runs on the finished body before it is stored.
 */
export async function keepSafeUrls(html: string): Promise<string> {
  const rewriter = new HTMLRewriter().on("*", {
    element(element) {
      const unsafe: string[] = [];
      for (const [name, value] of element.attributes) {
        if (URL_ATTRIBUTES.has(name)) {
          const urls = name === "srcset" ? decodeHtmlAttribute(value).split(",").map((c) => c.trim().split(/\s+/)[0] ?? "") : [value];
          if (!urls.every(isSafeUrl)) unsafe.push(name);
        } else if (name === "style") {
          const style = decodeHtmlAttribute(value);
          if ([...style.matchAll(STYLE_URL)].some((m) => !isSafeUrl(m[2]))) unsafe.push(name);
        }
      }
      for (const name of unsafe) element.removeAttribute(name);
    },
  });
  return rewriter.transform(new Response(html, { headers: { "Content-Type": "text/html; charset=utf-8" } })).text();
}

/** Checks a stored template's syntax without rendering it for anyone. */
export function assertTemplateSyntax(template: string, field: string) {
  try {
    htmlEngine.parse(translateDefaults(template));
  } catch (err) {
    const detail = err instanceof Error ? err.message.split("\n")[0] : String(err);
    throw ApiError.validation([{ field, message: `Template error: ${detail}`, code: "template_error" }]);
  }
}
