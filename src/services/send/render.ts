import type { Liquid, LiquidOptions } from "liquidjs";
import type { JsonObject } from "../../db/schema";
import { ApiError } from "../../lib/errors";
import { escapeHtml } from "../../lib/html";
import { decodeHtmlAttribute } from "../tracking/links";
import { TtlCache } from "../../lib/ttl-cache";
import { isNameChar, isSpace, translateDefaults } from "../../lib/template-defaults";

/**
 * Template variables (CONTRACT.md): `{{name}}` and `{{data.name}}` fill from the
 * request's data, falling back to the contact's data; `{{name ?? default}}`
 * gives a default; a missing variable renders empty. Built-ins:
 * `{{email}}` and `{{unsubscribeUrl}}` (and `{{confirmUrl}}` in a double opt-in
 * confirmation). Liquid does the work; values are
 * HTML-escaped in bodies and inserted as text in subjects.
 */
const engineOptions = {
  strictVariables: false,
  strictFilters: true,
  // Bound the cost of a hostile template (Workers have a CPU limit per invocation).
  parseLimit: 1_000_000,
  // Renders of a request share one RenderBudget (below); these are Liquid's per-call defaults.
  renderLimit: 5_000,
  memoryLimit: 10_000_000,
};

// Liquid and marked are loaded and their engines built on the first render, not at
// Worker startup: most requests and queue batches render nothing.
type LiquidModule = typeof import("liquidjs");
let liquidjs: LiquidModule | undefined;
let engines: Promise<{ html: Liquid; text: Liquid }> | undefined;
/** The two long-lived engines, by the key their parses are cached under. */
const sharedEngines = new Map<Liquid, string>();
const liquidEngines = () =>
  (engines ??= import("liquidjs").then((module) => {
    liquidjs = module;
    const shared = { html: new module.Liquid({ ...engineOptions, outputEscape: "escape" }), text: new module.Liquid(engineOptions) };
    sharedEngines.set(shared.html, "h").set(shared.text, "t");
    return shared;
  }));
/** A Liquid engine with `options` (on top of engineOptions), once Liquid is loaded. */
const newLiquid = async (options: LiquidOptions) => {
  await liquidEngines();
  return new liquidjs!.Liquid({ ...engineOptions, ...options });
};

export interface RenderVariables {
  /** Contact data merged with the request's data (request wins). */
  data: JsonObject;
  email: string;
  unsubscribeUrl: string;
  /** A double opt-in confirmation's signed confirm link. */
  confirmUrl?: string;
}

function scope(vars: RenderVariables) {
  const base = { ...vars.data, data: vars.data, email: vars.email, unsubscribeUrl: vars.unsubscribeUrl };
  return vars.confirmUrl === undefined ? base : { ...base, confirmUrl: vars.confirmUrl };
}

/** Longest rendered subject (RFC 5322's line limit). */
export const MAX_RENDERED_SUBJECT_CHARS = 998;
/** Largest rendered HTML body, in UTF-8 bytes. */
export const MAX_RENDERED_HTML_BYTES = 1024 * 1024;
/** Liquid render steps (tags, outputs, loop iterations) for all the renders of one request. */
export const RENDER_STEP_BUDGET = 100_000;
/** Liquid allocations (ranges, joins, concats...) for all the renders of one request. */
export const RENDER_MEMORY_BUDGET = 10_000_000;
/** Wall-clock time for all the renders of one request (only advances across I/O inside workerd, hence the step budget). */
export const RENDER_TIME_BUDGET_MS = 5_000;

class RenderLimitError extends Error {
  constructor(
    readonly code: "too_big" | "render_budget" | "too_many_tags",
    message: string,
  ) {
    super(message);
  }
}

/**
 * One work budget shared by every render of a request (all recipients, subject
 * and body), so 50 recipients cannot take 50 times a single render's budget.
 * Liquid calls the render limiter's `check` once per rendered template node
 * and loop iteration, and the memory limiter's `use` for each allocation.
 */
export class RenderBudget {
  private steps = 0;
  private allocated = 0;
  private readonly deadline = Date.now() + RENDER_TIME_BUDGET_MS;
  exhausted: RenderLimitError | null = null;

  private fail(message: string): never {
    this.exhausted = new RenderLimitError("render_budget", message);
    throw this.exhausted;
  }

  readonly renderLimit = {
    use: () => {},
    check: () => {
      if (++this.steps > RENDER_STEP_BUDGET) this.fail(`Rendering needs more than ${RENDER_STEP_BUDGET} template steps for this request`);
      if (Date.now() > this.deadline) this.fail(`Rendering took longer than ${RENDER_TIME_BUDGET_MS} ms for this request`);
    },
  };

