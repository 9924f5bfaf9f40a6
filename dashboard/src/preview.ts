/**
 * Live previews: a template's or campaign's subject and HTML rendered in the
 * browser with sample data, the way the API renders mail (src/services/send/render/):
 * Liquid with HTML-escaped output and the server's per-call limits, `{{name ?? fallback}}` turned
 * into Liquid by the server's own code (src/lib/template-defaults.ts),
 * data keys at the top level and under `data`, plus `email` and `unsubscribeUrl`.
 * liquidjs is loaded on the first preview, not with the app.
 */
import type { Liquid } from "liquidjs";
import { translateDefaults } from "../../src/lib/template-defaults";

let engines: Promise<{ html: Liquid; text: Liquid }> | undefined;
const load = () =>
  (engines ??= import("liquidjs").then(({ Liquid }) => {
    const options = { strictVariables: false, strictFilters: true, parseLimit: 1_000_000, renderLimit: 5_000, memoryLimit: 10_000_000 };
    return { html: new Liquid({ ...options, outputEscape: "escape" }), text: new Liquid(options) };
  }));

export const SAMPLE_DATA = '{\n  "firstName": "Ada",\n  "plan": "pro"\n}';

export interface Preview {
  subject: string;
  html: string;
  error?: string;
}

/** Renders `subject` and `body` with the sample data (JSON text); a syntax error is reported, not thrown. */
export async function renderPreview(subject: string, body: string, sampleJson: string, email = "ada@example.com"): Promise<Preview> {
  let data: Record<string, unknown>;
  try {
    const parsed = JSON.parse(sampleJson || "{}") as unknown;
    if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) throw new Error("Sample data must be a JSON object");
    data = parsed as Record<string, unknown>;
  } catch (err) {
    return { subject, html: body, error: `Sample data: ${err instanceof Error ? err.message : err}` };
  }
  const scope = { ...data, data, email, unsubscribeUrl: `${location.origin}/unsubscribe/preview` };
  try {
    const { html, text } = await load();
    const [s, h] = await Promise.all([text.parseAndRender(translateDefaults(subject), scope), html.parseAndRender(translateDefaults(body), scope)]);
    return { subject: s, html: h };
  } catch (err) {
    return { subject, html: body, error: `Template: ${err instanceof Error ? err.message : err}` };
  }
}
