// Starts the API reference UI on GET /docs. A file rather than an inline
// script, so the page works under a CSP of script-src 'self'.
window.addEventListener("DOMContentLoaded", () => {
  window.ui = SwaggerUIBundle({
    url: "/openapi.json",
    dom_id: "#docs",
    deepLinking: true,
    // Operations open on click; the list itself is what a reader scans first.
    docExpansion: "list",
    defaultModelsExpandDepth: 0,
    tryItOutEnabled: false,
  });
});
