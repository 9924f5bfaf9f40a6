// D1 rows written (meta.rows_written: table rows, index entries, triggers' writes; what D1 bills) per
// email over its life and per request path, counted by the Worker itself (BENCH_COUNT_D1=all, GET
// /dev/d1-stats) on a server of its own, and what they cost per million emails. The phases a local
// server cannot drive (SES's delivery feedback through signed SNS, the retention and archive crons
// 30 and 90 days on) are measured by test/store/rows-written.test.ts, which drives all of them.
import { createHmac } from "node:crypto";
import { performance } from "node:perf_hooks";
import { api, applyMigrations, createProject, executeSql, fmt, log, report, send, settings, sleep, startServer, verifiedDomainSql } from "./lib.mjs";

const STATE_DIR = ".wrangler/bench-rows-state";
const SECRET = "bench-only-secret-at-least-32-bytes-long"; // lib.mjs startServer's LINK_SIGNING_SECRET
const EMAILS = Number(process.env.BENCH_ROWS_EMAILS ?? 100);
/** D1's price per million rows written past the included 50 M a month (docs/capacity.md). */
const DOLLARS_PER_MILLION_ROWS = 1.0;
/** Phases only the test drives, per email (test/store/rows-written.test.ts; docs/performance.md). */
const TEST_PHASES = { delivered: 2, "body gone": 0, "record gone (archive)": 4.8 };
/** The same for an email never opened: its archive holds no events (UNOPENED_BUDGET there). */
const TEST_PHASES_UNOPENED = { delivered: 2, "body gone": 0, "record gone (archive)": 1.4 };
const sumOf = (o) => Object.values(o).reduce((a, b) => a + b, 0);

/** The signature of a tracking link, as src/services/tracking/signing.ts makes it. */
const sign = (purpose, ...parts) =>
  createHmac("sha256", SECRET)
    .update([purpose, ...parts.map((p) => `${p.length}:${p}`)].join("\n"))
    .digest("base64url");

