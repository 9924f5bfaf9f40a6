// Received mail (issue 37), standalone: `wrangler dev` servers of its own on throwaway state
// (.wrangler/bench-inbound-state), INBOUND_DOMAIN=in.bench.test, the capture provider.
// 1. BENCH_INBOUND_MESSAGES (1,000) emails sent with trackReplies to as many contacts; each one's
//    reply address and Message-ID read from its captured .eml (/dev/outbox), as a mail client sees them.
// 2. A reply of about 20 KB to each (text and HTML, the answer on top, the quoted original below),
//    from its contact to its reply address, posted to wrangler's local email handler
//    (/cdn-cgi/handler/email) at BENCH_INBOUND_CONCURRENCY (8) as fast as it takes them; timed
//    from the first delivery until every one is parsed and linked (the email.received event is
//    written in the batch that marks the row PARSED), then checked through GET /inbound: every
//    one PARSED, match TOKEN, linked to the email it answers. Goal: 1,000 a minute or better.
// 3. The Worker's memory for one message at INBOUND_MAX_BYTES (10 MiB: above the 8 MiB parse cap,
//    so its headers and first 256 KiB are parsed) and for one at the parse cap (parsed whole): the
//    resident memory of the server's workerd processes (the whole local runtime: the Worker, and
//    the local R2, D1 and queues it talks to) before, at its peak (sampled every 20 ms) and after.
//    wrangler's local email handler takes at most 1 MiB, so these go through a second server whose
//    entry (generated into .wrangler/bench-inbound-worker/) is the service's own, plus one route,
//    POST /__bench/email?from=&to=, that hands the request body to the same email() export as a
//    stream with its size, as Email Routing does.
// Environment: BENCH_INBOUND_MESSAGES, BENCH_INBOUND_CONCURRENCY, BENCH_INBOUND_STATE.
// `npm run bench:inbound` runs only this section.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { performance } from "node:perf_hooks";
import {
  api,
  applyMigrations,
  check,
  createProject,
  executeSql,
  fmt,
  log,
  report,
  send,
  serverCpuMs,
  sleep,
  startServer,
  verifiedDomainSql,
  workerdRss,
} from "./lib.mjs";

const STATE_DIR = process.env.BENCH_INBOUND_STATE ?? ".wrangler/bench-inbound-state";
const MESSAGES = Number(process.env.BENCH_INBOUND_MESSAGES ?? 1000);
const CONCURRENCY = Number(process.env.BENCH_INBOUND_CONCURRENCY ?? 8);
const DOMAIN = "bench.test";
const INBOUND_DOMAIN = "in.bench.test";
const REPLY_BYTES = 20 * 1024;
const INBOUND_MAX_BYTES = 10 * 1024 * 1024; // its default (src/lib/config.ts)
const PARSE_CAP_BYTES = 8 * 1024 * 1024; // src/services/inbound/parse.ts
const WORKER_DIR = ".wrangler/bench-inbound-worker";

const mb = (bytes) => `${fmt(bytes / 1024 / 1024, 0)} MB`;

