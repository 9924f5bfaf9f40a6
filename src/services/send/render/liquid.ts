import type { Liquid, LiquidOptions } from "liquidjs";
import type { JsonObject } from "../../../db/schema";
import { ApiError } from "../../../lib/errors";
import { translateDefaults } from "../../../lib/template-defaults";
import { TtlCache } from "../../../lib/ttl-cache";
import { CappedEmitter, checkedTagCount, limitErrorIn, type RenderBudget, RenderLimitError } from "./limits";

/**
 * Template variables (docs/getting-started.md "Sending email"): `{{name}}` and
 * `{{data.name}}` fill from the request's data, falling back to the contact's
 * data; `{{name ?? default}}` gives a default (lib/template-defaults.ts); a
 * missing variable renders empty. Built-ins: `{{email}}` and
 * `{{unsubscribeUrl}}` (and `{{confirmUrl}}` in a double opt-in confirmation).
 * Liquid does the work: its engines (loaded on first use), the parse cache,
 * and the static analysis of what a template reads.
 */

const engineOptions = {
  strictVariables: false,
  strictFilters: true,
  // Bound the cost of a hostile template (Workers have a CPU limit per invocation).
  parseLimit: 1_000_000,
  // Renders of a request share one RenderBudget (limits.ts); these are Liquid's per-call defaults.
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
export const newLiquid = async (options: LiquidOptions) => {
  await liquidEngines();
  return new liquidjs!.Liquid({ ...engineOptions, ...options });
};

export interface RenderVariables {
  /** Contact data merged with the request's data (request wins). */
  data: JsonObject;
  email: string;
  unsubscribeUrl: string;
  /** The signed link of the recipient's preference page (`{{preferencesUrl}}`); "" where there is none. */
  preferencesUrl?: string;
  /** A double opt-in confirmation's signed confirm link. */
  confirmUrl?: string;
}

function scope(vars: RenderVariables) {
  const base = { ...vars.data, data: vars.data, email: vars.email, unsubscribeUrl: vars.unsubscribeUrl, preferencesUrl: vars.preferencesUrl ?? "" };
  return vars.confirmUrl === undefined ? base : { ...base, confirmUrl: vars.confirmUrl };
}

function stringify(value: unknown): string {
  const plain = liquidjs && value instanceof liquidjs.Drop && typeof value.valueOf === "function" ? value.valueOf() : value;
  if (typeof plain === "string") return plain;
  if (plain === null || plain === undefined) return "";
  if (Array.isArray(plain)) return plain.map(stringify).join("");
  return String(plain);
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

/**
 * Renders `template` with `vars` on an engine ("html" escapes values, "text"
 * does not, or one of newLiquid's), its output capped at `maxChars` and its
 * work on `budget`; every failure is a 422 naming `field`.
 */
export async function renderTemplate(
  engine: Liquid | "html" | "text",
  template: string,
  vars: RenderVariables,
  field: string,
  maxChars: number,
  budget: RenderBudget,
): Promise<string> {
  const emitter = new CappedEmitter(maxChars, field, stringify);
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
const BUILT_IN_VARIABLES = new Set(["email", "unsubscribeUrl", "preferencesUrl"]);
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

/** A value as Liquid prints it: nil is empty, arrays are joined, everything else is String(). */
export function liquidText(value: unknown): string {
  if (value === null || value === undefined) return "";
  if (Array.isArray(value)) return value.map(liquidText).join("");
  return String(value);
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
