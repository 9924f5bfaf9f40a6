import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { getDb } from "../../../src/db/client";
import { emails } from "../../../src/db/schema";
import { translateDefaults } from "../../../src/lib/template-defaults";
import { countTemplateTags, MAX_MARKDOWN_CHARS, MAX_TEMPLATE_TAGS } from "../../../src/services/send/render/limits";
import { expectError } from "../../support/http";
import { sendingSetup } from "../../support/sending";
import type { Template } from "../../support/api";

/** The HTML stored for an email (what the consumer will send). */
async function storedHtml(emailId: string) {
  const [row] = await getDb(env.DB).select({ html: emails.html }).from(emails).where(eq(emails.id, emailId));
  return row.html;
}

/**
 * Inputs whose parse, rewrite or URL check cost grew
 * faster than their size. Each must get its answer (a 422 naming the field, or
 * the email accepted as it is) without that cost; on the code before the fix
 * these requests ran for seconds to minutes and hit the test's time limit.
 */
describe("rendering cost is bounded before the work starts", () => {
  it(`a body of 100,000 {{a}} outputs is a 422 naming body (more than ${MAX_TEMPLATE_TAGS} tags), on /v1/send, templates and campaigns`, async () => {
    const s = await sendingSetup();
    const body = "{{a}}".repeat(100_000);
    const sent = await s.send({ to: "ada@example.com", from: s.from, subject: "Hi", body, data: { a: 1 } });
    const error = expectError(sent, 422, "VALIDATION_ERROR");
    expect(error.errors).toEqual([expect.objectContaining({ field: "body", code: "too_many_tags" })]);
    expect(error.errors![0].message).toContain(String(MAX_TEMPLATE_TAGS));
    expect(s.queue.messages).toHaveLength(0);

    const template = await s.post("/templates", { name: "Big", subject: "Hi", body, type: "TRANSACTIONAL" });
    expect(expectError(template, 422, "VALIDATION_ERROR").errors!.map((e) => [e.field, e.code])).toEqual([["body", "too_many_tags"]]);
    const created = await s.post<Template>("/templates", { name: "Small", subject: "Hi", body: "<p>{{a}}</p>", type: "TRANSACTIONAL" });
    expect(created.status).toBe(201);
    const patched = await s.request("PATCH", `/templates/${created.body.id}`, { body: "{{a}}".repeat(MAX_TEMPLATE_TAGS + 1) });
    expect(expectError(patched, 422, "VALIDATION_ERROR").errors!.map((e) => [e.field, e.code])).toEqual([["body", "too_many_tags"]]);

    const campaign = await s.post("/campaigns", { name: "Big", subject: "Hi", body, from: s.from, audienceType: "ALL" });
    expect(expectError(campaign, 422, "VALIDATION_ERROR").errors!.map((e) => [e.field, e.code])).toEqual([["body", "too_many_tags"]]);
  });

  it("a template at the tag cap is accepted and renders; one tag more is refused; lines of {% liquid %} count as tags", async () => {
    const s = await sendingSetup();
    const atCap = "{{a}}".repeat(MAX_TEMPLATE_TAGS);
    const sent = await s.send({ to: "ada@example.com", from: s.from, subject: "Hi", body: atCap, data: { a: "x" } });
    expect(sent.status, JSON.stringify(sent.body).slice(0, 300)).toBe(200);
    expect(await storedHtml(sent.body.data.emails[0].email)).toBe("x".repeat(MAX_TEMPLATE_TAGS));

    const liquidLines = `{% liquid\n${"echo a\n".repeat(MAX_TEMPLATE_TAGS)}%}`;
    expect(countTemplateTags(liquidLines)).toBeGreaterThan(MAX_TEMPLATE_TAGS);
    const refused = await s.send({ to: "ada@example.com", from: s.from, subject: "Hi", body: liquidLines, data: { a: "x" } });
    expect(expectError(refused, 422, "VALIDATION_ERROR").errors!.map((e) => e.field)).toEqual(["body"]);
  });

  it("`{{a ?? x` followed by 200,000 spaces (never closed) is a 422 template error naming body", async () => {
    const s = await sendingSetup();
    const sent = await s.send({ to: "ada@example.com", from: s.from, subject: "Hi", body: `<p>{{a ?? x${" ".repeat(200_000)}</p>` });
    const error = expectError(sent, 422, "VALIDATION_ERROR");
    expect(error.errors!.map((e) => [e.field, e.code])).toEqual([["body", "template_error"]]);
  });

  it("an HTML body of `<a href=href=href=...>` (200 KB) is accepted and stored unchanged (a relative link is safe)", async () => {
    const s = await sendingSetup();
    const html = `<a href=${"href=".repeat(40_000)}>x</a>`;
    const sent = await s.send({ to: "ada@example.com", from: s.from, subject: "Hi", body: html });
    expect(sent.status, JSON.stringify(sent.body).slice(0, 300)).toBe(200);
    expect(await storedHtml(sent.body.data.emails[0].email)).toBe(html);
  });

  it("the rewriter still removes a javascript: link hidden behind many re-read spots", async () => {
    const s = await sendingSetup();
    const html = `<a title=${"href=".repeat(100)} href="javascript:alert(1)">x</a>`;
    const sent = await s.send({ to: "ada@example.com", from: s.from, subject: "Hi", body: html });
    expect(sent.status).toBe(200);
    const stored = await storedHtml(sent.body.data.emails[0].email);
    expect(stored).not.toContain("javascript:");
    expect(stored).toContain(">x</a>");
  });

  it('a style attribute of 200 KB of "url(" is removed, quickly, with the rest of the element kept', async () => {
    const s = await sendingSetup();
    const sent = await s.send({ to: "ada@example.com", from: s.from, subject: "Hi", body: `<p style="${"url(".repeat(50_000)}">x</p>` });
    expect(sent.status).toBe(200);
    expect(await storedHtml(sent.body.data.emails[0].email)).toBe("<p>x</p>");
  });

  it(`a markdown body of _a repeated to 80 KB is a 422 naming body (markdown is capped at ${MAX_MARKDOWN_CHARS} characters)`, async () => {
    const s = await sendingSetup();
    const sent = await s.send({ to: "ada@example.com", from: s.from, subject: "Hi", type: "markdown", body: "_a".repeat(40_000) });
    const error = expectError(sent, 422, "VALIDATION_ERROR");
    expect(error.errors!.map((e) => [e.field, e.code])).toEqual([["body", "too_big"]]);
    // Under the size cap, a body made of emphasis delimiters is refused too (marked is quadratic in them).
    const delimiters = await s.send({ to: "ada@example.com", from: s.from, subject: "Hi", type: "markdown", body: "_a".repeat(16_000) });
    expect(expectError(delimiters, 422, "VALIDATION_ERROR").errors!.map((e) => e.field)).toEqual(["body"]);
    // Blockquotes nested past marked's stack are a 422, not a 500.
    const nested = await s.send({ to: "ada@example.com", from: s.from, subject: "Hi", type: "markdown", body: ">".repeat(30_000) });
    expect(expectError(nested, 422, "VALIDATION_ERROR").errors!.map((e) => e.field)).toEqual(["body"]);
    const ordinary = await s.send({ to: "ada@example.com", from: s.from, subject: "Hi", type: "markdown", body: "# Hello\n\n_Welcome_ **aboard**" });
    expect(ordinary.status).toBe(200);
  });
});