async function waitFor(what, read, done, timeoutMs, pollMs = 250) {
  const deadline = performance.now() + timeoutMs;
  let value = await read();
  while (!done(value)) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what} (last: ${JSON.stringify(value).slice(0, 300)})`);
    await sleep(pollMs);
    value = await read();
  }
  return value;
}

/** Runs `worker(i)` for i in 0..n-1, `concurrency` at a time. */
async function pool(n, concurrency, worker) {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) await worker(next++);
    }),
  );
}

/** Every item of a list route (cursor pagination, 100 a page). */
async function all(base, key, path) {
  const items = [];
  let cursor;
  do {
    const page = await api(base, key, "GET", `${path}${path.includes("?") ? "&" : "?"}limit=100${cursor ? `&cursor=${cursor}` : ""}`);
    items.push(...page.data.items);
    cursor = page.data.hasMore ? page.data.nextCursor : null;
  } while (cursor);
  return items;
}

const header = (eml, name) => new RegExp(`^${name}:\\s*(.*?)\\r?$`, "im").exec(eml)?.[1] ?? null;

/** Sends `n` emails with tracked replies; each one's id, recipient, reply address and Message-ID as its captured mail has them. */
async function sentEmails(base, key, n) {
  for (let i = 0; i < n; i += 50) {
    const to = Array.from({ length: Math.min(50, n - i) }, (_, j) => `customer${i + j}@${DOMAIN}`);
    await api(base, key, "POST", "/v1/send", {
      to,
      from: `orders@${DOMAIN}`,
      subject: "Your order has shipped",
      body: "<p>Hi, your order is on its way. It should arrive within three working days.</p>",
      trackReplies: true,
    });
  }
  await waitFor(
    `${n} emails SENT`,
    async () => (await api(base, key, "GET", "/emails?status=SENT&limit=1")).data.total,
    (sent) => sent >= n,
    300_000,
  );
  const emails = await all(base, key, "/emails?status=SENT");
  const out = new Array(emails.length);
  await pool(emails.length, 16, async (i) => {
    const email = emails[i];
    const res = await send(base, { path: `/dev/outbox/${email.providerMessageId.replace(/^capture-/, "")}.eml` });
    if (res.status !== 200) throw new Error(`the captured mail of ${email.id} answered ${res.status}`);
    const replyTo = /<([^>]+)>/.exec(header(res.text, "Reply-To") ?? "")?.[1];
    const messageId = header(res.text, "Message-ID");
    if (!replyTo?.startsWith("r+") || !messageId) throw new Error(`the captured mail of ${email.id} has no reply address or Message-ID`);
    out[i] = { id: email.id, to: email.to, replyTo, messageId };
  });
  return out;
}

const QUOTED = [
  "Hi, your order is on its way. It should arrive within three working days.",
  "You can follow the parcel with the tracking link in your account. If nobody is at home, the",
  "courier leaves a card and tries again the next working day; after two attempts the parcel",
  "waits at the nearest pick-up point for ten days before it comes back to us.",
  "",
  "Order summary",
  "  1 x Walnut desk organiser, large ............................ 49.00",
  "  2 x Linen notebook, A5, dotted .............................. 24.00",
  "  1 x Brass pen holder ........................................ 18.50",
  "  Shipping (tracked, 2-3 days) ................................  4.90",
  "",
];

/** A reply of about `bytes` as a mail client writes it: the answer, a signature, the quoted original (text and HTML). */
function replyMessage(email, n, bytes) {
  const answer = [
    `Thanks! Could you leave parcel ${n} with the neighbours at number ${(n % 40) + 2} if I am out?`,
    "And is it possible to add a gift note to the second notebook?",
    "",
    "--",
    `Customer ${n}`,
  ];
  const quotedBlock = [];
  while (quotedBlock.join("\n").length * 2.3 < bytes - 900) quotedBlock.push(...QUOTED);
  const text = [
    ...answer,
    "",
    `On Mon, 7 Dec 2026 at 09:${String(n % 60).padStart(2, "0")}, orders@${DOMAIN} wrote:`,
    ...quotedBlock.map((l) => `> ${l}`),
  ].join("\r\n");
  const html = `<div dir="ltr">${answer
    .slice(0, 2)
    .map((l) => `<p>${l}</p>`)
    .join(
      "",
    )}<p>-- <br>Customer ${n}</p></div><br><div class="gmail_quote"><div class="gmail_attr">On Mon, 7 Dec 2026 at 09:00, orders@${DOMAIN} wrote:</div><blockquote class="gmail_quote" style="margin:0 0 0 .8ex;border-left:1px solid #ccc;padding-left:1ex">${quotedBlock
    .map((l) => (l ? `<p>${l}</p>` : "<br>"))
    .join("")}</blockquote></div>`;
  const boundary = `b${n}x${email.id.slice(-12)}`;
  return [
    `From: Customer ${n} <${email.to}>`,
    `To: <${email.replyTo}>`,
    "Subject: Re: Your order has shipped",
    "Date: Mon, 7 Dec 2026 09:30:00 +0000",
    `Message-ID: <reply-${n}-${email.id}@mail.${DOMAIN}>`,
    `In-Reply-To: ${email.messageId}`,
    `References: ${email.messageId}`,
    "MIME-Version: 1.0",
    `Content-Type: multipart/alternative; boundary="${boundary}"`,
    "",
    `--${boundary}`,
    "Content-Type: text/plain; charset=UTF-8",
    "Content-Transfer-Encoding: 8bit",
    "",
    text,
    `--${boundary}`,
    "Content-Type: text/html; charset=UTF-8",
    "Content-Transfer-Encoding: 8bit",
    "",
    html,
    `--${boundary}--`,
    "",
  ].join("\r\n");
}

/** A reply of exactly `bytes` carrying a PDF-like attachment (base64 lines of 76), the rest filled in the epilogue. */
function largeReply(email, from, bytes) {
  const boundary = "large-reply-boundary";
  const head = [
    `From: Big Sender <${from}>`,
    `To: <${email.replyTo}>`,
    "Subject: Re: Your order has shipped (the signed delivery note attached)",
    "Date: Mon, 7 Dec 2026 10:00:00 +0000",
    `Message-ID: <large-${bytes}-${email.id}@mail.${DOMAIN}>`,
    `In-Reply-To: ${email.messageId}`,
    "MIME-Version: 1.0",
    `Content-Type: multipart/mixed; boundary="${boundary}"`,
    "",
    `--${boundary}`,
    "Content-Type: text/plain; charset=UTF-8",
    "",
    "Here is the signed delivery note.",
    "",
    `--${boundary}`,
    'Content-Type: application/pdf; name="delivery-note.pdf"',
    'Content-Disposition: attachment; filename="delivery-note.pdf"',
    "Content-Transfer-Encoding: base64",
    "",
    "",
  ].join("\r\n");
  const tail = `\r\n--${boundary}--\r\n`;
  const room = bytes - head.length - tail.length - 64;
  const line = `${Buffer.from(Array.from({ length: 57 }, (_, i) => (i * 37 + 11) % 256)).toString("base64")}\r\n`; // 76 characters
  const lines = Math.floor(room / line.length);
  const body = line.repeat(lines).slice(0, -2);
  const message = head + body + tail;
  // The epilogue after the closing boundary is ignored by parsers: it takes the bytes left.
  return Buffer.concat([Buffer.from(message), Buffer.alloc(bytes - Buffer.byteLength(message), " ")]);
}

/** The service's entry plus POST /__bench/email, and a wrangler.toml for it (the committed one, paths adjusted). */
function writeBenchWorker() {
  mkdirSync(WORKER_DIR, { recursive: true });
  const src = resolve("src/index.ts");
  writeFileSync(
    join(WORKER_DIR, "entry.js"),
    `// Generated by scripts/bench/inbound.mjs: the service, plus a route that delivers a message to its email() export.
