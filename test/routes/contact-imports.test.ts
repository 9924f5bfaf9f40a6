import { env } from "cloudflare:workers";
import { getDb } from "../../src/db/client";
import { deadLetterQueue } from "../../src/messages";
import { HandOver } from "../../src/hand-over";
import { createImport, MAX_IMPORT_BYTES } from "../../src/services/contact-imports/upload";
import { afterEach, describe, expect, it, vi } from "vitest";
import { call, type ErrorBody } from "../support/http";
import { Webhook } from "standardwebhooks";
import { receiver, recordedEvents } from "../support/webhooks";
import { eventually } from "../support/wait";
import { csvRecords, IMPORT_QUEUE, importSetup } from "../support/imports";
import { runConsumer } from "../support/queues";
import type { EventList, ImportList, OpenApiDoc, Segment, UpsertedContact, WebhookWithSecret } from "../support/api";

const CHUNK_ROWS = 500;

describe("POST /contacts/imports", () => {
  it("reads RFC 4180 quoting, a BOM, CRLF and case-insensitive column names", async () => {
    const s = await importSetup();
    const csv =
      "\ufeffEMAIL,Subscribed,firstName,note\r\n" + 'ada@example.com,yes,"Lovelace, Ada","She said ""hi""\r\nthen left"\r\n' + '"Bob@Example.com",0,Bob,\r\n';
    const job = await s.importCsv(csv);
    expect(job).toMatchObject({ status: "COMPLETED", total: 2, processed: 2, created: 2, updated: 0, failed: 0, errors: [] });
    expect(job.finishedAt).not.toBeNull();
    const contacts = await s.contacts();
    expect(contacts.get("ada@example.com")).toMatchObject({ subscribed: true, data: { firstName: "Lovelace, Ada", note: 'She said "hi"\r\nthen left' } });
    // An empty cell sets nothing; addresses are stored lower-case.
    expect(contacts.get("bob@example.com")).toMatchObject({ subscribed: false, data: { firstName: "Bob" } });
  });

  it("a repeated email: the last row wins and counts once", async () => {
    const s = await importSetup();
    const job = await s.importCsv("email,name\na@example.com,first\nb@example.com,b\nA@example.com,last\n");
    expect(job).toMatchObject({ total: 2, created: 2, updated: 0, failed: 0 });
    const contacts = await s.contacts();
    expect(contacts.size).toBe(2);
    expect(contacts.get("a@example.com")!.data).toEqual({ name: "last" });
  });

  it("updates existing contacts like POST /contacts (data merged) and applies ?subscribed= to rows without a value", async () => {
    const s = await importSetup();
    const existing = await s.request<UpsertedContact>("POST", "/contacts", {
      body: { email: "old@example.com", subscribed: false, data: { plan: "pro", city: "Oslo" } },
    });
    expect(existing.status).toBe(201);
    const job = await s.importCsv('email,city,data\nold@example.com,Bergen,"{""score"":3}"\nnew@example.com,,\n', "?subscribed=true");
    expect(job).toMatchObject({ total: 2, created: 1, updated: 1, failed: 0 });
    const contacts = await s.contacts();
    expect(contacts.get("old@example.com")).toMatchObject({ id: existing.body.id, subscribed: true, data: { plan: "pro", city: "Bergen", score: 3 } });
    expect(contacts.get("new@example.com")).toMatchObject({ subscribed: true, data: {} });
  });

  it("without ?subscribed= a new contact is unsubscribed and an existing one keeps its subscription", async () => {
    const s = await importSetup();
    await s.request("POST", "/contacts", { body: { email: "keen@example.com", subscribed: true } });
    const job = await s.importCsv("email\nkeen@example.com\nfresh@example.com\n");
    expect(job).toMatchObject({ created: 1, updated: 1 });
    const contacts = await s.contacts();
    expect(contacts.get("keen@example.com")!.subscribed).toBe(true);
    expect(contacts.get("fresh@example.com")!.subscribed).toBe(false);
  });

  it("counts bad rows in failed with their row numbers (1 = the first data row) and imports the rest", async () => {
    const s = await importSetup();
    const csv = [
      "email,subscribed,data",
      "good@example.com,true,",
      "not-an-address,true,",
      ",true,",
      "maybe@example.com,perhaps,",
      'json@example.com,,"{not json"',
      'array@example.com,,"[1,2]"',
      "extra@example.com,true,,surplus",
      "fine@example.com,false,",
    ].join("\n");
    const job = await s.importCsv(csv);
    expect(job).toMatchObject({ status: "COMPLETED", total: 8, processed: 8, created: 2, updated: 0, failed: 6 });
    expect(job.created + job.updated + job.failed).toBe(job.total);
    expect(job.errors.map((e) => e.row)).toEqual([2, 3, 4, 5, 6, 7]);
    expect(job.errors[0].message).toContain("Invalid email address");
    expect(job.errors[1].message).toBe("email is empty");
    expect(job.errors[2].message).toContain("subscribed");
    expect(job.errors[3].message).toContain("JSON");
    expect(job.errors[4].message).toContain("JSON object");
    expect(job.errors[5].message).toContain("fields");
    expect([...(await s.contacts()).keys()].sort()).toEqual(["fine@example.com", "good@example.com"]);
  });

  it("keeps the first 100 errors by row number", async () => {
    const s = await importSetup();
    const rows = Array.from({ length: 1200 }, (_, i) => (i % 2 === 0 ? `bad-${i}` : `ok${i}@example.com`));
    const job = await s.importCsv(`email\n${rows.join("\n")}\n`);
    expect(job).toMatchObject({ total: 1200, created: 600, failed: 600 });
    expect(job.errors).toHaveLength(100);
    expect(job.errors.map((e) => e.row)).toEqual(Array.from({ length: 100 }, (_, i) => 2 * i + 1));
  });

  it("422 without an email column, for an empty body and a malformed file; nothing is imported", async () => {
    const s = await importSetup();
    const missing = await s.upload<ErrorBody>("name,plan\nAda,pro\n");
    expect(missing.status).toBe(422);
    expect(missing.body.error.errors![0]).toMatchObject({ field: "email" });
    const empty = await s.upload("");
    expect(empty.status).toBe(422);
    const rows = Array.from({ length: 700 }, (_, i) => `u${i}@example.com`).join("\n");
    const malformed = await s.upload<ErrorBody>(`email,name\n${rows}\nx@example.com,"unclosed\n`);
    expect(malformed.status).toBe(422);
    expect(malformed.body.error.errors![0].message).toContain("malformed");
    const wrongType = await s.upload("email\na@example.com\n", "", { type: "application/json" });
    expect(wrongType.status).toBe(400);
    expect(s.takeChunks()).toEqual([]);
    const list = await s.request<ImportList>("GET", "/contacts/imports");
    expect(list.body.data).toMatchObject({ items: [], total: 0 });
    expect((await s.contacts()).size).toBe(0);
    // No file kept in R2, nothing counted.
    expect(await s.files()).toEqual([]);
    expect(await s.fileBytes()).toBe(0);
  });

  it("refuses a CSV past the size limit with 413 as it streams (no Content-Length) and leaves nothing", async () => {
    const s = await importSetup();
    const rows = Array.from({ length: 3000 }, (_, i) => `big${i}@example.com`).join("\n");
    const bytes = new TextEncoder().encode(`email\n${rows}\n`);
    // A stream in 1 KB pieces, so the refusal comes after rows were read.
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < bytes.length; i += 1024) controller.enqueue(bytes.slice(i, i + 1024));
        controller.close();
      },
    });
    const db = getDb(env.DB);
    const refused = await createImport(db, s.testEnv, new HandOver(s.testEnv), s.project.id, body, {}, 40_000).catch((err) => err);
    expect(refused).toMatchObject({ code: "PAYLOAD_TOO_LARGE", status: 413 });
    expect(s.takeChunks()).toEqual([]);
    expect((await s.request<ImportList>("GET", "/contacts/imports")).body.data.total).toBe(0);
    expect(await s.files()).toEqual([]);
    expect(await s.fileBytes()).toBe(0);
    // Over HTTP, a declared Content-Length past 50 MB is refused before anything is read.
    const declared = await s.upload("email\n", "", { headers: { "Content-Length": String(MAX_IMPORT_BYTES + 1) } });
    expect(declared.status).toBe(413);
  });

  it("applies the contacts quota per row: rows past it fail with the quota's message, the rest go on", async () => {
    const s = await importSetup({ QUOTA_CONTACTS: "1000" } as never);
    await s.request("POST", "/contacts", { body: { email: "u5@example.com", data: { before: true } } });
    const rows = Array.from({ length: 1200 }, (_, i) => `u${i}@example.com,${i}`);
    const job = await s.importCsv(`email,n\n${rows.join("\n")}\n`);
    // 1 existing (updated, costs nothing), 999 created up to the quota, 200 refused.
    expect(job).toMatchObject({ status: "COMPLETED", total: 1200, updated: 1, created: 999, failed: 200 });
    expect(job.errors[0].message).toBe("This project has reached its quota of 1000 contacts");
    const contacts = await s.contacts();
    expect(contacts.size).toBe(1000);
    expect(contacts.get("u5@example.com")!.data).toEqual({ before: true, n: 5 });
  });

  it("shows progress while it runs and is exact when a chunk is delivered twice", async () => {
    const s = await importSetup();
    const rows = Array.from({ length: 1200 }, (_, i) => `p${i}@example.com,${i}`);
    const res = await s.upload(`email,n\n${rows.join("\n")}\n`);
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({ status: "PROCESSING", total: 1200, processed: 0, created: 0 });
    const chunks = s.takeChunks();
    expect(chunks.map((c) => [c.fromRow, c.toRow])).toEqual([
      [1, CHUNK_ROWS],
      [CHUNK_ROWS + 1, 2 * CHUNK_ROWS],
      [2 * CHUNK_ROWS + 1, 1200],
    ]);
    // The same message twice in one batch, then again in two concurrent invocations.
    expect(await s.runChunks([chunks[0], chunks[0]])).toEqual([]);
    expect(await s.job(res.body.id)).toMatchObject({ status: "PROCESSING", processed: 500, created: 500 });
    await Promise.all([s.runChunks([chunks[1]]), s.runChunks([chunks[1]]), s.runChunks([chunks[2]])]);
    await s.runChunks(chunks, 2);
    const job = await s.job(res.body.id);
    expect(job).toMatchObject({ status: "COMPLETED", total: 1200, processed: 1200, created: 1200, updated: 0, failed: 0 });
    expect((await s.contacts()).size).toBe(1200);
    // One contacts.imported event, however often the last chunk came.
    const events = await s.request<EventList>("GET", "/events?name=contacts.imported");
    expect(events.body.data.items).toHaveLength(1);
    expect(events.body.data.items[0]).toMatchObject({
      name: "contacts.imported",
      data: { importId: job.id, total: 1200, created: 1200, updated: 0, failed: 0 },
    });
  });

  it("a chunk that failed on every retry (dead-letter queue) counts its rows as failed, so the job still completes", async () => {
    const s = await importSetup();
    const rows = Array.from({ length: 700 }, (_, i) => `d${i}@example.com`);
    const res = await s.upload(`email\n${rows.join("\n")}\n`);
    const [first, second] = s.takeChunks();
    await s.runChunks([first]);
    const dead = await runConsumer(deadLetterQueue(IMPORT_QUEUE), s.testEnv, [{ id: "dead", body: second }]);
    expect(dead.explicitAcks).toEqual(["dead"]);
    const job = await s.job(res.body.id);
    expect(job).toMatchObject({ status: "COMPLETED", total: 700, created: 500, failed: 200 });
    expect(job.errors[0]).toMatchObject({ row: 501, message: expect.stringContaining("could not be processed") });
    // The chunk's own message arriving late changes nothing.
    await s.runChunks([second]);
    expect(await s.job(res.body.id)).toMatchObject({ created: 500, failed: 200 });
  });

  it("lists imports newest first", async () => {
    const s = await importSetup();
    const first = await s.importCsv("email\na@example.com\n");
    const second = await s.importCsv("email\nb@example.com\n");
    const list = await s.request<ImportList>("GET", "/contacts/imports?limit=1");
    expect(list.body.data).toMatchObject({ total: 2, hasMore: true });
    expect(list.body.data.items.map((j) => j.id)).toEqual([second.id]);
    const next = await s.request<ImportList>("GET", `/contacts/imports?limit=1&cursor=${list.body.data.nextCursor}`);
    expect(next.body.data.items.map((j) => j.id)).toEqual([first.id]);
  });

  it("imported contacts start no CONTACT_CREATED / CONTACT_SUBSCRIBED workflows", async () => {
    const s = await importSetup();
    for (const type of ["CONTACT_CREATED", "CONTACT_SUBSCRIBED"]) {
      const wf = await s.request("POST", "/workflows", { body: { name: type, trigger: { type }, steps: [], enabled: true } });
      expect(wf.status, JSON.stringify(wf.body)).toBe(201);
    }
    await s.request("POST", "/contacts", { body: { email: "was-off@example.com", subscribed: false } });
    const outbox = () => env.DB.prepare("SELECT kind, contact_id FROM workflow_trigger_outbox WHERE project_id = ?").bind(s.project.id).all();
    const before = (await outbox()).results.length;
    const job = await s.importCsv("email,subscribed\nnew@example.com,true\nwas-off@example.com,true\n");
    expect(job).toMatchObject({ created: 1, updated: 1 });
    expect((await outbox()).results.length).toBe(before);
    // Any other write of a contact does queue them (the check above can fail).
    await env.DB.prepare(
      "INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at) VALUES (?, ?, 'direct@example.com', 1, '{}', 0, 0)",
    )
      .bind(crypto.randomUUID(), s.project.id)
      .run();
    expect((await outbox()).results.length).toBe(before + 2);
  });
});

