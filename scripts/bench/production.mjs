// The service configured as production is: the SES provider (a local fake SES with
// latency, at its HTTP boundary) and the default API rate limit of 1000 requests per
// minute per project, so rate-limit leases are the production size (20 slots).
import { performance } from "node:perf_hooks";
import { startFakeSes } from "./fake-ses.mjs";
import {
  applyMigrations,
  createProject,
  cpuPerEmail,
  executeSql,
  fmt,
  log,
  report,
  send,
  serverCpuMs,
  settings,
  startServer,
  stats,
  verifiedDomainSql,
} from "./lib.mjs";
import { acceptInFifties, waitForSent } from "./sending.mjs";

const STATE_DIR = ".wrangler/bench-production-state";

/** `count` requests, `settings.concurrency` in flight; req/s, latencies and non-2xx answers. */
async function burst(base, count, makeRequest) {
  let next = 0;
  const latencies = [];
  const errors = new Map();
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: settings.concurrency }, async () => {
      while (next < count) {
        const request = makeRequest(next++);
        const start = performance.now();
        const res = await send(base, request);
        latencies.push(performance.now() - start);
        if (res.status >= 300) errors.set(res.status, (errors.get(res.status) ?? 0) + 1);
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  return { rps: count / seconds, seconds, errors, ...stats(latencies) };
}

export const productionSection = {
  key: "production",
  title: "Production-shaped: SES provider (local fake SES with latency), default rate limit",
  async run() {
    applyMigrations(STATE_DIR);
    const lease = createProject("bench-lease", STATE_DIR);
    const sender = createProject("bench-ses", STATE_DIR);
    executeSql(verifiedDomainSql(sender.id, `ses.${settings.domain}`), STATE_DIR);
    const ses = await startFakeSes({ latencyMs: settings.sesLatencyMs });
    const server = await startServer(STATE_DIR, {
      ENVIRONMENT: "production",
      RATE_LIMIT_PER_MINUTE: "1000",
      EMAIL_PROVIDER: "ses",
      SES_ENDPOINT: ses.url,
      SES_ACCESS_KEY_ID: "AKIDBENCHONLY",
      SES_SECRET_ACCESS_KEY: "bench-only-secret-access-key",
      // An SES account whose sending quota is not the binding limit (the default 14/s would be).
      SEND_RATE_PER_SECOND: "1000000",
      BENCH_COUNT_D1: "0",
    });
    try {
      // Rate-limit leases at the production limit: each isolate takes 20 slots of the
      // minute per Durable Object call (1000 / 50). Requests stay under the limit.
      const half = Math.floor(settings.leaseRequests / 2);
      const track = (round) => (i) => ({
        method: "POST",
        path: "/v1/track",
        key: lease.publicKey,
        body: { email: `lease${round}-${i}@bench.test`, event: "bench" },
      });
      await burst(server.base, settings.concurrency, () => ({ path: "/health" })); // warm-up
      const rounds = [];
      for (let round = 0; round < 2; round++) {
        const health = await burst(server.base, half, () => ({ path: "/health" }));
        const tracked = await burst(server.base, half, track(round));
        rounds.push({ health, tracked });
      }
      const healthRps = rounds.reduce((s, r) => s + r.health.rps, 0) / rounds.length;
      const trackRps = rounds.reduce((s, r) => s + r.tracked.rps, 0) / rounds.length;
      const refused = rounds.reduce((s, r) => s + [...r.tracked.errors.values()].reduce((a, b) => a + b, 0), 0);
      report("POST /v1/track / GET /health at RATE_LIMIT_PER_MINUTE=1000", fmt(trackRps / healthRps, 2), {
        goal: ">= 0.6",
        met: trackRps / healthRps >= 0.6 && refused === 0,
        shape: `production lease size (20 slots per Durable Object call); ${2 * half} requests, under the limit; warm caches`,
        detail: `${fmt(trackRps, 0)} / ${fmt(healthRps, 0)} req/s, track median ${fmt(rounds[1].tracked.median)} ms, p95 ${fmt(rounds[1].tracked.p95)} ms; non-2xx: ${refused}`,
      });

      // The send path end to end through the SES provider: SigV4 signing, fetch, the fake's latency.
      const total = settings.sesEmails;
      const cpuBefore = serverCpuMs(server.child.pid);
      const t0 = performance.now();
      const acceptSeconds = await acceptInFifties(server.base, sender.secretKey, total, `hello@ses.${settings.domain}`, "ses");
      // Polled every 500 ms: the polls count toward the same 1000/min limit.
      const sent = await waitForSent(server.base, sender.secretKey, total, performance.now() + settings.sendTimeoutS * 1000, 500);
      const seconds = (performance.now() - t0) / 1000;
      const rate = sent / seconds;
      log(`fake SES: ${ses.counts.sent} sent, ${ses.counts.refused} refused, at most ${ses.counts.maxInFlight} in flight`);
      report(`${total} emails accepted -> SENT through SES`, `${fmt(rate, 0)} emails/s`, {
        goal: ">= 2,000 emails/s",
        met: rate >= 2000 && sent === total,
        shape: `SES provider (concurrency 6 per batch) against a local fake SES answering after ${settings.sesLatencyMs} ms; 50 recipients per request`,
        detail: `${sent} of ${total} SENT in ${fmt(seconds)} s (accepted in ${fmt(acceptSeconds)} s); fake SES: ${ses.counts.sent} calls, at most ${ses.counts.maxInFlight} in flight, ${ses.counts.refused} refused; ${cpuPerEmail(cpuBefore, serverCpuMs(server.child.pid), sent)}`,
      });
    } finally {
      await server.stop();
      await ses.close();
    }
  },
};