import service from ${JSON.stringify(src)};
export * from ${JSON.stringify(src)};

export default {
  ...service,
  async fetch(request, env, ctx) {
    const url = new URL(request.url);
    if (url.pathname !== "/__bench/email" || request.method !== "POST") return service.fetch(request, env, ctx);
    let rejected = null;
    const message = {
      from: url.searchParams.get("from") ?? "",
      to: url.searchParams.get("to") ?? "",
      raw: request.body,
      rawSize: Number(request.headers.get("x-raw-size")),
      headers: new Headers(),
      canBeForwarded: false,
      setReject(reason) { rejected = reason; },
      async forward() { throw new Error("not in the bench"); },
      async reply() { throw new Error("not in the bench"); },
    };
    await service.email(message, env, ctx);
    return new Response(rejected ?? "taken", { status: rejected ? 400 : 200 });
  },
};
`,
  );
  const committed = readFileSync("wrangler.toml", "utf8");
  const config = committed
    .replace(/^main = "src\/index\.ts"$/m, 'main = "entry.js"')
    .replace(/^\[build\]\n(?:(?!\[).*\n)*/m, "") // the assets are built by the first server
    .replaceAll('"./', '"../../')
    .replace(/^migrations_dir = "(migrations[^"]*)"/gm, 'migrations_dir = "../../$1"');
  if (config.includes('"src/index.ts"') || !config.includes('main = "entry.js"')) throw new Error("wrangler.toml: no main to replace");
  writeFileSync(join(WORKER_DIR, "wrangler.toml"), config);
  return join(WORKER_DIR, "wrangler.toml");
}

async function throughputPart(base, key, pgid, emails) {
  const messages = emails.map((email, n) => ({ email, raw: replyMessage(email, n, REPLY_BYTES) }));
  const sizes = messages.map((m) => Buffer.byteLength(m.raw));
  const meanKb = sizes.reduce((a, b) => a + b, 0) / sizes.length / 1024;
  log(`${messages.length} replies of ${fmt(meanKb)} KB on average to the local email handler, ${CONCURRENCY} at a time`);
  const eventsBefore = (await api(base, key, "GET", "/events?name=email.received&limit=1")).data.total;
  const refused = new Map();
  const cpuBefore = serverCpuMs(pgid);
  const t0 = performance.now();
  await pool(messages.length, CONCURRENCY, async (i) => {
    const { email, raw } = messages[i];
    const res = await fetch(`${base}/cdn-cgi/handler/email?from=${encodeURIComponent(email.to)}&to=${encodeURIComponent(email.replyTo)}`, {
      method: "POST",
      body: raw,
    });
    const text = await res.text();
    if (res.status !== 200) {
      if (!refused.has(res.status)) log(`the email handler answered ${res.status}: ${text.slice(0, 200)}`);
      refused.set(res.status, (refused.get(res.status) ?? 0) + 1);
    }
  });
  const delivered = (performance.now() - t0) / 1000;
  const taken = messages.length - [...refused.values()].reduce((a, b) => a + b, 0);
  await waitFor(
    `${taken} replies parsed`,
    async () => (await api(base, key, "GET", "/events?name=email.received&limit=1")).data.total - eventsBefore,
    (parsed) => parsed >= taken,
    600_000,
    100,
  );
  const seconds = (performance.now() - t0) / 1000;
  const cpuAfter = serverCpuMs(pgid);
  const perMinute = (taken / seconds) * 60;
  // What GET /inbound shows of them: every one parsed and linked to the email it answers by its token.
  const byAddress = new Map(emails.map((e) => [e.replyTo, e]));
  const rows = (await all(base, key, "/inbound")).filter((r) => byAddress.has(r.to));
  const linked = rows.filter((r) => r.status === "PARSED" && r.match === "TOKEN" && r.emailId === byAddress.get(r.to).id && r.autoReply === false);
  const stripped = rows.filter((r) => r.strippedText?.startsWith("Thanks! Could you leave parcel") && !r.strippedText.includes("Order summary"));
  report(`${messages.length} inbound replies of ~20 KB: delivered -> parsed and linked`, `${fmt(perMinute, 0)} messages/min`, {
    goal: ">= 1,000/min, every one linked",
    met: perMinute >= 1000 && linked.length === messages.length,
    shape: `POST /cdn-cgi/handler/email (wrangler's local email handler) at concurrency ${CONCURRENCY}, ${fmt(meanKb)} KB text + HTML replies with the quoted original, each to its email's reply address; from the first delivery until the last email.received event (written with the PARSED row); local queue (batches of 10)`,
    detail:
      `${taken} of ${messages.length} taken in ${fmt(delivered)} s (${fmt((taken / delivered) * 60, 0)}/min), all parsed ${fmt(seconds)} s after the first; ` +
      `GET /inbound: ${linked.length} PARSED with match TOKEN and their email, ${stripped.length} stripped to the answer; ` +
      `server CPU ${cpuBefore === null || cpuAfter === null ? "n/a" : `${fmt((cpuAfter - cpuBefore) / taken, 1)} ms`} per message (wrangler's local handler parses each message too)` +
      `${refused.size ? `; refused: ${[...refused].map(([s, c]) => `${c}x${s}`).join(" ")}` : ""}`,
  });
  check("every inbound reply parsed and linked by its token", linked.length === messages.length, `${linked.length} of ${messages.length}`);
}