describe("GET /contacts/export", () => {
  const source = [
    "email,subscribed,data,plan",
    'ada@example.com,true,"{""nested"":{""a"":[1,2,""x,y""]},""n"":1.5,""flag"":false}",pro',
    'bob@example.com,false,"{""quote"":""he said \\""hi\\""\\nbye""}",free',
    "cy@example.com,true,,",
  ].join("\r\n");

  it("streams every contact as CSV with the contract's header; the export imports back unchanged", async () => {
    const a = await importSetup();
    expect(await a.importCsv(source)).toMatchObject({ created: 3, failed: 0 });
    const exported = await a.exportCsv();
    const records = csvRecords(exported);
    expect(records[0]).toEqual(["id", "email", "subscribed", "createdAt", "updatedAt", "data"]);
    expect(records).toHaveLength(4);
    const original = await a.contacts();
    for (const [id, email, subscribed, createdAt, , data] of records.slice(1)) {
      const contact = original.get(email)!;
      expect({ id, subscribed: subscribed === "true", data: JSON.parse(data) }).toEqual({ id: contact.id, subscribed: contact.subscribed, data: contact.data });
      expect(Number.isNaN(Date.parse(createdAt))).toBe(false);
    }
    expect(original.get("bob@example.com")!.data).toEqual({ quote: 'he said "hi"\nbye', plan: "free" });

    // Into another project: the same contacts, subscriptions and data.
    const b = await importSetup();
    const job = await b.importCsv(exported);
    expect(job).toMatchObject({ total: 3, created: 3, updated: 0, failed: 0 });
    const copy = await b.contacts();
    for (const [email, contact] of original) expect(copy.get(email)).toMatchObject({ email, subscribed: contact.subscribed, data: contact.data });
    const view = (csv: string) => csvRecords(csv).map((r) => [r[1], r[2], r[5]]);
    expect(view(await b.exportCsv())).toEqual(view(exported));

    // Into the same project: every contact updated, nothing changed.
    expect(await a.importCsv(exported)).toMatchObject({ created: 0, updated: 3, failed: 0 });
    expect(view(await a.exportCsv())).toEqual(view(exported));
  });

  it("filters by subscribed and by segment; 404 for an unknown segment", async () => {
    const s = await importSetup();
    await s.importCsv(source);
    const emails = (csv: string) =>
      csvRecords(csv)
        .slice(1)
        .map((r) => r[1]);
    expect(emails(await s.exportCsv("?subscribed=true"))).toEqual(["ada@example.com", "cy@example.com"]);
    expect(emails(await s.exportCsv("?subscribed=false"))).toEqual(["bob@example.com"]);
    const segment = await s.request<Segment>("POST", "/segments", {
      body: { name: "Pro", condition: { logic: "AND", groups: [{ filters: [{ field: "data.plan", operator: "equals", value: "pro" }] }] } },
    });
    expect(segment.status, JSON.stringify(segment.body)).toBe(201);
    expect(emails(await s.exportCsv(`?segmentId=${segment.body.id}`))).toEqual(["ada@example.com"]);
    expect(emails(await s.exportCsv(`?segmentId=${segment.body.id}&subscribed=false`))).toEqual([]);
    expect((await s.request("GET", "/contacts/export?segmentId=nope")).status).toBe(404);
  });

  it("pages through more contacts than one page holds", async () => {
    const s = await importSetup();
    const rows = Array.from({ length: 2500 }, (_, i) => `e${String(i).padStart(4, "0")}@example.com`);
    expect(await s.importCsv(`email\n${rows.join("\n")}\n`)).toMatchObject({ created: 2500 });
    const records = csvRecords(await s.exportCsv()).slice(1);
    expect(records).toHaveLength(2500);
    expect(new Set(records.map((r) => r[1])).size).toBe(2500);
  });
});