  readonly memoryLimit = {
    use: (count: number) => {
      if (!(+count > 0)) return;
      this.allocated += +count;
      if (this.allocated > RENDER_MEMORY_BUDGET) {
        this.fail(`Rendering allocates more than the ${RENDER_MEMORY_BUDGET}-unit budget of this request`);
      }
    },
    check: () => {},
  };
}

/** A RenderLimitError thrown from inside Liquid (which wraps errors in `originalError`). */
function limitErrorIn(err: unknown): RenderLimitError | null {
  for (let e = err, depth = 0; e && depth < 5; e = (e as { originalError?: unknown }).originalError, depth++) {
    if (e instanceof RenderLimitError) return e;
  }
  return null;
}

function stringify(value: unknown): string {
  const plain = liquidjs && value instanceof liquidjs.Drop && typeof value.valueOf === "function" ? value.valueOf() : value;
  if (typeof plain === "string") return plain;
  if (plain === null || plain === undefined) return "";
  if (Array.isArray(plain)) return plain.map(stringify).join("");
  return String(plain);
}

/** Collects Liquid's output and stops the render as soon as it passes `maxChars`, long before memory runs out. */
class CappedEmitter {
  buffer = "";
  exceeded: RenderLimitError | null = null;
  constructor(
    private readonly maxChars: number,
    private readonly what: string,
  ) {}
  write(html: unknown) {
    this.buffer += stringify(html);
    if (this.buffer.length > this.maxChars) {
      this.exceeded = new RenderLimitError("too_big", `The rendered ${this.what} is longer than ${this.maxChars} characters`);
      throw this.exceeded;
    }
  }
}

/** Most Liquid tags and outputs (`{{ }}`, `{% %}`, lines of `{% liquid %}`) in one template, counted before it is parsed. */
export const MAX_TEMPLATE_TAGS = 5_000;

/**
 * The tags and outputs of a template, in one linear pass and without parsing:
 * every `{{` and `{%`, and each line inside a `{% liquid %}` tag (each is a tag).
 * Stops counting past `stopAfter`.
 */
export function countTemplateTags(template: string, stopAfter = MAX_TEMPLATE_TAGS): number {
  let count = 0;
  let i = template.indexOf("{");
  while (i !== -1 && count <= stopAfter) {
    const next = template.charCodeAt(i + 1);
    if (next === 123 /* { */) {
      count++;
      i = template.indexOf("{", i + 2);
    } else if (next === 37 /* % */) {
      count++;
      let k = i + 2;
      while (k < template.length && (template.charCodeAt(k) === 45 || isSpace(template.charCodeAt(k)))) k++;
      let after = i + 2;
      if (template.startsWith("liquid", k) && !isNameChar(template.charCodeAt(k + 6))) {
        const end = template.indexOf("%}", k);
        after = end === -1 ? template.length : end + 2;
        for (let line = template.indexOf("\n", k); line !== -1 && line < after; line = template.indexOf("\n", line + 1)) count++;
      }
      i = template.indexOf("{", after);
    } else {
      i = template.indexOf("{", i + 1);
    }
  }
  return count;
}

/** The tag count of `template`, or a RenderLimitError past MAX_TEMPLATE_TAGS (before anything parses it). */
function checkedTagCount(template: string): number {
  const tags = countTemplateTags(template);
  if (tags > MAX_TEMPLATE_TAGS) {
    throw new RenderLimitError("too_many_tags", `The template has more than ${MAX_TEMPLATE_TAGS} tags and outputs ({{ }} and {% %})`);
  }
  return tags;
}

/**
 * Parsed templates of the two shared engines, by source (a campaign renders one
 * template for every contact), least recently used first. Bounded by an estimate
 * of the memory they hold: the source twice (key and parse) and about 1 KB per
 * tag, as measured for liquidjs; parses larger than MAX_CACHED_PARSE_BYTES are not kept.
 */
export const PARSE_CACHE_BYTES = 8 * 1024 * 1024;
export const MAX_CACHED_PARSE_BYTES = 2 * 1024 * 1024;
const PARSE_BYTES_PER_TAG = 1024;
const parseCache = new TtlCache<string, { templates: ReturnType<Liquid["parse"]>; bytes: number }>({
  max: Number.POSITIVE_INFINITY,
  ttlMs: Number.POSITIVE_INFINITY,
  maxSize: PARSE_CACHE_BYTES,
  size: (entry) => entry.bytes,
});

