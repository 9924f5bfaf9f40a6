import { Liquid } from "liquidjs";
import { marked } from "marked";
import type { JsonObject } from "../../db/schema";
import { ApiError } from "../../lib/errors";

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

/** Renders an HTML body; `markdown` bodies are rendered first (values escaped) and then turned into HTML. */
export async function renderBody(template: string, vars: RenderVariables, format: "html" | "markdown" = "html") {
  const rendered = await render(htmlEngine, template, vars, "body");
  return format === "markdown" ? await marked.parse(rendered, { async: true }) : rendered;
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
