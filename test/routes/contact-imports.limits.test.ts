import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import type { Env } from "../../src/env";
import type { ImportChunkMessage } from "../../src/messages";
import { runImportJobs, STALL_MS, UPLOAD_TIMEOUT_MS } from "../../src/services/contact-imports/recovery";
import { FIXED_SQL } from "../../src/store/contact-imports";
import { recordingQueue } from "../fakes/queue";
import { call, expectError, type JsonResponse } from "../support/http";
import { heldBody, importSetup, type Job, until } from "../support/imports";
import type { EventList, ImportList } from "../support/api";

/**
 * Issue 38, I1 and the import half of "Faults" (with issue 34's file in R2): an
 * import's file counted in the project's R2 bytes, at most
 * MAX_ACTIVE_IMPORTS_PER_PROJECT open imports, dead uploads dropped and lost
 * chunks re-queued by the cron.
 */
vi.setConfig({ testTimeout: 60_000 });

const MINUTE = 60_000;
const rows = (n: number, prefix: string, extra = "") => Array.from({ length: n }, (_, i) => `${prefix}${i}@example.com${extra}`).join("\n");

/** Bytes the project's import jobs themselves hold (header, column plan, kept errors, failure reason). */
async function jobBytes(projectId: string) {
  const row = await env.DB.prepare(
    `SELECT coalesce(sum(length(CAST(columns AS BLOB)) + length(CAST(errors AS BLOB)) + coalesce(length(CAST(failure_reason AS BLOB)), 0)
       + coalesce(length(CAST(column_plan AS BLOB)), 0)), 0) AS b
     FROM contact_imports WHERE project_id = ?`,
  )
    .bind(projectId)
    .first<{ b: number }>();
  return row!.b;
}

/** Bytes of the project's contacts' data and events' data (what the 0019 triggers count for them). */
async function dataBytes(projectId: string) {
  const row = await env.DB.prepare(
    `SELECT coalesce((SELECT sum(length(CAST(data AS BLOB))) FROM contacts WHERE project_id = ?1), 0)
          + coalesce((SELECT sum(length(CAST(data AS BLOB))) FROM events WHERE project_id = ?1), 0) AS b`,
  )
    .bind(projectId)
    .first<{ b: number }>();
  return row!.b;
}

describe("an import's file counts in the project's R2 bytes, not in its stored bytes", () => {
  it("the file's bytes are on the R2 ledger from the upload on; D1's stored bytes hold the job, then the contacts and the event", async () => {
    const s = await importSetup();
    const before = await s.storedBytes();
    const csv = `email,name\n${rows(1200, "b", ",Someone")}\n`;
    const res = await s.upload(csv);
    expect(res.status).toBe(202);
    expect(await s.fileBytes()).toBe(csv.length);
    expect(await s.storedBytes()).toBe(before + (await jobBytes(s.project.id)));

    // One chunk processed: its contacts' data counted.
    const [first, ...others] = s.takeChunks();
    await s.runChunks([first]);
    expect(await s.storedBytes()).toBe(before + (await jobBytes(s.project.id)) + (await dataBytes(s.project.id)));

    await s.runChunks(others);
    expect(await s.job(res.body.id)).toMatchObject({ status: "COMPLETED", created: 1200 });
    expect(await s.ranges()).toBe(0);
    expect(await s.storedBytes()).toBe(before + (await jobBytes(s.project.id)) + (await dataBytes(s.project.id)));
    expect(await s.fileBytes()).toBe(csv.length);
  });

  it("an upload that would pass QUOTA_R2_STORED_BYTES is refused with 403 QUOTA_EXCEEDED, and leaves no job, no file and the bytes as before", async () => {
    // 12,000 rows are about 350 KB.
    const s = await importSetup({ QUOTA_R2_STORED_BYTES: "300000" } as Partial<Env>);
    const before = await s.storedBytes();
    const refused = await s.upload(`email,n\n${rows(12_000, "q", ",0123456789")}\n`);
    const error = expectError(refused, 403, "QUOTA_EXCEEDED");
    expect(error.message).toContain("object storage");
    expect(s.takeChunks()).toEqual([]);
    expect((await s.request<ImportList>("GET", "/contacts/imports")).body.data.total).toBe(0);
    expect(await s.files()).toEqual([]);
    expect(await s.fileBytes()).toBe(0);
    expect(await s.storedBytes()).toBe(before);
    expect((await s.contacts()).size).toBe(0);

    // What fits is imported.
    expect(await s.importCsv(`email,n\n${rows(1000, "q", ",0123456789")}\n`)).toMatchObject({ status: "COMPLETED", created: 1000 });
  });

  it("a chunk whose contacts would pass QUOTA_STORED_BYTES fails its rows with the quota's message; the job still completes", async () => {
    const probe = await importSetup();
    const base = await probe.storedBytes();
    // A long value: each contact's data is about 110 bytes, so the first 500 fit in 100 KB and the next 500 do not.
    const s = await importSetup({ QUOTA_STORED_BYTES: String(base + 100_000) } as Partial<Env>);
    const res = await s.upload(`email,note\n${rows(1000, "c", `,${"v".repeat(96)}`)}\n`);
    expect(res.status).toBe(202);
    await s.pump();
    const job = await s.job(res.body.id);
    expect(job).toMatchObject({ status: "COMPLETED", total: 1000, created: 500, failed: 500 });
    expect(job.errors[0]).toMatchObject({ row: 501, message: expect.stringContaining("bytes of stored mail and data") });
    expect(await s.ranges()).toBe(0);
  });
});