function parsedTemplate(engine: Liquid, template: string) {
  const shared = sharedEngines.get(engine);
  const key = shared === undefined ? undefined : shared + template;
  const cached = key === undefined ? undefined : parseCache.get(key);
  if (cached) return cached.templates;
  const tags = checkedTagCount(template);
  // A template that fails to parse throws here and is never kept.
  const templates = engine.parse(translateDefaults(template));
  const bytes = 2 * 2 * template.length + PARSE_BYTES_PER_TAG * tags;
  if (key !== undefined && bytes <= MAX_CACHED_PARSE_BYTES) parseCache.set(key, { templates, bytes });
  return templates;
}

async function render(
  engine: Liquid | "html" | "text",
  template: string,
  vars: RenderVariables,
  field: string,
  maxChars: number,
  budget: RenderBudget,
): Promise<string> {
  const emitter = new CappedEmitter(maxChars, field);
  if (typeof engine === "string") engine = (await liquidEngines())[engine];
  const { Context, toValueSync } = liquidjs!;
  try {
    const templates = parsedTemplate(engine, template);
    // Synchronous rendering: nothing here waits on I/O (no file system, no
    // async filters), so the async path's promise per node would be pure cost.
    const ctx = new Context(
      scope(vars),
      engine.options,
      { sync: true },
      {
        memoryLimit: budget.memoryLimit as never,
        renderLimit: budget.renderLimit as never,
        liquid: engine,
      },
    );
    toValueSync(engine.renderer.renderTemplates(templates, ctx, emitter as never));
    return emitter.buffer;
  } catch (err) {
    const limit = emitter.exceeded ?? budget.exhausted ?? limitErrorIn(err);
    if (limit) throw ApiError.validation([{ field, message: limit.message, code: limit.code }]);
    const detail = err instanceof Error ? err.message.split("\n")[0] : String(err);
    throw ApiError.validation([{ field, message: `Template error: ${detail}`, code: "template_error" }]);
  }
}

/** Variables every render has, whatever the data (they win over data keys of the same name). */
const BUILT_IN_VARIABLES = new Set(["email", "unsubscribeUrl"]);
/** The variables each parsed template reads from its scope (Liquid's static analysis), by parsed template. */
const readVariables = new WeakMap<ReturnType<Liquid["parse"]>, ReturnType<Liquid["globalVariableSegmentsSync"]>>();

/**
 * Whether rendering `template` needs nothing but the built-ins and these data
 * keys: every variable it reads is `email`, `unsubscribeUrl`, or a key of
 * `dataKeys` (as `{{key}}` or `{{data.key}}`). The request's data wins over
 * the contact's, so then the contact's stored data cannot change what renders
 * (/v1/send skips reading it). False for a template that does not parse, and
 * for one that reads `data` as a whole or by a computed key. `engine`: the one
 * that will render it ("html" for an HTML body, "text" for a subject).
 */
export async function rendersFromDataKeys(template: string, dataKeys: ReadonlySet<string>, engine: "html" | "text" = "text"): Promise<boolean> {
  // Parsed by the engine that renders it, so the render finds the parse cached.
  const liquid = (await liquidEngines())[engine];
  let paths: ReturnType<Liquid["globalVariableSegmentsSync"]> | undefined;
  try {
    const templates = parsedTemplate(liquid, template);
    paths = readVariables.get(templates);
    if (!paths) {
      paths = liquid.globalVariableSegmentsSync(templates, { partials: false });
      readVariables.set(templates, paths);
    }
  } catch {
    return false; // the render reports the template's error
  }
  return paths.every(([root, key]) => {
    if (typeof root !== "string") return false;
    if (BUILT_IN_VARIABLES.has(root)) return true;
    if (root === "data") return typeof key === "string" && dataKeys.has(key);
    return dataKeys.has(root);
  });
}

/** 422 naming `field` when `text` is longer than `max` UTF-8 bytes. */
function assertMaxBytes(text: string, max: number, field: string, what: string) {
  const bytes = new TextEncoder().encode(text).length;
  if (bytes > max) {
    throw ApiError.validation([{ field, message: `The rendered ${what} is ${bytes} bytes; the limit is ${max}`, code: "too_big" }]);
  }
}

/**
 * Renders a subject: one line (line breaks from values become spaces), at
 * most 998 characters, or a 422 on `subject`. Pass the request's budget.
 */
export async function renderSubject(template: string, vars: RenderVariables, budget = new RenderBudget()) {
  // Line breaks collapse, so allow some slack while rendering and check the final text.
  const rendered = (await render("text", template, vars, "subject", MAX_RENDERED_SUBJECT_CHARS * 4, budget)).replace(/[\r\n]+/g, " ").trim();
  if (rendered.length > MAX_RENDERED_SUBJECT_CHARS) {
    throw ApiError.validation([
      { field: "subject", message: `The rendered subject is ${rendered.length} characters; the limit is ${MAX_RENDERED_SUBJECT_CHARS}`, code: "too_big" },
    ]);
  }
  return rendered;
}

