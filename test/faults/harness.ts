/**
 * The fault tests' local world: a real `wrangler dev` on its own state directory with the fake SES (and
 * its SNS event publishing) at the HTTP boundary, a cron loop standing in for the Cron Trigger, and a kill
 * that takes the whole runtime down (SIGKILL to wrangler's process group, workerd included) so it can be
 * started again on the same state. Nothing of the Worker is faked.
 */
import { readFileSync, rmSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { afterAll } from "vitest";
// @ts-expect-error: plain .mjs scripts without type declarations
import { SNS_TOPIC, startFakeSes } from "../../scripts/bench/fake-ses.mjs";
// @ts-expect-error: plain .mjs scripts without type declarations
import { applyMigrations, campaignContactRow, createProject, executeSql, insertContacts, verifiedDomainSql } from "../../scripts/bench/lib.mjs";
import { startWranglerDev } from "../../scripts/lib/local-server.mjs";

/**
 * This suite's first ports (see the session's port plan): wrangler 8841-8849, its inspector 9341-9349, fakes 8941-8949;
 * FAULTS_PORTS=<wrangler>,<inspector>,<fake> moves them (a machine shared with other runs).
 */
const [wranglerPort, inspectorPort, fakePort] = (process.env.FAULTS_PORTS ?? "8841,9341,8941").split(",").map(Number);
export const PORTS = { wrangler: wranglerPort, inspector: inspectorPort, fake: fakePort };
/** How often the cron loop fires the scheduled handler (production: every minute). FAULTS_CRON_MS sets another. */
export const CRON_MS = Number(process.env.FAULTS_CRON_MS ?? 20_000);
export const DOMAIN = "faults.test";

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Steps run after the file's tests, last pushed first (processes, fakes, loops); then `stateDir` is removed. */
export function cleanupAfterAll(stateDir: string) {
  const steps: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const step of steps.reverse()) await step().catch(() => {});
    rmSync(stateDir, { recursive: true, force: true });
  });
  return steps;
}
export const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

export interface FakeSes {
  url: string;
  counts: Record<string, number>;
  accepted: Map<string, string[]>;
  refused: Map<string, number>;
  notifications: { pending: number; posted: number; attempts: number };
  setTarget(url: string): void;
  setFault(kind: "throttle" | "refuse" | "hang" | null, ms?: number, extra?: { holdMs?: number; match?: RegExp }): void;
  addFault(kind: "throttle" | "refuse" | "hang", ms: number, extra?: { holdMs?: number; match?: RegExp }): void;
  close(): Promise<void>;
}

export async function fakeSes(port: number): Promise<FakeSes> {
  return startFakeSes({
    latencyMs: 30,
    port,
    sns: {
      keyPem: readFileSync("test/fixtures/sns/sns-test-key.pem", "utf8"),
      certPem: readFileSync("test/fixtures/sns/sns-test-cert.pem", "utf8"),
    },
  });
}

/** A fresh state directory with the migrations applied, a project and its verified sending domain; `contacts` subscribed contacts. */
export function freshState(stateDir: string, contacts = 0) {
  applyMigrations(stateDir);
  const project = createProject("faults", stateDir) as { id: string; secretKey: string };
  executeSql(verifiedDomainSql(project.id, DOMAIN), stateDir);
  if (contacts > 0) insertContacts(project.id, contacts, { stateDir, row: campaignContactRow(project.id, "fan") });
  return project;
}

export interface Runtime {
  base: string;
  /** SIGKILL to the whole process group (npx, wrangler, workerd): nothing is shut down cleanly. */
  kill(): Promise<void>;
  stop(): Promise<void>;
  log(): string;
}

/**
 * `wrangler dev` over `stateDir` on `port` with EMAIL_PROVIDER=ses pointed at the fake, SES event
 * publishing accepted from the fake's SNS topic (its certificate served by the fake: SNS_DEV_CERT_ORIGIN,
 * development only), the API and sending rates lifted, and `vars` on top. Resolves once /health answers.
 */
export async function startRuntime(stateDir: string, port: number, inspectorPort: number, fake: FakeSes, vars: Record<string, string> = {}): Promise<Runtime> {
  const base = `http://127.0.0.1:${port}`;
  const all: Record<string, string> = {
    ENVIRONMENT: "development",
    EMAIL_PROVIDER: "ses",
    SES_ENDPOINT: fake.url,
    SES_ACCESS_KEY_ID: "AKIDFAULTS",
    SES_SECRET_ACCESS_KEY: "faults-secret-key",
    SES_REGION: "us-east-1",
    SES_CONFIGURATION_SET: "faults",
    SES_SNS_TOPIC_ARNS: SNS_TOPIC,
    SNS_DEV_CERT_ORIGIN: fake.url,
    PUBLIC_URL: base,
    RATE_LIMIT_PER_MINUTE: "100000000",
    SEND_RATE_PER_SECOND: "1000000",
    LINK_SIGNING_SECRET: "faults-only-secret-at-least-32-bytes-long",
    DKIM_ENCRYPTION_KEY: "faults-only-encryption-key-at-least-32-bytes",
    ...vars,
  };
  // No devtools inspector relaying every subrequest (as the bench runs it).
  const server = await startWranglerDev(all, { port, inspectorPort, persistTo: stateDir, args: ["--test-scheduled"], timeoutMs: 120_000, pollMs: 200 });
  const runtime: Runtime = { base, kill: server.kill, stop: server.stop, log: server.output };
  fake.setTarget(base);
  return runtime;
}

