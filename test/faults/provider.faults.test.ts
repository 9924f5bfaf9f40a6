/**
 * Provider faults through /v1/send against a real `wrangler dev` and the fake SES: throttled (429 for
 * 20 s), hanging (calls held 60 s: the Worker gives up after its 20 s limit while the fake keeps the
 * message, as SES would), refusing (400 for some recipients). Nothing is sent twice, nothing is lost that
 * the provider did not refuse, and after SES's events every record agrees with the provider.
 */
import { rmSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  allEmails,
  api,
  audit,
  cronLoop,
  DOMAIN,
  type FakeSes,
  fakeSes,
  freshState,
  PORTS,
  report,
  type Runtime,
  seconds,
  startRuntime,
  timeUntil,
} from "./harness";

const STATE = "/tmp/faults-provider-state";
const PORT = PORTS.wrangler + 2;
let fake: FakeSes;
let runtime: Runtime;
let cron: ReturnType<typeof cronLoop>;
let key: string;

beforeAll(async () => {
  fake = await fakeSes(PORTS.fake + 1);
  const project = freshState(STATE);
  key = project.secretKey;
  runtime = await startRuntime(STATE, PORT, PORTS.inspector + 2, fake);
  cron = cronLoop(() => runtime);
});

afterAll(async () => {
  await cron?.stop();
  await runtime?.stop();
  await fake?.close();
  rmSync(STATE, { recursive: true, force: true });
});

/** Sends to `to` through /v1/send (one request per 50 recipients); returns the email ids. */
async function send(to: string[]): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < to.length; i += 50) {
    const res = await api(runtime.base, key, "POST", "/v1/send", { to: to.slice(i, i + 50), from: `hello@${DOMAIN}`, subject: "Hi", body: "<p>Hi</p>" });
    ids.push(...res.data.emails.map((e: { email: string }) => e.email));
  }
  return ids;
}

/** Waits until every email of `ids` is final and agrees with the provider (its events applied); one line for the scenario. */
async function settle(scenario: string, ids: string[], started: number, limitMs = 180_000) {
  const wanted = new Set(ids);
  let last = audit([], fake);
  const took = await timeUntil(
    async () => {
      const rows = (await allEmails(runtime.base, key)).filter((r) => wanted.has(r.id));
      last = audit(rows, fake);
      return rows.length === ids.length && last.pending === 0 && last.disagree === 0 && fake.notifications.pending === 0;
    },
    limitMs,
    2_000,
  );
  const line = report(scenario, {
    emails: ids.length,
    "emails lost": last.lost,
    "unknown outcomes the provider never got": last.unknownNotTaken,
    "emails sent twice": last.twice,
    "records disagreeing with the provider": last.disagree,
    "still pending": last.pending,
    "time to final state": Number.isFinite(took) ? seconds(performance.now() - started) : "never",
  });
  expect(last.problems.slice(0, 10), line).toEqual([]);
  expect(last.lost).toBe(0);
  expect(last.unknownNotTaken).toBe(0);
  expect(last.twice).toBe(0);
  expect(last.disagree).toBe(0);
  expect(took).toBeLessThan(limitMs);
  return last;
}

const addresses = (n: number, tag: string) => Array.from({ length: n }, (_, i) => `${tag}${i}@example.org`);

// The three at once, each on its own recipients (the fake's faults match by address), so the suite stays short.
describe.concurrent("faults: the provider misbehaves", () => {
  it("throttled (429 for 20 s): every email goes out once when it ends", async () => {
    fake.addFault("throttle", 20_000, { match: /^throttled/ });
    const started = performance.now();
    const ids = await send(addresses(40, "throttled"));
    await settle("provider throttled 20 s", ids, started);
    for (const id of ids) expect(fake.accepted.get(id)).toHaveLength(1);
  });

  it("hanging (calls held 60 s): the Worker gives up after 20 s and never calls again; SES's events reconcile what it took", async () => {
    fake.addFault("hang", 5_000, { holdMs: 60_000, match: /^hung/ });
    const hungBefore = fake.counts.hung;
    const started = performance.now();
    const ids = await send(addresses(20, "hung"));
    await settle("provider hanging 60 s", ids, started);
    expect(fake.counts.hung - hungBefore).toBeGreaterThan(0);
    for (const id of ids) expect(fake.accepted.get(id)).toHaveLength(1);
  });

  it("refusing (400 for some recipients): those FAILED with SES's reason, never retried; the rest sent once", async () => {
    fake.addFault("refuse", 60_000, { match: /^refused/ });
    const started = performance.now();
    const ids = await send([...addresses(10, "refused"), ...addresses(30, "fine")]);
    await settle("provider refusing (400)", ids, started);
    const rows = (await allEmails(runtime.base, key)).filter((r) => ids.includes(r.id));
    const refused = rows.filter((r) => r.to.startsWith("refused"));
    expect(refused.map((r) => r.status)).toEqual(Array(10).fill("FAILED"));
    expect(refused.every((r) => r.error?.includes("Email address is not verified"))).toBe(true);
    for (const r of refused) expect(fake.refused.get(r.id)).toBe(1);
  });
});
