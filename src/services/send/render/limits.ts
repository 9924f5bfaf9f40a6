import { ApiError } from "../../../lib/errors";
import { isNameChar, isSpace } from "../../../lib/template-defaults";

/**
 * The limits of rendering, so a hostile template or value cannot take the
 * Worker's CPU or memory: one work budget per request (RenderBudget), output
 * capped as it is written (CappedEmitter), tags counted before parsing, and
 * the sizes of subjects, bodies and markdown.
 */

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

/** A render limit passed (a 422 naming the field, with `code`). */
export class RenderLimitError extends Error {
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
export function limitErrorIn(err: unknown): RenderLimitError | null {
  for (let e = err, depth = 0; e && depth < 5; e = (e as { originalError?: unknown }).originalError, depth++) {
    if (e instanceof RenderLimitError) return e;
  }
  return null;
}

/** Collects Liquid's output and stops the render as soon as it passes `maxChars`, long before memory runs out. */
export class CappedEmitter {
  buffer = "";
  exceeded: RenderLimitError | null = null;
  constructor(
    private readonly maxChars: number,
    private readonly what: string,
    /** How an output value reads as text (Liquid's, for its Drops). */
    private readonly text: (value: unknown) => string,
  ) {}
  write(html: unknown) {
    this.buffer += this.text(html);
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
export function checkedTagCount(template: string): number {
  const tags = countTemplateTags(template);
  if (tags > MAX_TEMPLATE_TAGS) {
    throw new RenderLimitError("too_many_tags", `The template has more than ${MAX_TEMPLATE_TAGS} tags and outputs ({{ }} and {% %})`);
  }
  return tags;
}

/** 422 naming `field` when `text` is longer than `max` UTF-8 bytes. */
export function assertMaxBytes(text: string, max: number, field: string, what: string) {
  const bytes = new TextEncoder().encode(text).length;
  if (bytes > max) {
    throw ApiError.validation([{ field, message: `The rendered ${what} is ${bytes} bytes; the limit is ${max}`, code: "too_big" }]);
  }
}

/** Longest markdown body (after Liquid), in characters: marked's cost grows faster than its input. */
export const MAX_MARKDOWN_CHARS = 64 * 1024;
/** Most emphasis delimiters (`*` and `_`) in one markdown body: marked's emphasis pass is quadratic in them. */
export const MAX_MARKDOWN_EMPHASIS = 1_000;

export function assertMarkdownSize(markdown: string): string {
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

export function assertRenderedHtml(html: string): string {
  assertMaxBytes(html, MAX_RENDERED_HTML_BYTES, "body", "HTML body");
  return html;
}