describe("open imports per project (MAX_ACTIVE_IMPORTS_PER_PROJECT, default 2)", () => {
  it("a third concurrent upload gets 409 in the error envelope and stages nothing; another project is not affected", async () => {
    const s = await importSetup();
    const held = [0, 1, 2].map((i) => heldBody(`email\n${rows(600, `h${i}-`)}\n`, `last${i}@example.com\n`));
    const settled: (JsonResponse<Job> | null)[] = [null, null, null];
    const uploads = held.map((h, i) =>
      s.upload(h.body).then((res) => {
        settled[i] = res;
        return res;
      }),
    );
    // All three read their header at once; the conditional insert lets two in.
    const refusedIndex = await until(async () => {
      const done = settled.findIndex((r) => r !== null);
      expect(done).toBeGreaterThanOrEqual(0);
      return done;
    });
    const refused = settled[refusedIndex]!;
    const error = expectError(refused, 409, "CONFLICT");
    expect(error.message).toBe("This project already has 2 imports in progress (PENDING or PROCESSING)");
    expect(error.suggestion).toContain("GET /contacts/imports");
    const open = await s.request<ImportList>("GET", "/contacts/imports");
    expect(open.body.data.items.map((j) => j.status)).toEqual(["PENDING", "PENDING"]);

    // Another project uploads meanwhile.
    const other = await importSetup();
    expect((await other.importCsv("email\nelse@example.com\n")).status).toBe("COMPLETED");

    for (const h of held) h.release();
    const accepted = (await Promise.all(uploads)).filter((_, i) => i !== refusedIndex);
    for (const res of accepted) expect(res.status, JSON.stringify(res.body)).toBe(202);
    expect(accepted.map((r) => r.body.total)).toEqual([601, 601]);

    // PROCESSING counts too: still 409 until one completes.
    const fourth = await s.upload("email\nlater@example.com\n");
    expectError(fourth, 409, "CONFLICT");
    expect(await s.ranges()).toBe(4);
    await s.pump();
    expect((await s.upload("email\nlater@example.com\n")).status).toBe(202);
    const contacts = await s.contacts();
    expect(contacts.size).toBe(1202);
    expect([...contacts.keys()].some((e) => e.startsWith(`h${refusedIndex}-`))).toBe(false);
  });

  it("the limit is a setting", async () => {
    const s = await importSetup({ MAX_ACTIVE_IMPORTS_PER_PROJECT: "1" } as Partial<Env>);
    expect((await s.upload("email\na@example.com\n")).status).toBe(202);
    const second = await s.upload("email\nb@example.com\n");
    expect(expectError(second, 409, "CONFLICT").message).toContain("already has 1 imports");
    await s.pump();
    expect((await s.upload("email\nb@example.com\n")).status).toBe(202);
  });
});

