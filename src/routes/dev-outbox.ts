import { desc, eq } from "drizzle-orm";
import { Hono } from "hono";
import { html, raw } from "hono/html";
import { getDb } from "../db/client";
import { shardDb, shardIds } from "../db/shards";
import { capturedMessages } from "../db/schema";
import type { AppBindings } from "../lib/context";
import { base64ToUtf8 } from "../lib/base64";
import { readConfig } from "../lib/config";
import { ApiError } from "../lib/errors";
import { d1Stats } from "../lib/d1-counter";
import { readCapturedMail } from "../store/objects/captured";

/**
 * GET /dev/outbox: mail kept by the `capture` provider, for local development
 * only (ENVIRONMENT=development); everywhere else these paths are 404. Not part
 * of the public API, so not in the OpenAPI document.
 */
export const devOutboxRouter = new Hono<AppBindings>();

devOutboxRouter.use("/dev/*", async (c, next) => {
  if (!readConfig(c.env).development) throw new ApiError("NOT_FOUND", `No route for ${c.req.method} ${c.req.path}`);
  await next();
});

const layout = (title: string, body: unknown) => html`<!doctype html>
  <html>
    <head>
      <meta charset="utf-8" />
      <title>${title}</title>
      <style>
        body { font: 14px system-ui, sans-serif; margin: 2rem; color: #222; }
        table { border-collapse: collapse; width: 100%; }
        td, th { text-align: left; padding: .4rem .6rem; border-bottom: 1px solid #eee; vertical-align: top; }
        pre { background: #f6f6f6; padding: 1rem; overflow: auto; white-space: pre-wrap; }
        iframe { width: 100%; height: 60vh; border: 1px solid #ddd; }
      </style>
    </head>
    <body>
      ${body}
    </body>
  </html>`;

/** The HTML part of a captured message (base64 leaf after a text/html header), for display. */
function htmlPart(message: string): string {
  const match = /Content-Type: text\/html[^\r\n]*\r\nContent-Transfer-Encoding: base64\r\n\r\n([A-Za-z0-9+/=\r\n]+?)(?:\r\n\r\n|\r\n--)/.exec(message);
  if (!match) return "";
  return base64ToUtf8(match[1]);
}

devOutboxRouter.get("/dev/outbox", async (c) => {
  // Every data shard's captured mail (src/db/shards.ts), newest first.
  const perShard = await Promise.all(
    shardIds(c.env).map((shard) => getDb(shardDb(c.env, shard)).select().from(capturedMessages).orderBy(desc(capturedMessages.id)).limit(100)),
  );
  const rows = perShard
    .flat()
    .sort((a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0))
    .slice(0, 100);
  return c.html(
    layout(
      "Outbox",
      html`<h1>Outbox</h1>
        <p>Mail captured by the local <code>capture</code> provider (newest first, last 100).</p>
        <table>
          <tr><th>When</th><th>From</th><th>To</th><th>Subject</th><th></th></tr>
          ${rows.map(
            (m) => html`<tr>
              <td>${m.createdAt.toISOString()}</td>
              <td>${m.fromAddress}</td>
              <td>${m.toAddress}</td>
              <td><a href="/dev/outbox/${m.id}">${m.subject}</a></td>
              <td><a href="/dev/outbox/${m.id}.eml">.eml</a></td>
            </tr>`,
          )}
        </table>`,
    ),
  );
});

devOutboxRouter.get("/dev/outbox/:file", async (c) => {
  const file = c.req.param("file");
  const id = file.replace(/\.eml$/, "");
  let captured: typeof capturedMessages.$inferSelect | undefined;
  for (const shard of shardIds(c.env)) {
    captured = await getDb(shardDb(c.env, shard)).query.capturedMessages.findFirst({ where: eq(capturedMessages.id, id) });
    if (captured) break;
  }
  if (!captured) throw ApiError.notFound("Captured message");
  const message = await readCapturedMail(c.env.STORAGE, { key: captured.objectKey, offset: captured.objectOffset, size: captured.size });
  if (message === null) throw ApiError.notFound("Captured message");
  if (file.endsWith(".eml")) {
    return c.body(message, 200, {
      "content-type": "message/rfc822",
      "content-disposition": `attachment; filename="${captured.id}.eml"`,
    });
  }
  const headerBlock = message.slice(0, message.indexOf("\r\n\r\n"));
  return c.html(
    layout(
      captured.subject,
      html`<p><a href="/dev/outbox">&larr; Outbox</a> · <a href="/dev/outbox/${captured.id}.eml">Download .eml</a></p>
        <h1>${captured.subject}</h1>
        <pre>${headerBlock}</pre>
        <iframe sandbox srcdoc="${raw(htmlPart(message).replace(/&/g, "&amp;").replace(/"/g, "&quot;"))}"></iframe>`,
    ),
  );
});

/** D1 statements counted since the isolate started (BENCH_COUNT_D1=1; all zero otherwise). */
devOutboxRouter.get("/dev/d1-stats", (c) => c.json({ ...d1Stats, counting: readConfig(c.env).BENCH_COUNT_D1 }));

/**
 * One D1 round trip and nothing else (`SELECT 1` in a batch, no key, no
 * validation): `npm run bench` measures it beside GET /health to show what a
 * single round trip to the local D1 costs here, the ceiling for any path that
 * makes one (docs/performance.md). As a POST it first reads the JSON body, so its
 * body crosses the same local proxies /v1/track's and POST /contacts' do: the
 * ceiling for a POST path with one round trip.
 */
devOutboxRouter.on(["GET", "POST"], "/dev/d1-round-trip", async (c) => {
  if (c.req.method === "POST") await c.req.json().catch(() => null);
  await c.env.DB.batch([c.env.DB.prepare("SELECT 1")]);
  return c.json({ status: "ok" });
});