describe("keys and projects", () => {
  it("public keys get 403; another project's import is 404 and its contacts are not exported", async () => {
    const a = await importSetup();
    const b = await importSetup();
    const job = await a.importCsv("email\nsecret@example.com\n");
    const pk = a.project.publicKey;
    expect((await a.upload("email\nx@example.com\n", "", { key: pk })).status).toBe(403);
    expect((await a.request("GET", "/contacts/imports", { key: pk })).status).toBe(403);
    expect((await a.request("GET", `/contacts/imports/${job.id}`, { key: pk })).status).toBe(403);
    expect((await a.request("GET", "/contacts/export", { key: pk })).status).toBe(403);
    expect((await b.request("GET", `/contacts/imports/${job.id}`)).status).toBe(404);
    expect((await b.request<ImportList>("GET", "/contacts/imports")).body.data.items).toEqual([]);
    expect(csvRecords(await b.exportCsv())).toHaveLength(1);
    // A chunk message naming another project does nothing.
    const other = await b.upload("email\nmine@example.com\n");
    const [chunk] = b.takeChunks();
    await b.runChunks([{ ...chunk, projectId: a.project.id }]);
    expect((await b.job(other.body.id)).processed).toBe(0);
    expect((await a.contacts()).has("mine@example.com")).toBe(false);
  });

  it("documents the routes in /openapi.json", async () => {
    const res = await call<OpenApiDoc>("GET", "/openapi.json");
    expect(Object.keys(res.body.paths)).toEqual(expect.arrayContaining(["/contacts/imports", "/contacts/imports/{id}", "/contacts/export"]));
  });
});

describe("webhooks of an import", () => {
  afterEach(() => vi.restoreAllMocks());

  it("sends one contacts.imported event with the finished job, and no per-contact events", async () => {
    const { calls } = receiver();
    const s = await importSetup();
    const hook = await s.request<WebhookWithSecret>("POST", "/webhooks", { body: { url: "https://hooks.example.net/in" } });
    expect(hook.status, JSON.stringify(hook.body)).toBe(201);
    const done = await s.importCsv("email,name\r\na@example.org,A\r\nb@example.org,B\r\nnot-an-email,C\r\n");
    expect(done).toMatchObject({ status: "COMPLETED", total: 3, created: 2, failed: 1 });
    const events = await eventually(async () => {
      const got = calls.map((c) => new Webhook(hook.body.secret).verify(c.body, c.headers) as { type: string; data: Record<string, unknown> });
      expect(got).toHaveLength(1);
      return got;
    });
    expect(events[0]).toMatchObject({ type: "contacts.imported", data: { id: done.id, status: "COMPLETED", total: 3, created: 2, updated: 0, failed: 1 } });
    expect(await recordedEvents(s.project.id)).toEqual(["contacts.imported"]);
  });
});
