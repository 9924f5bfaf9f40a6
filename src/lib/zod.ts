// zod for this service's schemas, imported as `import * as z from ".../lib/zod"` so the
// bundler keeps only the zod functions in use (docs/performance.md "Bundle size").
// Importing @hono/zod-openapi first adds .openapi() to zod's schemas.
import "@hono/zod-openapi";
export * from "zod";
