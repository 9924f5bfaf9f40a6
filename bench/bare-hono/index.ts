// The baseline of `npm run bench`'s startup figure: a bare Hono worker, built and
// profiled the same way as the service (wrangler check startup, minify on).
import { Hono } from "hono";

const app = new Hono();
app.get("/health", (c) => c.json({ status: "ok" }));

export default app;
