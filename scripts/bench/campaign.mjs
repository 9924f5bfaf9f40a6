// Segments and campaigns over a large audience, and transactional mail while a campaign drains.
import { performance } from "node:perf_hooks";
import {
  api,
  applyMigrations,
  campaignContactRow,
  check,
  consumerStatements,
  cpuPerEmail,
  createProject,
  executeSql,
  fmt,
  insertContacts,
  latency,
  log,
  report,
  serverCpuMs,
  settings,
  sleep,
  startServer,
  verifiedDomainSql,
} from "./lib.mjs";

export const campaignSection = {
  key: "campaign",
  title: `Segments and campaigns (${settings.campaignContacts} contacts, capture provider)`,
  async run(ctx) {
    const base = ctx.server.base;
    const key = ctx.campaign.secretKey;
    const pro = { logic: "AND", groups: [{ filters: [{ field: "data.plan", operator: "equals", value: "pro" }] }] };
    const segment = await api(base, key, "POST", "/segments", { name: "Pro", condition: pro });
    const count = await latency(base, { path: `/segments/${segment.id}`, key }, 20);
    report(`segment memberCount over ${settings.campaignContacts} contacts (median)`, `${fmt(count.median, 1)} ms`, {
      goal: "< 100 ms",
      met: count.median < 100,
      shape: "GET /segments/{id}, one at a time",
      detail: `p95 ${fmt(count.p95, 1)} ms; memberCount ${segment.memberCount}`,
    });

    // BENCH_CAMPAIGN_TOPIC=1: the campaign is aimed at a topic (OPT_IN by default, so every contact
    // still gets it), which adds the topic gate to every audience page and the List-Id to every email.
    const topic =
      process.env.BENCH_CAMPAIGN_TOPIC === "1" ? await api(base, key, "POST", "/topics", { key: "bench", name: "Bench", defaultSubscription: "OPT_IN" }) : null;
    const campaign = (
      await api(base, key, "POST", "/campaigns", {
        name: "Bench",
        subject: "Hello {{plan}}",
        body: "<p>Hello {{email}}, you are on {{plan}}.</p>",
        from: `news@campaign.${settings.domain}`,
        audienceType: "ALL",
        ...(topic ? { topicId: topic.id } : {}),
      })
    ).data;
    const before = await api(base, null, "GET", "/dev/d1-stats");
    const cpuBefore = serverCpuMs(ctx.server.child.pid);
    const t0 = performance.now();
    await api(base, key, "POST", `/campaigns/${campaign.id}/send`, {});
    const deadline = t0 + settings.campaignTimeoutS * 1000;
    let status = "SENDING";
    let lastLog = performance.now();
    while (performance.now() < deadline) {
      status = (await api(base, key, "GET", `/campaigns/${campaign.id}`)).data.status;
      if (status === "SENT") break;
      if (performance.now() - lastLog > 15_000) {
        const sentSoFar = (await api(base, key, "GET", `/emails?campaignId=${campaign.id}&status=SENT&limit=1`)).data.total;
        log(`campaign: ${sentSoFar} of ${settings.campaignContacts} SENT after ${fmt((performance.now() - t0) / 1000)} s`);
        lastLog = performance.now();
      }
      await sleep(500);
    }
    const seconds = (performance.now() - t0) / 1000;
    const after = await api(base, null, "GET", "/dev/d1-stats");
    const stats = (await api(base, key, "GET", `/campaigns/${campaign.id}/stats`)).data;
    const sent = stats.sentCount;
    // SENT means no email is left QUEUED or SENDING; FAILED ones would count as done, so check the count.
    const complete = check(
      "campaign: sentCount == totalRecipients == contacts",
      status === "SENT" && sent === stats.totalRecipients && stats.totalRecipients === settings.campaignContacts,
      `status ${status}, sentCount ${sent}, failedCount ${stats.failedCount}, totalRecipients ${stats.totalRecipients}`,
    );
    report(`campaign to ${settings.campaignContacts}: send -> SENT, every recipient sent`, status === "SENT" ? `${fmt(seconds)} s` : "not SENT", {
      goal: "< 60 s, sentCount == totalRecipients",
      met: complete && seconds < 60,
      shape: `audience ALL${topic ? " aimed at a topic (BENCH_CAMPAIGN_TOPIC=1)" : ""}, Liquid subject and body; capture provider, send rate lifted`,
      detail: `${sent} sent of ${stats.totalRecipients} (${stats.failedCount} failed), ${fmt(sent / seconds, 0)} emails/s; ${cpuPerEmail(cpuBefore, serverCpuMs(ctx.server.child.pid), sent)}`,
    });
    const statements = consumerStatements(before, after);
    const perEmail = statements === null ? Number.NaN : statements / Math.max(1, sent);
    report("D1 statements per campaign email", statements === null ? "n/a" : fmt(perEmail, 3), {
      goal: "< 0.1",
      met: statements === null ? undefined : perEmail < 0.1,
      shape: "queue consumers: audience pages and sends; the capture provider's own writes excluded",
      detail: statements === null ? "counter off, or the isolate restarted" : `${statements} statements for ${sent} emails`,
    });
  },
};

