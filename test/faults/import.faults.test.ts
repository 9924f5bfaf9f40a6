/**
 * An import killed mid-way: a CSV uploaded to a real `wrangler dev`, the runtime SIGKILLed while its
 * chunks are being applied (their queue messages die with it), started again on the same state. The cron
 * must finish the import by itself (src/services/contact-imports/recovery.ts): COMPLETED with exact counts, every row
 * a contact once, within 3 minutes of the restart.
 */
import { performance } from "node:perf_hooks";
import { describe, expect, it } from "vitest";
import { api, cleanupAfterAll, cronLoop, fakeSes, freshState, PORTS, report, seconds, sleep, startRuntime, timeUntil, type Runtime } from "./harness";

const ROWS = Number(process.env.FAULTS_IMPORT_ROWS ?? 30_000);
const STATE = "/tmp/faults-import-state";
const cleanup = cleanupAfterAll(STATE);

describe("faults: an import killed mid-way", () => {
  it(`${ROWS} rows, SIGKILL while its chunks are applied, restart on the same state: COMPLETED by itself, counts exact, within 3 minutes`, async () => {
    const fake = await fakeSes(PORTS.fake + 2);
    cleanup.push(() => fake.close());
    const project = freshState(STATE);
    const key = project.secretKey;
    let runtime: Runtime | null = await startRuntime(STATE, PORTS.wrangler + 3, PORTS.inspector + 3, fake);
    cleanup.push(async () => runtime?.stop());
    const cron = cronLoop(() => runtime);
    cleanup.push(() => cron.stop());

    const csv = `email,plan\n${Array.from({ length: ROWS }, (_, i) => `row${i}@import.test,${i % 2 ? "pro" : "free"}`).join("\n")}\n`;
    const res = await fetch(`${runtime.base}/contacts/imports?subscribed=true`, {
      method: "POST",
      headers: { Authorization: `Bearer ${key}`, "Content-Type": "text/csv" },
      body: csv,
    });
    expect(res.status, await res.clone().text()).toBe(202);
    const job = (await res.json()) as { id: string };
    const progress = async (base: string) => await api(base, key, "GET", `/contacts/imports/${job.id}`);

    // Kill once some chunks are applied and others are not.
    const base1 = runtime.base;
    const waited = await timeUntil(async () => (await progress(base1)).processed > 0, 120_000, 100);
    expect(waited).toBeLessThan(Number.POSITIVE_INFINITY);
    const before = await progress(base1);
    await runtime.kill();
    runtime = null;
    await sleep(1_000);

    runtime = await startRuntime(STATE, PORTS.wrangler + 4, PORTS.inspector + 4, fake);
    const base = runtime.base;
    const restarted = performance.now();
    let last: { status: string; processed: number; created: number; updated: number; failed: number; total: number } = before;
    const took = await timeUntil(
      async () => {
        last = await progress(base);
        return last.status === "COMPLETED" || last.status === "FAILED";
      },
      300_000,
      2_000,
    );
    const contacts = (await api(base, key, "GET", "/contacts?limit=1")).total as number;
    const imported = (await api(base, key, "GET", "/events?name=contacts.imported&limit=10")).data.items.length as number;
    const line = report("import killed mid-way", {
      rows: ROWS,
      "processed before the kill": before.processed,
      "imports unfinished": last.status === "COMPLETED" ? 0 : 1,
      status: last.status,
      processed: last.processed,
      created: last.created,
      failed: last.failed,
      contacts,
      "contacts.imported events": imported,
      "time to final state after restart": Number.isFinite(took) ? seconds(took) : "never",
      "since restart": seconds(performance.now() - restarted),
    });
    expect(last.status, line).toBe("COMPLETED");
    expect(last.processed).toBe(ROWS);
    expect(last.created).toBe(ROWS);
    expect(last.failed).toBe(0);
    expect(contacts).toBe(ROWS);
    expect(imported).toBe(1);
    expect(took).toBeLessThan(180_000);
  });
});
