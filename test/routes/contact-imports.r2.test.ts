import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { getDb } from "../../src/db/client";
import { HandOver } from "../../src/hand-over";
import { createImport } from "../../src/services/contact-imports/upload";
import { IMPORT_PART_BYTES } from "../../src/store/objects/imports";
import { deadLetterQueue } from "../../src/messages";
import { csvRecords, IMPORT_QUEUE, importSetup } from "../support/imports";
import { runConsumer } from "../support/queues";

/**
 * Issue 34: an uploaded CSV lives in R2 (imports/<projectId>/<importId>.csv) and each chunk
 * consumer reads its byte range of it; D1 holds the job and its chunks' ranges, never the rows.
 */
vi.setConfig({ testTimeout: 60_000 });

/** The body as a stream of `size`-byte pieces (offsets must hold whatever the pieces' edges cut). */
function inPieces(text: string, size: number) {
  const bytes = new TextEncoder().encode(text);
  return new ReadableStream<Uint8Array>({
    start(controller) {
      for (let i = 0; i < bytes.length; i += size) controller.enqueue(bytes.slice(i, i + size));
      controller.close();
    },
  });
}

const tableExists = async (name: string) =>
  (await env.DB.prepare("SELECT count(*) AS n FROM sqlite_master WHERE type = 'table' AND name = ?").bind(name).first<{ n: number }>())!.n > 0;

