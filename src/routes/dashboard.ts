import type { Context } from "hono";
import type { Env } from "../env";

/**
 * The dashboard (dashboard/, built into public/app/ by scripts/dashboard-build.mjs) is
 * static assets; its files are served before the Worker runs, with this policy from
 * public/_headers. A deep link (/app/campaigns/123) matches no file and reaches the
 * Worker, which answers the app's index.html with the same policy.
 *
 * Scripts only from this origin, none inline. Inline styles are allowed because email
 * previews (sandboxed srcdoc frames, which inherit this policy) depend on them, as do
 * remote images (https:) in those emails; a sandboxed frame runs no script at all.
 */
export const DASHBOARD_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: https:",
  "font-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

export async function dashboardPage(c: Context<{ Bindings: Env }>) {
  // A missing script or style is a 404, not the page.
  if (c.req.path.startsWith("/app/assets/") || !c.env.ASSETS) return c.notFound();
  const index = await c.env.ASSETS.fetch(new URL("/app/", c.req.url));
  if (!index.ok) return c.text("The dashboard is not built: run `npm install` (or node scripts/dashboard-build.mjs).", 503);
  return new Response(index.body, {
    status: 200,
    headers: {
      "Content-Type": "text/html; charset=utf-8",
      "Content-Security-Policy": DASHBOARD_CSP,
      "Cache-Control": "no-cache",
      "X-Content-Type-Options": "nosniff",
      "Referrer-Policy": "no-referrer",
    },
  });
}