describe("the cron finishes what a crash left", () => {
  it("an upload from which no rows arrived for 3 minutes is FAILED with its reason and keeps no file; a late rest of it is refused", async () => {
    const s = await importSetup({ MAX_ACTIVE_IMPORTS_PER_PROJECT: "1" } as Partial<Env>);
    const before = await s.storedBytes();
    // 4,500 rows arrive, then the client goes silent.
    const held = heldBody(`email\n${rows(4500, "d")}\n`, "tail@example.com\n");
    const upload = s.upload(held.body);
    const list = await until(async () => {
      const listed = await s.request<ImportList>("GET", "/contacts/imports");
      expect(listed.body.data.items).toHaveLength(1);
      return listed;
    });
    const id = list.body.data.items[0].id;
    expect(list.body.data.items[0]).toMatchObject({ status: "PENDING", failureReason: null });

    // Two minutes of silence is not yet dead.
    await s.cron(2 * MINUTE);
    expect((await s.job(id)).status).toBe("PENDING");

    const tick = await s.cron(UPLOAD_TIMEOUT_MS + MINUTE);
    expect(tick.imports).toMatchObject({ expired: 1 });
    const failed = await s.job(id);
    expect(failed).toMatchObject({ status: "FAILED", processed: 0, created: 0 });
    expect(failed.failureReason).toContain("no rows arrived for 3 minutes");
    expect(failed.finishedAt).not.toBeNull();
    expect(await s.files()).toEqual([]);
    expect(await s.storedBytes()).toBe(before + (await jobBytes(s.project.id)));
    // Its place is free again.
    expect((await s.importCsv("email\nnext@example.com\n")).status).toBe("COMPLETED");

    // The client wakes up: its upload is refused and stages nothing; the job keeps its reason.
    held.release();
    const late = await upload;
    expect(expectError(late, 400, "INVALID_STATE").message).toContain("no rows arrived for 3 minutes");
    expect(await s.job(id)).toMatchObject({ status: "FAILED", failureReason: failed.failureReason });
    expect(await s.files()).toHaveLength(1); // only the next import's
    expect(await s.fileBytes()).toBe("email\nnext@example.com\n".length);
    expect(s.takeChunks()).toEqual([]);
    expect((await s.contacts()).has("d1@example.com")).toBe(false);
  });

  it("a PROCESSING import whose chunk messages were lost is re-queued after a minute without progress and completes; every row applies once however often its chunks come", async () => {
    const s = await importSetup();
    // Row 600 repeats row 3's address: row 3 counts nowhere (its chunk skips it).
    const lines = Array.from({ length: 1200 }, (_, i) => (i === 599 ? "r2@example.com,late" : `r${i}@example.com,${i}`));
    const res = await s.upload(`email,n\n${lines.join("\n")}\n`);
    expect(res.body).toMatchObject({ status: "PROCESSING", total: 1199 });
    const original = s.takeChunks();
    expect(original.map((c) => [c.fromRow, c.toRow])).toEqual([
      [1, 500],
      [501, 1000],
      [1001, 1200],
    ]);
    // Only the last chunk's message arrives; the others are lost (a crash of the runtime that held them).
    await s.runChunks([original[2]]);
    expect(await s.job(res.body.id)).toMatchObject({ processed: 200 });

    // Not yet stalled: nothing is queued.
    expect((await s.cron(STALL_MS / 2)).imports).toMatchObject({ requeued: 0 });
    expect(s.takeChunks()).toEqual([]);

    const tick = await s.cron(STALL_MS + MINUTE);
    expect(tick.imports).toMatchObject({ requeued: 999, resumed: [res.body.id] });
    const requeued = s.takeChunks();
    expect(requeued.map((c) => [c.fromRow, c.toRow])).toEqual([
      [1, 500],
      [501, 1000],
    ]);
    // A re-queued chunk twice in one batch, with the lost originals turning up late, twice, in every order.
    expect(await s.runChunks([requeued[0], requeued[0], original[0]])).toEqual([]);
    await Promise.all([s.runChunks([original[1]]), s.runChunks([requeued[1]]), s.runChunks([original[1], requeued[1]])]);
    await s.runChunks([...original, ...requeued], 2);

    const job = await s.job(res.body.id);
    expect(job).toMatchObject({ status: "COMPLETED", total: 1199, processed: 1199, created: 1199, updated: 0, failed: 0 });
    const contacts = await s.contacts();
    expect(contacts.size).toBe(1199);
    expect(contacts.get("r2@example.com")!.data).toEqual({ n: "late" });
    const events = await s.request<EventList>("GET", "/events?name=contacts.imported");
    expect(events.body.data.items).toHaveLength(1);
    expect(await s.ranges()).toBe(0);

    // Finished: the cron leaves it alone.
    expect((await s.cron(10 * MINUTE)).imports).toMatchObject({ requeued: 0 });
    expect(s.takeChunks()).toEqual([]);
  });

  it("a large import is re-queued in rounds of bounded size, one per tick, until its last row", async () => {
    const s = await importSetup();
    const res = await s.upload(`email\n${rows(1200, "big")}\n`);
    s.takeChunks();
    const tick = (at: number) => runImportJobs(s.testEnv, new Date(Date.now() + at), { resumeRowsPerTick: 500, sweepRangesPerTick: 500 });
    expect(await tick(STALL_MS + MINUTE)).toMatchObject({ requeued: 500 });
    expect(s.takeChunks().map((c) => [c.fromRow, c.toRow])).toEqual([[1, 500]]);
    // The round goes on at the next tick although nothing is stalled any more.
    expect(await tick(STALL_MS + 2 * MINUTE)).toMatchObject({ requeued: 500 });
    expect(await tick(STALL_MS + 3 * MINUTE)).toMatchObject({ requeued: 200 });
    const rest = s.takeChunks();
    expect(rest.map((c) => [c.fromRow, c.toRow])).toEqual([
      [501, 1000],
      [1001, 1200],
    ]);
    // The round is over: the next one only after another stall.
    expect(await tick(STALL_MS + 3 * MINUTE + 1000)).toMatchObject({ requeued: 0 });
    await s.runChunks(rest);
    expect(await s.job(res.body.id)).toMatchObject({ status: "PROCESSING", processed: 700 });
    await s.runChunks([{ importId: res.body.id, projectId: s.project.id, fromRow: 1, toRow: 500 }]);
    expect(await s.job(res.body.id)).toMatchObject({ status: "COMPLETED", processed: 1200, created: 1200 });
  });

  it("chunks that could not be queued at upload are queued by the cron: the upload is still 202 and the import completes", async () => {
    const s = await importSetup();
    const broken = recordingQueue();
    broken.failNext(10);
    const res = await call<Job>("POST", "/contacts/imports", {
      key: s.project.secretKey,
      rawBody: `email\n${rows(700, "u")}\n`,
      headers: { "Content-Type": "text/csv" },
      env: { ...s.testEnv, IMPORT_QUEUE: broken as unknown as Queue<ImportChunkMessage> },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    expect(res.body).toMatchObject({ status: "PROCESSING", total: 700 });
    await s.cron(STALL_MS + MINUTE);
    await s.pump();
    expect(await s.job(res.body.id)).toMatchObject({ status: "COMPLETED", created: 700 });
  });

  it("a PROCESSING import without any progress for 24 hours is FAILED with its reason and its ranges dropped", async () => {
    const s = await importSetup();
    const res = await s.upload(`email\n${rows(700, "a")}\n`);
    const [first] = s.takeChunks();
    await s.runChunks([first]);
    // The queue never delivers: each round's messages are lost too.
    await s.cron(24 * 60 * MINUTE + MINUTE);
    s.takeChunks();
    const job = await s.job(res.body.id);
    expect(job).toMatchObject({ status: "FAILED", processed: 500, created: 500 });
    expect(job.failureReason).toContain("no progress for 24 hours");
    expect(await s.ranges()).toBe(0);
  });
});

describe("the import store's fixed SQL", () => {
  for (const [name, sql] of Object.entries(FIXED_SQL)) {
    it(`${name} compiles against the migrated schema`, async () => {
      const count = Math.max(0, ...[...sql.matchAll(/\?(\d+)/g)].map((m) => Number(m[1])));
      await expect(
        env.DB.prepare(`EXPLAIN ${sql}`)
          .bind(...Array.from({ length: count }, () => null))
          .all(),
      ).resolves.toBeDefined();
    });
  }
});