describe("an import's file in R2", () => {
  it("is kept as uploaded and counted in r2_usage; chunks read their byte ranges (BOM, CRLF, quoted line breaks, UTF-8, blank lines, repeats across chunks)", async () => {
    const s = await importSetup();
    const storedBefore = await s.storedBytes();
    const lines = Array.from({ length: 1300 }, (_, i) => {
      if (i === 1) return "not-an-address,x,";
      if (i === 700) return 'First@Example.com,"Zoë, last","line one\r\nline two"'; // repeats row 1 (in the first chunk) from the second
      if (i === 1250) return "r600@example.com,wins,"; // repeats row 601 (second chunk) from the third
      return `r${i}@example.com,"Ñame ${i}","q ""${i}"""`;
    });
    lines[0] = "first@example.com,early,gone";
    const csv = `\ufeffemail,name,note\r\n${lines.slice(0, 400).join("\r\n")}\r\n\r\n${lines.slice(400).join("\r\n")}\r\n`;
    const res = await s.request<{ id: string; total: number }>("POST", "/contacts/imports", {
      rawBody: inPieces(csv, 7),
      headers: { "Content-Type": "text/csv" },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    expect(res.body.total).toBe(1298);

    // The file, byte for byte, under the project's prefix; its bytes on the R2 ledger, not in D1's stored bytes.
    const [file] = await s.files();
    expect(file.key).toBe(`imports/${s.project.id}/${res.body.id}.csv`);
    const stored = new Uint8Array(await (await env.STORAGE.get(file.key))!.arrayBuffer());
    const sent = new TextEncoder().encode(csv);
    expect(stored.length === sent.length && stored.every((b, i) => b === sent[i])).toBe(true);
    const size = sent.length;
    expect(file.size).toBe(size);
    expect(await s.fileBytes()).toBe(size);
    expect(await s.ranges()).toBe(3);
    expect(await tableExists("contact_import_rows")).toBe(false);
    expect(await tableExists("blob_chunks")).toBe(true); // attachments written before migration 0030 only
    // Only the job's header and column plan count in D1 (the 0025 and 0035 triggers); before issue 34 every staged row did.
    expect((await s.storedBytes()) - storedBefore).toBeLessThan(400);

    await s.pump(1);
    const job = await s.job(res.body.id);
    expect(job).toMatchObject({ status: "COMPLETED", total: 1298, processed: 1298, created: 1297, failed: 1, duplicates: 2 });
    expect(job.errors).toEqual([
      { row: 1, message: "Duplicate: the same email appears again in row 701, which was imported instead" },
      { row: 2, message: "Invalid email address: not-an-address" },
      { row: 601, message: "Duplicate: the same email appears again in row 1251, which was imported instead" },
    ]);
    const contacts = await s.contacts();
    expect(contacts.size).toBe(1297);
    expect(contacts.get("first@example.com")!.data).toEqual({ name: "Zoë, last", note: "line one\r\nline two" });
    expect(contacts.get("r600@example.com")!.data).toEqual({ name: "wins" });
    expect(contacts.get("r1299@example.com")!.data).toEqual({ name: "Ñame 1299", note: 'q "1299"' });
    // Finished: its ranges are gone from D1; the file stays until the imports/ lifecycle rule expires it.
    expect(await s.ranges()).toBe(0);
    expect(await s.files()).toHaveLength(1);
  });

  it("a chunk reads its rows with the line ending the header ended with, not the first one in its own range", async () => {
    const s = await importSetup();
    // CRLF ends every record; row 501, the second chunk's first, has a bare LF inside its name.
    const rows = Array.from({ length: 600 }, (_, i) => `lf${i + 1}@example.com,${i === 500 ? "two\nlines" : `n${i + 1}`}`);
    const job = await s.importCsv(`email,name\r\n${rows.join("\r\n")}\r\n`);
    expect(job).toMatchObject({ status: "COMPLETED", total: 600, created: 600, failed: 0 });
    const contacts = await s.contacts();
    expect(contacts.get("lf501@example.com")!.data).toEqual({ name: "two\nlines" });
    expect(contacts.get("lf600@example.com")!.data).toEqual({ name: "n600" });
  });

  it("rows that grow as JSON (control characters) make smaller chunks: what a chunk binds stays under D1's 2 MB per value", async () => {
    const s = await importSetup();
    // 5 KB of the file per row, about 35 KB once its data is a JSON string inside JSON (\\u0001 per character).
    const note = "\u0001".repeat(5000);
    const res = await s.upload<{ id: string }>(`email,note\n${Array.from({ length: 100 }, (_, i) => `c${i}@example.com,${note}`).join("\n")}\n`);
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    const chunks = s.takeChunks();
    // By bytes alone one chunk would hold all 100 rows (500 KB).
    expect(chunks.map((c) => c.toRow - c.fromRow + 1).every((n) => n <= 26)).toBe(true);
    await s.runChunks(chunks);
    expect(await s.job(res.body.id)).toMatchObject({ status: "COMPLETED", created: 100, failed: 0 });
    expect((await s.contacts()).get("c7@example.com")!.data).toEqual({ note });
  });

  it("a file larger than one multipart part is written in parts and imported whole; a chunk delivered again imports nothing twice", async () => {
    const s = await importSetup();
    const note = "n".repeat(20_000);
    const rows = Math.ceil((IMPORT_PART_BYTES * 1.3) / 20_030);
    const csv = `email,note\n${Array.from({ length: rows }, (_, i) => `big${i}@example.com,${note}`).join("\n")}\n`;
    expect(csv.length).toBeGreaterThan(IMPORT_PART_BYTES);
    const res = await s.upload<{ id: string; total: number }>(inPieces(csv, 64 * 1024));
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    const [file] = await s.files();
    expect(file.size).toBe(csv.length);
    expect((await (await env.STORAGE.get(file.key))!.text()) === csv).toBe(true);
    // Chunks are cut by bytes too (CHUNK_BYTES): ~44 rows of 20 KB each.
    const chunks = s.takeChunks();
    expect(chunks.length).toBeGreaterThan(5);
    expect(chunks[0]).toMatchObject({ fromRow: 1, toRow: 44 });
    await s.runChunks([chunks[0], chunks[0], chunks[1]]);
    await s.runChunks([chunks[1], ...chunks]);
    const job = await s.job(res.body.id);
    expect(job).toMatchObject({ status: "COMPLETED", total: rows, processed: rows, created: rows, failed: 0 });
    const exported = csvRecords(String((await s.request("GET", "/contacts/export")).body)).slice(1);
    expect(exported).toHaveLength(rows);
    expect(exported.every((r) => JSON.parse(r[5]).note === note)).toBe(true);
  });

  it("an upload refused after parts were written (past the size limit) leaves no object and no job", async () => {
    const s = await importSetup();
    const line = `x@example.com,${"p".repeat(10_000)}\n`;
    const csv = `email,pad\n${line.repeat(Math.ceil((IMPORT_PART_BYTES * 1.5) / line.length))}`;
    const refused = await createImport(
      getDb(env.DB),
      s.testEnv,
      new HandOver(s.testEnv),
      s.project.id,
      inPieces(csv, 256 * 1024),
      {},
      IMPORT_PART_BYTES + 1024 * 1024,
    ).catch((err) => err);
    expect(refused).toMatchObject({ code: "PAYLOAD_TOO_LARGE", status: 413 });
    expect(await s.files()).toEqual([]);
    expect(await s.fileBytes()).toBe(0);
    expect((await s.request<{ data: { total: number } }>("GET", "/contacts/imports")).body.data.total).toBe(0);
  });

  it("a chunk whose file is gone is retried, then the dead-letter queue fails its rows; the job completes", async () => {
    const s = await importSetup();
    const res = await s.upload<{ id: string }>(`email\n${Array.from({ length: 600 }, (_, i) => `g${i}@example.com`).join("\n")}\n`);
    const [first, second] = s.takeChunks();
    await s.runChunks([first]);
    const [file] = await s.files();
    await env.STORAGE.delete(file.key);
    expect(await s.runChunks([second])).toEqual([second]);
    await runConsumer(deadLetterQueue(IMPORT_QUEUE), s.testEnv, [{ body: second }]);
    expect(await s.job(res.body.id)).toMatchObject({ status: "COMPLETED", total: 600, created: 500, failed: 100 });
  });
});
