import type { Context } from "hono";

/**
 * GET /docs: the API reference (Swagger UI over /openapi.json). The UI's
 * script and styles are Workers static assets copied from the pinned
 * swagger-ui-dist package (scripts/docs-assets.mjs), so the page loads
 * nothing from another origin and works offline. The CSP says so: a
 * deployment behind a strict policy renders it unchanged.
 */
export const DOCS_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

const DOCS_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Edge Mail API</title>
<link rel="stylesheet" href="/docs-assets/vendor/swagger-ui.css">
</head>
<body>
<noscript>The API reference needs JavaScript; the machine-readable description is at <a href="/openapi.json">/openapi.json</a>.</noscript>
<div id="docs"></div>
<script src="/docs-assets/vendor/swagger-ui-bundle.js"></script>
<script src="/docs-assets/init.js"></script>
</body>
</html>
`;

export function docsPage(c: Context) {
  return c.html(DOCS_HTML, 200, { "Content-Security-Policy": DOCS_CSP });
}