/** One message of `bytes` through POST /__bench/email: workerd's resident memory before, at its peak and after. */
async function memoryOf(server, key, email, bytes, label) {
  const { base } = server;
  const pgid = server.child.pid;
  const from = `large-${bytes}@${DOMAIN}`;
  const raw = largeReply(email, from, bytes);
  const repliesBefore = (await all(base, key, `/inbound?emailId=${email.id}`)).length;
  // Warm-up: one small reply the same way, so the email() and consumer modules are loaded and compiled before the baseline.
  const warm = replyMessage(email, -1, REPLY_BYTES);
  const warmed = await fetch(`${base}/__bench/email?from=${encodeURIComponent(`warm-${bytes}@${DOMAIN}`)}&to=${encodeURIComponent(email.replyTo)}`, {
    method: "POST",
    body: warm,
    headers: { "x-raw-size": String(Buffer.byteLength(warm)) },
  });
  if (warmed.status !== 200) throw new Error(`email() refused the warm-up message: ${await warmed.text()}`);
  await waitFor(
    "the warm-up message parsed",
    () => all(base, key, `/inbound?emailId=${email.id}`),
    (rows) => rows.length >= repliesBefore + 1 && rows.every((r) => r.status !== "RECEIVED"),
    120_000,
    100,
  );
  await sleep(2000); // the queue idle, the runtime settled
  const before = workerdRss(pgid);
  if (before === null) {
    report(`workerd resident memory for one ${label} message`, "n/a", { detail: "no /proc: not Linux" });
    return;
  }
  let peak = before;
  const sampler = setInterval(() => {
    peak = Math.max(peak, workerdRss(pgid) ?? 0);
  }, 20);
  const t0 = performance.now();
  const res = await fetch(`${base}/__bench/email?from=${encodeURIComponent(from)}&to=${encodeURIComponent(email.replyTo)}`, {
    method: "POST",
    body: raw,
    headers: { "x-raw-size": String(raw.byteLength) },
  });
  const answer = await res.text();
  const takenMs = performance.now() - t0;
  if (res.status !== 200) {
    clearInterval(sampler);
    throw new Error(`email() refused the ${label} message: ${answer}`);
  }
  const row = await waitFor(
    `the ${label} message parsed`,
    async () => (await all(base, key, `/inbound?emailId=${email.id}`)).find((r) => r.size === bytes),
    (r) => r && r.status !== "RECEIVED",
    300_000,
    100,
  );
  const parsedS = (performance.now() - t0) / 1000;
  await sleep(1000);
  clearInterval(sampler);
  peak = Math.max(peak, workerdRss(pgid) ?? 0);
  const after = workerdRss(pgid);
  const detail = await api(base, key, "GET", `/inbound/${row.id}`);
  report(`workerd resident memory for one ${label} message`, `+${mb(peak - before)} at the peak`, {
    goal: "measured and printed (issue 37)",
    met: row.status === "PARSED",
    shape: `${raw.byteLength} bytes, a reply with a PDF attachment, to an email's reply address: email() streams it to R2, the consumer reads and parses it; the whole local runtime (the Worker, local R2, D1 and queues) in one workerd process`,
    detail: `${mb(before)} before, peak ${mb(peak)}, ${mb(after)} 1 s after it was parsed; email() took it in ${fmt(takenMs, 0)} ms, ${row.status} ${fmt(parsedS)} s after delivery; attachments listed ${detail.attachments.length}${row.error ? `; error: ${row.error.slice(0, 60)}...` : ""}`,
  });
}

