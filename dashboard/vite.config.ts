import { fileURLToPath } from "node:url";
import preact from "@preact/preset-vite";
import { defineConfig } from "vite";

// Built by scripts/dashboard-build.mjs into public/app/, served by the Worker's static assets at /app.
export default defineConfig({
  root: fileURLToPath(new URL(".", import.meta.url)),
  base: "/app/",
  plugins: [preact()],
  build: {
    outDir: fileURLToPath(new URL("../public/app", import.meta.url)),
    emptyOutDir: true,
    target: "es2022",
    // Every script is a file of this origin (CSP script-src 'self'): no inline module-preload polyfill.
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    reportCompressedSize: false,
    // The visual email editor (GrapesJS and its newsletter preset, editor-grapes.ts) is one lazy chunk of
    // about 1.5 MB (390 KB gzip), loaded only on the campaign and template editors; the first load stays small.
    chunkSizeWarningLimit: 1600,
  },
});