export const rowsSection = {
  key: "rows",
  title: `D1 rows written per email (${EMAILS} emails) and per request path, and the cost per million emails`,
  async run() {
    applyMigrations(STATE_DIR);
    const project = createProject("bench-rows", STATE_DIR);
    const domain = `rows.${settings.domain}`;
    executeSql(verifiedDomainSql(project.id, domain), STATE_DIR);
    const server = await startServer(STATE_DIR, { BENCH_COUNT_D1: "all" });
    const { base } = server;
    const key = project.secretKey;
    const from = `hello@${domain}`;
    const stats = () => api(base, null, "GET", "/dev/d1-stats");
    // By entry point (the HTTP handler, the queue consumers), the capture provider's own writes left out (SES writes nothing to D1).
    const written = async () => {
      const s = await stats();
      if (!s.counting || s.rowsWritten === undefined) throw new Error("the Worker does not count D1 rows (BENCH_COUNT_D1=all, ENVIRONMENT=development)");
      const of = (x) => x.rowsWritten - x.captureRowsWritten;
      return { all: of(s), fetch: of(s.bySource.fetch), queue: of(s.bySource.queue) };
    };
    /** Rows `fn` wrote in all; `.fetch` and `.queue` by entry point. */
    const rowsBy = async (fn) => {
      const before = await written();
      await fn();
      const after = await written();
      return { all: after.all - before.all, fetch: after.fetch - before.fetch, queue: after.queue - before.queue };
    };
    const rows = async (fn) => (await rowsBy(fn)).all;
    const ok = async (method, path, body, expect = [200, 201]) => {
      const res = await send(base, { method, path, key, body });
      if (!expect.includes(res.status)) throw new Error(`${method} ${path} answered ${res.status}: ${res.text.slice(0, 200)}`);
      return res.text ? JSON.parse(res.text) : null;
    };
    /** Until `n` emails are SENT or past it (opened, clicked): none QUEUED or SENDING. */
    const waitSent = async (n) => {
      const deadline = performance.now() + settings.sendTimeoutS * 1000;
      const total = async (query) => (await api(base, key, "GET", `/emails?limit=1${query}`)).data.total;
      while (performance.now() < deadline) {
        const [all, queued, sending, failed] = await Promise.all(["", "&status=QUEUED", "&status=SENDING", "&status=FAILED"].map(total));
        if (failed > 0) throw new Error(`${failed} emails FAILED`);
        if (all >= n && queued === 0 && sending === 0) return;
        await sleep(100);
      }
      throw new Error(`fewer than ${n} emails SENT after ${settings.sendTimeoutS} s`);
    };
    const track = (id) => `/t/o/${id}?s=${sign("open", id)}`;
    const link = "https://docs.example/news";
    const click = (id) => `/t/c/${id}?u=${encodeURIComponent(link)}&s=${sign("click", id, link)}`;
    const body = `<p>Hi {{email}}, read <a href="${link}">the news</a>.</p>`;

    /** One life: contacts, one send to all of them, SENT, one open and one click each; rows by phase. */
    let sentSoFar = 0;
    async function life(prefix, n) {
      const addresses = Array.from({ length: n }, (_, i) => `${prefix}${i}@bench.test`);
      const phases = {};
      phases.contact = await rows(async () => {
        for (const email of addresses) await ok("POST", "/contacts", { email });
      });
      const ids = [];
      // The local queue delivers while the sends are still being accepted: the two phases told apart by entry point.
      sentSoFar += n;
      const sending = await rowsBy(async () => {
        for (let i = 0; i < n; i += 50) {
          const res = await ok("POST", "/v1/send", { to: addresses.slice(i, i + 50), from, subject: "Hello", body });
          ids.push(...res.data.emails.map((e) => e.email));
        }
        await waitSent(sentSoFar);
      });
      phases.accepted = sending.fetch;
      phases.sent = sending.queue;
      phases.opened = await rows(async () => {
        for (const id of ids) await send(base, { path: track(id) });
      });
      phases.clicked = await rows(async () => {
        // The redirect itself, not where it leads.
        for (const id of ids) await (await fetch(base + click(id), { redirect: "manual" })).text();
      });
      return Object.fromEntries(Object.entries(phases).map(([phase, r]) => [phase, r / n]));
    }

    // A first life creates the project's rows of the day (usage, reputation, R2 ledger) and warms the key cache.
    await life("warm", 1);
    log(`rows: ${EMAILS} emails through their life`);
    const perEmail = await life("life", EMAILS);
    const { contact, ...emailPhases } = perEmail;
    const total = sumOf(emailPhases) + sumOf(TEST_PHASES);
    const { opened, clicked, ...unopenedPhases } = emailPhases;
    const unopened = sumOf(unopenedPhases) + sumOf(TEST_PHASES_UNOPENED);
    const phaseText = (o) =>
      Object.entries(o)
        .map(([p, r]) => `${p} ${fmt(r, 1)}`)
        .join(", ");
    report("D1 rows written per email over its life, never opened", fmt(unopened, 1), {
      goal: "<= 25",
      met: unopened <= 25,
      shape: `${EMAILS} emails to existing contacts (50 per /v1/send), capture provider (its own rows left out)`,
      detail: `here: ${phaseText(unopenedPhases)}; from test/store/rows-written.test.ts: ${phaseText(TEST_PHASES_UNOPENED)}`,
    });
    report("D1 rows written per email over its life, opened and clicked once", fmt(total, 1), {
      shape: "the same emails, each opened and clicked once (an email.opened and an email.clicked event)",
      detail: `here: opened ${fmt(opened, 1)}, clicked ${fmt(clicked, 1)}; from the test: ${phaseText(TEST_PHASES)}`,
    });
    report("D1 rows written per contact created (POST /contacts)", fmt(contact, 1), { shape: "a new address, no data" });

    // Per request path, one request at a time on a warm isolate.
    const path = async (name, fn) => {
      const r = (await rowsBy(fn)).fetch;
      report(`D1 rows written: ${name}`, fmt(r, 1), { shape: "one request, warm isolate; the HTTP handler's rows (its queue work apart)" });
      return r;
    };
    await path("POST /v1/track, new contact", () => ok("POST", "/v1/track", { email: "t1@bench.test", event: "visit" }));
    await path("POST /v1/track, existing contact", () => ok("POST", "/v1/track", { email: "t1@bench.test", event: "visit" }));
    await path("POST /contacts, new", () => ok("POST", "/contacts", { email: "c1@bench.test", data: { plan: "pro" } }));
    await path("POST /contacts, existing", () => ok("POST", "/contacts", { email: "c1@bench.test", data: { plan: "team" } }));
    await path("POST /v1/send, 1 recipient (existing contact)", () => ok("POST", "/v1/send", { to: "c1@bench.test", from, subject: "Hi", body }));
    sentSoFar += 1;
    await waitSent(sentSoFar);
    let campaignId = "";
    const campaignRows = await rows(async () => {
      campaignId = (await ok("POST", "/campaigns", { name: "Rows", subject: "News", body, from, audienceType: "ALL" })).data.id;
      await ok("POST", `/campaigns/${campaignId}/send`, {});
      const deadline = performance.now() + settings.sendTimeoutS * 1000;
      while (performance.now() < deadline && (await api(base, key, "GET", `/campaigns/${campaignId}`)).data.status !== "SENT") await sleep(200);
    });
    const audience = (await api(base, key, "GET", `/campaigns/${campaignId}/stats`)).data.totalRecipients;
    report("D1 rows written per campaign email (accepted -> SENT)", fmt(campaignRows / audience, 1), {
      shape: `a campaign to all ${audience} contacts (create, send, pages, consumer)`,
      detail: `${campaignRows} rows; /v1/send's accepted + sent: ${fmt(emailPhases.accepted + emailPhases.sent, 1)}`,
    });

    report("D1 rows-written cost per million emails", `$${fmt(unopened * DOLLARS_PER_MILLION_ROWS, 2)} to $${fmt(total * DOLLARS_PER_MILLION_ROWS, 2)}`, {
      shape: `${fmt(unopened, 1)} (never opened) to ${fmt(total, 1)} (opened and clicked) rows per email x $${DOLLARS_PER_MILLION_ROWS.toFixed(2)} per million rows written (past the included 50 M a month)`,
      detail: "storage and the other products: docs/capacity.md",
    });
    await server.stop();
  },
};
