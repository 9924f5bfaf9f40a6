// The queue consumer with the capture provider (development's provider, no goal of its
// own: scripts/bench/ses.mjs measures the goal through SES), and the largest attachment.
import { performance } from "node:perf_hooks";
import { api, consumerStatements, cpuPerEmail, d1Stats, fmt, report, send, serverCpuMs, settings, sleep, waitForQueueDrain, workerdRss } from "./lib.mjs";

/** Sends `total` emails in requests of 50 recipients (8 in flight); resolves with the seconds it took to have them accepted. */
export async function acceptInFifties(base, key, total, from, prefix) {
  const t0 = performance.now();
  const requests = Math.ceil(total / 50);
  let nextRequest = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (nextRequest < requests) {
        const r = nextRequest++;
        const to = Array.from({ length: 50 }, (_, j) => `${prefix}${r * 50 + j}@bench.test`).slice(0, total - r * 50);
        const res = await send(base, { method: "POST", path: "/v1/send", key, body: { to, from, subject: "Bench", body: "<p>Hello {{email}}</p>" } });
        if (res.status !== 200) throw new Error(`/v1/send answered ${res.status}: ${res.text.slice(0, 200)}`);
      }
    }),
  );
  return (performance.now() - t0) / 1000;
}

/** Polls until `total` of the project's emails are SENT or settings.sendTimeoutS passes; the count SENT. */
export async function waitForSent(base, key, total, deadline = performance.now() + settings.sendTimeoutS * 1000, pollMs = 100) {
  let sent = 0;
  while (performance.now() < deadline) {
    sent = (await api(base, key, "GET", "/emails?status=SENT&limit=1")).data.total;
    if (sent >= total) break;
    await sleep(pollMs);
  }
  return sent;
}

export const consumerSection = {
  key: "consumer",
  title: `Queue consumer: ${settings.sendEmails} emails accepted -> SENT (capture provider)`,
  async run(ctx) {
    const base = ctx.server.base;
    // Earlier sections' mail drains first, so this times only these emails.
    await waitForQueueDrain(base, ctx.bench.secretKey);
    const key = ctx.sender.secretKey;
    const before = await d1Stats(base);
    const cpuBefore = serverCpuMs(ctx.server.child.pid);
    const t0 = performance.now();
    const acceptSeconds = await acceptInFifties(base, key, settings.sendEmails, `hello@send.${settings.domain}`, "e2e");
    const sent = await waitForSent(base, key, settings.sendEmails);
    const totalSeconds = (performance.now() - t0) / 1000;
    const cpu = serverCpuMs(ctx.server.child.pid);
    const statements = consumerStatements(before, await d1Stats(base));
    report(`${settings.sendEmails} emails accepted (50 per request)`, `${fmt(settings.sendEmails / acceptSeconds, 0)} emails/s`, {
      shape: "no template; capture provider",
      detail: `${fmt(acceptSeconds)} s`,
    });
    report(`${settings.sendEmails} emails accepted -> SENT, capture provider`, `${fmt(sent / totalSeconds, 0)} emails/s`, {
      shape: "capture provider (concurrency 100, batched writes): development's provider, not the goal's (see the SES row)",
      detail: `${sent} of ${settings.sendEmails} SENT in ${fmt(totalSeconds)} s${sent < settings.sendEmails ? `; gave up after ${settings.sendTimeoutS} s` : ""}; ${cpuPerEmail(cpuBefore, cpu, sent)}`,
    });
    const perEmail = statements === null ? Number.NaN : statements / Math.max(1, sent);
    report("D1 statements per email in the consumer", statements === null ? "n/a" : fmt(perEmail, 3), {
      goal: "<= 0.05",
      met: statements === null ? undefined : perEmail <= 0.05,
      shape: "counted in the queue handler; the capture provider's own writes excluded (SES writes nothing to D1)",
      detail: statements === null ? "counter off, or the isolate restarted" : `${statements} statements for ${sent} emails`,
    });
  },
};

const ATTACHMENT_BYTES = 7_000_000; // MAX_ATTACHMENT_BYTES in src/services/send/attachments.ts

export const attachmentsSection = {
  key: "attachments",
  title: `Attachments: the largest allowed (${ATTACHMENT_BYTES} bytes) to 10 recipients, consumer memory`,
  async run(ctx) {
    const key = ctx.bench.secretKey;
    const base = ctx.server.base;
    const pgid = ctx.server.child.pid;
    const baseline = workerdRss(pgid);
    if (baseline === null) {
      report("workerd resident memory while sending a 7 MB attachment", "n/a", { detail: "no /proc: not Linux" });
      return;
    }
    let peak = baseline;
    const sampler = setInterval(() => (peak = Math.max(peak, workerdRss(pgid) ?? 0)), 20);
    // Base64 of ATTACHMENT_BYTES zero bytes (7,000,000 = 3 * 2,333,333 + 1).
    const content = `${"A".repeat(2_333_333 * 4)}AA==`;
    const to = Array.from({ length: 10 }, (_, i) => `att${i}@bench.test`);
    const t0 = performance.now();
    const accepted = await api(base, key, "POST", "/v1/send", {
      to,
      from: `hello@${settings.domain}`,
      subject: "Report",
      body: "<p>Attached.</p>",
      attachments: [{ filename: "report.pdf", content, contentType: "application/pdf" }],
    });
    const ids = accepted.data.emails.map((e) => e.email);
    const deadline = performance.now() + settings.sendTimeoutS * 1000;
    let statuses = [];
    while (performance.now() < deadline) {
      statuses = await Promise.all(ids.map(async (id) => (await api(base, key, "GET", `/emails/${id}`)).status));
      if (statuses.every((s) => s !== "QUEUED" && s !== "SENDING")) break;
      await sleep(100);
    }
    const seconds = (performance.now() - t0) / 1000;
    clearInterval(sampler);
    peak = Math.max(peak, workerdRss(pgid) ?? 0);
    const mb = (bytes) => `${fmt(bytes / 1024 / 1024, 0)} MB`;
    const sent = statuses.filter((s) => s === "SENT").length;
    report("one send, 7,000,000-byte attachment, 10 recipients", `${sent} of 10 SENT in ${fmt(seconds)} s`, {
      shape: "capture provider",
      detail: `workerd resident memory peak ${mb(peak)} (${mb(baseline)} before, +${mb(peak - baseline)}; the whole local runtime)`,
    });
  },
};
