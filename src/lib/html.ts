import type { Context } from "hono";

/** Text made safe inside HTML element content and quoted attribute values. */
export const escapeHtml = (text: string) =>
  text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;").replace(/'/g, "&#39;");

/**
 * A small HTML page answered to a person following a signed link (the
 * unsubscribe and double opt-in pages): `title` as its heading, `text` under
 * it, then `extra` (a form). The caller escapes what it puts in; never cached.
 */
export function htmlPage(c: Context, status: 200 | 400 | 404 | 410, title: string, text: string, extra = ""): Response {
  const page = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex"><title>${title}</title>
<style>body{font-family:system-ui,sans-serif;max-width:32rem;margin:4rem auto;padding:0 1rem;color:#222;line-height:1.5}button{font:inherit;padding:.5rem 1.25rem;cursor:pointer}</style>
</head><body><h1>${title}</h1><p>${text}</p>${extra}</body></html>`;
  return c.body(page, status, { "Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-store" });
}