export const prioritySection = {
  key: "priority",
  title: `Sending priority: transactional sends during a ${settings.priorityContacts}-recipient campaign at 14 emails/s`,
  async run() {
    const stateDir = settings.priorityStateDir;
    applyMigrations(stateDir);
    const project = createProject("bench-priority", stateDir);
    executeSql(verifiedDomainSql(project.id, settings.domain), stateDir);
    insertContacts(project.id, settings.priorityContacts, { stateDir, row: campaignContactRow(project.id, "fan") });
    const server = await startServer(stateDir, { SEND_RATE_PER_SECOND: "14" });
    try {
      const key = project.secretKey;
      const campaign = (
        await api(server.base, key, "POST", "/campaigns", {
          name: "Big",
          subject: "News",
          body: "<p>News for {{email}}</p>",
          from: `news@${settings.domain}`,
          audienceType: "ALL",
        })
      ).data;
      await api(server.base, key, "POST", `/campaigns/${campaign.id}/send`, {});
      // Wait until the campaign is draining at the rate.
      const sentSoFar = async () => (await api(server.base, key, "GET", `/emails?campaignId=${campaign.id}&status=SENT&limit=1`)).data.total;
      const waitUntil = performance.now() + 60_000;
      while ((await sentSoFar()) < 30 && performance.now() < waitUntil) await sleep(250);
      const delays = [];
      for (let i = 0; i < 5; i++) {
        const t0 = performance.now();
        const res = await api(server.base, key, "POST", "/v1/send", {
          to: `reset${i}@bench.test`,
          from: `auth@${settings.domain}`,
          subject: "Reset",
          body: "<p>Reset</p>",
        });
        const id = res.data.emails[0].email;
        for (;;) {
          const email = await api(server.base, key, "GET", `/emails/${id}`);
          if (email.status !== "QUEUED" && email.status !== "SENDING") break;
          if (performance.now() - t0 > 120_000) throw new Error("transactional send not sent after 120 s");
          await sleep(25);
        }
        delays.push(performance.now() - t0);
        await sleep(1000);
      }
      const queued = (await api(server.base, key, "GET", `/emails?campaignId=${campaign.id}&status=QUEUED&limit=1`)).data.total;
      const done = await sentSoFar();
      const sorted = [...delays].sort((a, b) => a - b);
      report("transactional /v1/send -> SENT while a campaign drains at 14/s (median of 5)", `${fmt(sorted[2], 0)} ms`, {
        shape: "capture provider, SEND_RATE_PER_SECOND=14",
        detail: `max ${fmt(sorted[4], 0)} ms; campaign meanwhile: ${done} sent, ${queued} still queued`,
      });
    } finally {
      await server.stop();
    }
  },
};