/**
 * Renders an HTML body. In an HTML body each value is HTML-escaped. In a
 * markdown body each value stands in the markdown as an opaque placeholder
 * and is put into the finished HTML as escaped text, so no value can make a
 * link, image, autolink, emphasis or raw HTML, and a value inside a code span
 * shows exactly as it is. Either way, the finished HTML keeps only safe URLs
 * (see `keepSafeUrls`).
 */
export async function renderBody(template: string, vars: RenderVariables, format: "html" | "markdown" = "html", budget = new RenderBudget()) {
  if (format === "html") return assertRenderedHtml(await keepSafeUrls(await render("html", template, vars, "body", MAX_RENDERED_HTML_BYTES, budget)));
  const values: string[] = [];
  let valueChars = 0;
  // Letters and digits only: nothing markdown (or GFM's bare-URL autolinks) reads as syntax.
  const nonce = crypto.randomUUID().replace(/-/g, "");
  const placeholder = new RegExp(`mdv${nonce}n(\\d+)x`, "g");
  const engine = await newLiquid({
    outputEscape: (value: unknown) => {
      const text = liquidText(value);
      // The values wait outside the markdown until the end: they count towards the same 1 MB.
      valueChars += text.length;
      if (valueChars > MAX_RENDERED_HTML_BYTES) {
        throw new RenderLimitError("too_big", `The rendered body is longer than ${MAX_RENDERED_HTML_BYTES} characters`);
      }
      return `mdv${nonce}n${values.push(text) - 1}x`;
    },
  });
  const markdown = assertMarkdownSize(await render(engine, template, vars, "body", MAX_RENDERED_HTML_BYTES, budget));
  const { marked } = await import("marked");
  let html: string;
  try {
    html = await marked.parse(markdown, { async: true });
  } catch (err) {
    // e.g. blockquotes nested thousands deep overflow marked's stack.
    const detail = err instanceof Error ? err.message.split("\n")[0] : String(err);
    throw ApiError.validation([{ field: "body", message: `The markdown body cannot be converted: ${detail}`, code: "invalid_markdown" }]);
  }
  return assertRenderedHtml(await keepSafeUrls(html.replace(placeholder, (_all, i: string) => escapeHtml(values[Number(i)] ?? ""))));
}

/** Longest markdown body (after Liquid), in characters: marked's cost grows faster than its input. */
export const MAX_MARKDOWN_CHARS = 64 * 1024;
/** Most emphasis delimiters (`*` and `_`) in one markdown body: marked's emphasis pass is quadratic in them. */
export const MAX_MARKDOWN_EMPHASIS = 1_000;

function assertMarkdownSize(markdown: string): string {
  if (markdown.length > MAX_MARKDOWN_CHARS) {
    throw ApiError.validation([
      { field: "body", message: `The markdown body is ${markdown.length} characters; the limit is ${MAX_MARKDOWN_CHARS}`, code: "too_big" },
    ]);
  }
  let delimiters = 0;
  for (let i = 0; i < markdown.length; i++) {
    const c = markdown.charCodeAt(i);
    if (c === 42 || c === 95) delimiters++;
  }
  if (delimiters > MAX_MARKDOWN_EMPHASIS) {
    throw ApiError.validation([
      { field: "body", message: `The markdown body has ${delimiters} * and _ characters; the limit is ${MAX_MARKDOWN_EMPHASIS}`, code: "too_big" },
    ]);
  }
  return markdown;
}

function assertRenderedHtml(html: string): string {
  assertMaxBytes(html, MAX_RENDERED_HTML_BYTES, "body", "HTML body");
  return html;
}

/** A value as Liquid prints it: nil is empty, arrays are joined, everything else is String(). */
function liquidText(value: unknown): string {
  if (value === null || value === undefined) return "";
  if (Array.isArray(value)) return value.map(liquidText).join("");
  return String(value);
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

/** Checks a stored template's syntax without rendering it for anyone. */
export async function assertTemplateSyntax(template: string, field: string) {
  const { html: htmlEngine } = await liquidEngines();
  try {
    checkedTagCount(template);
    htmlEngine.parse(translateDefaults(template));
  } catch (err) {
    if (err instanceof RenderLimitError) throw ApiError.validation([{ field, message: err.message, code: err.code }]);
    const detail = err instanceof Error ? err.message.split("\n")[0] : String(err);
    throw ApiError.validation([{ field, message: `Template error: ${detail}`, code: "template_error" }]);
  }
}
