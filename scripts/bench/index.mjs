#!/usr/bin/env node
// `npm run bench`: starts the local service on throwaway state, measures each figure
// beside its goal, and prints one table. Not a test: figures depend on the machine
// (docs/performance.md has the latest run and how to read it).
//
// 1. local D1 migrations into .wrangler/bench-state (never the dev database), projects
//    through the project CLI (--persist-to), contacts inserted with multi-row SQL
// 2. `wrangler dev` on a free 127.0.0.1 port, API and send rate limits lifted, capture provider
// 3. the sections, in order; sections marked standalone start servers of their own
//    (production-shaped with a fake SES, the priority campaign, startup, import, dashboard)
//    and need no seeding
// 4. the table on stdout; the run fails if a check failed (e.g. a campaign recipient not sent)
//
// Environment: BENCH_ONLY=<comma-separated section keys> runs some; BENCH_SECONDS,
// BENCH_THROUGHPUT_ROUNDS, BENCH_CONCURRENCY, BENCH_CONTACTS, BENCH_EMAILS, BENCH_SES_EMAILS,
// BENCH_SES_LATENCY_MS, BENCH_COLD_SAMPLES, BENCH_LEASE_REQUESTS, BENCH_WORKFLOW_EVENTS,
// BENCH_CAMPAIGN_CONTACTS, BENCH_CAMPAIGN_TIMEOUT, BENCH_CAMPAIGN_TOPIC=1 (the campaign aimed at a topic), BENCH_PRIORITY_CONTACTS, BENCH_STARTUP_RUNS,
// BENCH_INSPECTOR, BENCH_PROFILE, BENCH_SERVER_LOG, BENCH_PORTS=<first>-<last> (servers only on those
// ports), BENCH_STARTUP_STATE (defaults in lib.mjs); BENCH_WEBHOOK_EVENTS,
// BENCH_WEBHOOK_PAIRS, BENCH_WEBHOOK_WINDOW, BENCH_WEBHOOK_CONCURRENCY (scripts/bench/webhooks.mjs);
// BENCH_ROWS_EMAILS (scripts/bench/rows.mjs); BENCH_INBOUND_MESSAGES, BENCH_INBOUND_CONCURRENCY (scripts/bench/inbound.mjs).
import { randomUUID } from "node:crypto";
import { campaignSection, prioritySection } from "./campaign.mjs";
import { inboundSection } from "./inbound.mjs";
import {
  campaignContactRow,
  createProject,
  elapsedSeconds,
  executeSql,
  fmt,
  insertContacts,
  log,
  printTable,
  applyMigrations,
  settings,
  startServer,
  stopServers,
  verifiedDomainSql,
} from "./lib.mjs";
import { listSection } from "./list.mjs";
import { productionSection } from "./production.mjs";
import { rowsSection } from "./rows.mjs";
import { startProfiler } from "./profile.mjs";
import { attachmentsSection, consumerSection } from "./sending.mjs";
import { dashboardSection, importSection } from "./standalone-scripts.mjs";
import { startupSection } from "./startup.mjs";
import { throughputSection } from "./throughput.mjs";
import { webhooksSection } from "./webhooks.mjs";
import { workflowsSection } from "./workflows.mjs";

const SECTIONS = [
  throughputSection,
  listSection,
  workflowsSection,
  consumerSection,
  campaignSection,
  attachmentsSection,
  { ...productionSection, standalone: true },
  { ...prioritySection, standalone: true },
  { ...webhooksSection, standalone: true },
  { ...rowsSection, standalone: true },
  { ...inboundSection, standalone: true },
  startupSection,
  importSection,
  dashboardSection,
];
const ONLY = (process.env.BENCH_ONLY ?? "").split(",").filter(Boolean);
const unknown = ONLY.filter((key) => !SECTIONS.some((s) => s.key === key));
if (unknown.length > 0) {
  console.error(`BENCH_ONLY: no section ${unknown.join(", ")} (sections: ${SECTIONS.map((s) => s.key).join(", ")})`);
  process.exit(2);
}
const wanted = SECTIONS.filter((s) => ONLY.length === 0 || ONLY.includes(s.key));

async function seedAndStart() {
  const wants = (key) => wanted.some((s) => s.key === key);
  log(`applying migrations into ${settings.stateDir}`);
  applyMigrations(settings.stateDir);
  log("creating projects");
  const bench = createProject("bench");
  const list = createProject("bench-list");
  const sender = createProject("bench-send");
  const campaign = createProject("bench-campaign");
  executeSql(
    [
      verifiedDomainSql(bench.id, settings.domain),
      verifiedDomainSql(sender.id, `send.${settings.domain}`),
      verifiedDomainSql(campaign.id, `campaign.${settings.domain}`),
    ].join(" "),
  );
  if (wants("list")) {
    log(`inserting ${settings.listContacts} contacts`);
    insertContacts(list.id, settings.listContacts);
  }
  if (wants("campaign")) {
    log(`inserting ${settings.campaignContacts} campaign contacts`);
    insertContacts(campaign.id, settings.campaignContacts, { row: campaignContactRow(campaign.id, "fan") });
  }
  const server = await startServer(settings.stateDir);
  return { server, bench, list, sender, campaign, runId: randomUUID().slice(0, 8) };
}

async function main() {
  console.log(`Edge Mail benchmark  ${new Date().toISOString()}  node ${process.version}`);
  // Standalone sections (webhooks, production, ...) state their own concurrency and windows in their rows.
  const shared = wanted.some((s) => !s.standalone) ? `concurrency ${settings.concurrency}, ${settings.seconds} s per throughput figure; ` : "";
  console.log(`${shared}wrangler dev devtools inspector ${settings.inspector ? "on" : "off"}; the machine may be shared: figures move between runs\n`);
  const ctx = wanted.some((s) => !s.standalone) ? await seedAndStart() : {};
  const profiler = settings.profile && ctx.server ? await startProfiler(ctx.server.inspectorPort) : null;
  for (const section of wanted) {
    log(`## ${section.title}`);
    await section.run(ctx);
  }
  if (profiler) await profiler.stop(settings.profile);
  await stopServers();
  const failures = printTable();
  console.log(`\ntotal ${fmt(elapsedSeconds())} s`);
  if (failures.length > 0) {
    console.error(`\nbench checks failed:\n- ${failures.join("\n- ")}`);
    process.exit(1);
  }
}

for (const signal of ["SIGINT", "SIGTERM"]) {
  process.on(signal, () => {
    stopServers().finally(() => process.exit(130));
  });
}

main().catch(async (err) => {
  console.error(`bench failed: ${err instanceof Error ? err.stack : err}`);
  await stopServers();
  process.exit(1);
});