describe("translateDefaults (the `??` rewrite) in one pass", () => {
  // The rewrite before the linear scanner, as the reference for what it must produce.
  const reference = (template: string) =>
    template.replace(/\{\{\s*([A-Za-z_][\w.-]*)\s*\?\?\s*(.*?)\s*\}\}/g, (_all, name: string, fallback: string) => {
      const unquoted = /^(["']).*\1$/.test(fallback) ? fallback.slice(1, -1) : fallback;
      const quote = unquoted.includes('"') ? "'" : '"';
      return `{{ ${name} | default: ${quote}${unquoted.replace(new RegExp(quote, "g"), "")}${quote} }}`;
    });

  it("matches the old regular expression on the documented forms and on random inputs", () => {
    const fixed = [
      "Hi {{firstName ?? friend}}",
      "{{ a ?? 'x y' }} and {{b??\"q\"}}",
      "{{a ?? it's}}",
      "{{a ??}}",
      "{{a ?? x\n}}",
      "{{a ??\n x}}",
      "{{a ?? x\ny}} {{b ?? z}}",
      "{{{a ?? b}}}",
      "{{a.b-c ?? d}}} {{ 1a ?? x}}",
      "{{a ?? x",
    ];
    for (const t of fixed) expect(translateDefaults(t), JSON.stringify(t)).toBe(reference(t));
    const alphabet = ["{{", "}}", "{", "}", "??", "?", " ", "\n", "a", "b.c", "'", '"', "x", "1", "-"];
    let seed = 42;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    for (let n = 0; n < 3000; n++) {
      let t = "";
      const length = 1 + Math.floor(random() * 14);
      for (let i = 0; i < length; i++) t += alphabet[Math.floor(random() * alphabet.length)];
      expect(translateDefaults(t), JSON.stringify(t)).toBe(reference(t));
    }
  });
});