export const inboundSection = {
  key: "inbound",
  title: "Received mail: 1,000 replies parsed and linked, memory at the size cap",
  async run() {
    log(`applying migrations into ${STATE_DIR}`);
    applyMigrations(STATE_DIR);
    const project = createProject("bench-inbound", STATE_DIR);
    executeSql(verifiedDomainSql(project.id, DOMAIN), STATE_DIR);
    const vars = { INBOUND_DOMAIN, INBOUND_MAX_BYTES: String(INBOUND_MAX_BYTES) };
    let emails;
    {
      const server = await startServer(STATE_DIR, vars);
      try {
        log(`sending ${MESSAGES} emails with tracked replies`);
        emails = await sentEmails(server.base, project.secretKey, MESSAGES);
        await throughputPart(server.base, project.secretKey, server.child.pid, emails);
      } finally {
        await server.stop();
      }
    }
    // A fresh server for each, so neither starts from the other's memory.
    const config = writeBenchWorker();
    for (const [email, bytes, label] of [
      [emails[0], INBOUND_MAX_BYTES, "10 MiB (INBOUND_MAX_BYTES: over the parse cap, its head parsed)"],
      [emails[1], PARSE_CAP_BYTES, "8 MiB (the parse cap: parsed whole)"],
    ]) {
      const server = await startServer(STATE_DIR, vars, { config });
      try {
        await memoryOf(server, project.secretKey, email, bytes, label);
      } finally {
        await server.stop();
      }
    }
  },
};
