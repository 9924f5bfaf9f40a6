// GET /contacts: the first page against a page deep inside a long list (keyset pagination).
import { performance } from "node:perf_hooks";
import { fmt, latency, log, report, send, settings } from "./lib.mjs";

export const listSection = {
  key: "list",
  title: `GET /contacts latency with ${settings.listContacts} contacts`,
  async run(ctx) {
    const key = ctx.list.secretKey;
    const { page } = settings;
    const first = await send(ctx.server.base, { path: "/contacts?limit=1", key });
    const total = JSON.parse(first.text).total;
    if (total !== settings.listContacts) throw new Error(`expected ${settings.listContacts} contacts, the API counts ${total}`);

    // Walk the list with cursors to a position deep inside it (49,000 rows in with 50,000).
    const target = Math.max(page, settings.listContacts - 1000);
    let cursor = null;
    let seen = 0;
    const walkStart = performance.now();
    while (seen < target) {
      const limit = Math.min(100, target - seen);
      const res = await send(ctx.server.base, { path: `/contacts?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`, key });
      const body = JSON.parse(res.text);
      seen += body.contacts.length;
      cursor = body.cursor;
      if (!cursor) throw new Error(`the list ended after ${seen} contacts`);
    }
    log(`walked ${seen} contacts with cursors in ${fmt((performance.now() - walkStart) / 1000)} s`);

    const firstPage = await latency(ctx.server.base, { path: `/contacts?limit=${page}`, key });
    const deepPage = await latency(ctx.server.base, { path: `/contacts?limit=${page}&cursor=${encodeURIComponent(cursor)}`, key });
    report(`GET /contacts, page after ${seen} / first page (median)`, `${fmt(deepPage.median / firstPage.median, 2)}x`, {
      goal: "close to 1 (keyset pagination)",
      shape: `limit ${page}, one request at a time`,
      detail: `first ${fmt(firstPage.median, 2)} ms (p95 ${fmt(firstPage.p95, 2)}), deep ${fmt(deepPage.median, 2)} ms (p95 ${fmt(deepPage.p95, 2)}), ${settings.latencySamples} each`,
    });
  },
};