/** Fires the scheduled handler every CRON_MS (as the Cron Trigger would) against whatever runtime `current()` is. */
export function cronLoop(current: () => Runtime | null, intervalMs = CRON_MS) {
  let stopped = false;
  let ticks = 0;
  const run = async () => {
    while (!stopped) {
      await sleep(intervalMs);
      const runtime = current();
      if (stopped || !runtime) continue;
      try {
        const res = await fetch(`${runtime.base}/__scheduled?cron=${encodeURIComponent("* * * * *")}`, { signal: AbortSignal.timeout(120_000) });
        await res.text();
        ticks++;
      } catch {
        // the runtime is down (killed): the next tick tries again
      }
    }
  };
  const done = run();
  return {
    get ticks() {
      return ticks;
    },
    async stop() {
      stopped = true;
      await done;
    },
  };
}

export async function api<T = any>(base: string, key: string, method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(base + path, {
    method,
    headers: { Authorization: `Bearer ${key}`, ...(body === undefined ? {} : { "Content-Type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(60_000),
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${path} answered ${res.status}: ${text.slice(0, 300)}`);
  return (text ? JSON.parse(text) : null) as T;
}

export interface EmailRow {
  id: string;
  to: string;
  status: string;
  error: string | null;
  providerMessageId: string | null;
}

/** Every email record matching `query` (e.g. "campaignId=..."), through GET /emails, 100 a page. */
export async function allEmails(base: string, key: string, query = ""): Promise<EmailRow[]> {
  const rows: EmailRow[] = [];
  let cursor: string | null = null;
  do {
    const page: any = await api(base, key, "GET", `/emails?limit=100${query ? `&${query}` : ""}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
    rows.push(...page.data.items);
    cursor = page.data.hasMore ? page.data.nextCursor : null;
  } while (cursor);
  return rows;
}

const FINAL_AFTER_SEND = new Set(["SENT", "DELIVERED", "OPENED", "CLICKED", "BOUNCED", "COMPLAINED"]);

/**
 * What the records say against what the provider saw, per email. `unknownNotTaken`: unknown outcomes
 * (FAILED "Outcome unknown: ...") the provider never got: the at-most-once policy's one loss, a call marked
 * as started when the runtime died before its request reached the provider (docs/reliability.md); the record
 * agrees (it claims nothing was delivered). `lost`: any other final record the provider never had nor refused.
 */
export function audit(rows: EmailRow[], fake: FakeSes) {
  let lost = 0;
  let unknownNotTaken = 0;
  let twice = 0;
  let disagree = 0;
  let pending = 0;
  const problems: string[] = [];
  for (const row of rows) {
    const taken = fake.accepted.get(row.id) ?? [];
    const refusedCount = fake.refused.get(row.id) ?? 0;
    if (row.status === "QUEUED" || row.status === "SENDING") pending++;
    if (taken.length > 1) {
      twice++;
      problems.push(`${row.id} sent ${taken.length} times`);
    }
    const unknown = row.status === "FAILED" && (row.error ?? "").startsWith("Outcome unknown:");
    if (taken.length === 0 && refusedCount === 0 && row.status !== "QUEUED" && row.status !== "SENDING") {
      // Final without the provider having it or having refused it.
      if (unknown) unknownNotTaken++;
      else {
        lost++;
        problems.push(`${row.id} ${row.status} (${row.error}) but never reached the provider`);
      }
    }
    const agrees =
      taken.length > 0
        ? FINAL_AFTER_SEND.has(row.status) && row.providerMessageId === taken[taken.length - 1]
        : refusedCount > 0
          ? row.status === "FAILED"
          : row.status === "QUEUED" || row.status === "SENDING" || unknown;
    if (!agrees) {
      disagree++;
      if (taken.length > 0) problems.push(`${row.id}: provider has ${taken.join(",")}, record ${row.status} ${row.providerMessageId} (${row.error})`);
    }
  }
  return { lost, unknownNotTaken, twice, disagree, pending, problems };
}

/** Polls `check` until it returns true or `ms` pass; returns the milliseconds it took (Infinity when it never did). */
export async function timeUntil(check: () => Promise<boolean>, ms: number, everyMs = 2_000): Promise<number> {
  const start = performance.now();
  while (performance.now() - start < ms) {
    try {
      if (await check()) return performance.now() - start;
    } catch {
      // the runtime may be restarting
    }
    await sleep(everyMs);
  }
  return Number.POSITIVE_INFINITY;
}

/** One line per scenario, as the issue asks for. */
export function report(scenario: string, figures: Record<string, string | number>) {
  const line = `[faults] ${scenario}: ${Object.entries(figures)
    .map(([k, v]) => `${k} ${v}`)
    .join(", ")}`;
  console.log(line);
  return line;
}
