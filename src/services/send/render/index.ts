import { ApiError } from "../../../lib/errors";
import { escapeHtml, keepSafeUrls } from "../../../lib/html";
import { liquidText, newLiquid, type RenderVariables, renderTemplate as render } from "./liquid";
import { assertMarkdownSize, assertRenderedHtml, MAX_RENDERED_HTML_BYTES, MAX_RENDERED_SUBJECT_CHARS, RenderBudget, RenderLimitError } from "./limits";

/**
 * Rendering an email's subject and body for one recipient (Liquid: liquid.ts;
 * limits: limits.ts; the HTML URL safety: lib/html.ts).
 */

export { assertTemplateSyntax, type RenderVariables, rendersFromDataKeys } from "./liquid";
export { RENDER_STEP_BUDGET, RenderBudget } from "./limits";

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
