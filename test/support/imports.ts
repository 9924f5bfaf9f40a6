import { env } from "cloudflare:workers";
import { parse } from "csv-parse/sync";
import { expect } from "vitest";
import type { Env } from "../../src/env";
import { IMPORT_QUEUE, type ImportChunkMessage } from "../../src/messages";
import { runScheduledJobs } from "../../src/scheduled";
import { recordingQueue } from "../fakes/queue";
import { call, newProject } from "./http";
import { runConsumer } from "./queues";
import type { ContactList, ImportJob } from "./api";

export { IMPORT_QUEUE };

/** An import job as GET /contacts/imports/{id} shows it. */
export type Job = ImportJob;

/**
 * A project whose Worker queues import chunks in a recording queue; `pump`
 * runs the real import consumer (worker.queue) on them until none is left.
 */
export async function importSetup(overrides: Partial<Env> = {}) {
  const queue = recordingQueue();
  const testEnv = { ...env, IMPORT_QUEUE: queue as unknown as Queue<ImportChunkMessage>, ...overrides } as Env;
  const project = await newProject("importer");
  const key = project.secretKey;

  const request = <T = unknown>(
    method: string,
    path: string,
    options: { body?: unknown; rawBody?: BodyInit; headers?: Record<string, string>; key?: string } = {},
  ) => call<T>(method, path, { key: options.key ?? key, body: options.body, rawBody: options.rawBody, headers: options.headers, env: testEnv });

  const upload = <T = ImportJob>(csv: BodyInit, query = "", options: { key?: string; type?: string; headers?: Record<string, string> } = {}) =>
    request<T>("POST", `/contacts/imports${query}`, {
      rawBody: csv,
      headers: { "Content-Type": options.type ?? "text/csv", ...options.headers },
      key: options.key,
    });

  /** One consumer invocation on these chunk messages; returns the ones it retried. */
  async function runChunks(messages: ImportChunkMessage[], attempts = 1): Promise<ImportChunkMessage[]> {
    const { retriedBodies } = await runConsumer(
      IMPORT_QUEUE,
      testEnv,
      messages.map((body) => ({ body })),
      { attempts },
    );
    return retriedBodies;
  }

  /** Queued chunk messages, taken from the queue. */
  const takeChunks = () => queue.take().map((m) => m.body as unknown as ImportChunkMessage);

  /** Runs everything queued, redelivering what was retried, until the queue is empty (bounded). */
  async function pump(batchSize = 10) {
    for (let round = 0; round < 50; round++) {
      const list = takeChunks();
      if (list.length === 0) return;
      for (let i = 0; i < list.length; i += batchSize) {
        const again = await runChunks(list.slice(i, i + batchSize), round + 1);
        for (const body of again) queue.messages.push({ body: body as never });
      }
    }
    throw new Error("the import queue did not drain");
  }

  async function job(id: string): Promise<Job> {
    const res = await request<Job>("GET", `/contacts/imports/${id}`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body;
  }

  /** Uploads the CSV (202 expected), processes every chunk and returns the finished job. */
  async function importCsv(csv: BodyInit, query = ""): Promise<Job> {
    const res = await upload(csv, query);
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    await pump();
    return job(res.body.id);
  }

  /** Every contact of the project (through GET /contacts), by email. */
  async function contacts(): Promise<Map<string, { id: string; email: string; subscribed: boolean; data: Record<string, unknown> }>> {
    const all = new Map();
    let cursor: string | null = null;
    for (let i = 0; i < 1000; i++) {
      const res = await request<ContactList>("GET", `/contacts?limit=100${cursor ? `&cursor=${cursor}` : ""}`);
      expect(res.status).toBe(200);
      const page: ContactList = res.body;
      for (const c of page.contacts) all.set(c.email, c);
      cursor = page.cursor;
      if (!cursor) break;
    }
    return all;
  }

  async function exportCsv(query = "") {
    const res = await request("GET", `/contacts/export${query}`);
    expect(res.status, String(res.body)).toBe(200);
    return String(res.body);
  }

  /** The project's stored bytes (projects.stored_bytes, kept by triggers). */
  async function storedBytes(): Promise<number> {
    const row = await env.DB.prepare("SELECT stored_bytes AS b FROM projects WHERE id = ?").bind(project.id).first<{ b: number }>();
    return row!.b;
  }

  /** The project's uploaded import files in R2 (imports/<projectId>/...): key and size. */
  async function files(): Promise<{ key: string; size: number }[]> {
    const listed = await env.STORAGE.list({ prefix: `imports/${project.id}/` });
    return listed.objects.map((o) => ({ key: o.key, size: o.size }));
  }

  /** The bytes the project's r2_usage counts under imports/. */
  async function fileBytes(): Promise<number> {
    const row = await env.DB.prepare("SELECT coalesce(sum(bytes), 0) AS b FROM r2_usage WHERE project_id = ? AND prefix = 'imports/'")
      .bind(project.id)
      .first<{ b: number }>();
    return row!.b;
  }

  /** The chunk ranges the project's imports still have in D1 (deleted when an import ends). */
  async function ranges(): Promise<number> {
    const row = await env.DB.prepare("SELECT count(*) AS n FROM contact_import_ranges r JOIN contact_imports i ON i.id = r.import_id WHERE i.project_id = ?")
      .bind(project.id)
      .first<{ n: number }>();
    return row!.n;
  }

  /** One cron tick (every scheduled job) at `atMs` from now, with this setup's queue. */
  const cron = (atMs = 0) => runScheduledJobs(testEnv, { scheduledTime: Date.now() + atMs });

  return {
    project,
    queue,
    testEnv,
    request,
    upload,
    runChunks,
    takeChunks,
    pump,
    job,
    importCsv,
    contacts,
    exportCsv,
    storedBytes,
    files,
    fileBytes,
    ranges,
    cron,
  };
}

/**
 * A request body that sends `head` at once and the rest only when `release()`
 * is called: an upload held open (a slow client, or one whose invocation is about to die).
 */
export function heldBody(head: string, rest = "") {
  const encoder = new TextEncoder();
  let release!: () => void;
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  let sent = false;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (!sent) {
        sent = true;
        controller.enqueue(encoder.encode(head));
        return;
      }
      await gate;
      if (rest) controller.enqueue(encoder.encode(rest));
      controller.close();
    },
  });
  return { body, release };
}

/** Polls `check` until it passes (or fails after ~5 s). */
export async function until<T>(check: () => Promise<T>, tries = 100): Promise<T> {
  for (let i = 0; ; i++) {
    try {
      return await check();
    } catch (err) {
      if (i >= tries) throw err;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

/** The CSV's records, parsed by the library (header row first). */
export const csvRecords = (csv: string): string[][] => parse(csv, { bom: true });
