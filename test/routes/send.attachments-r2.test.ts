import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { bytesToBase64 } from "../../src/lib/base64";
import { call, expectError } from "../support/http";
import { sendingSetup } from "../support/sending";

/**
 * Issue 34: a send's attachments and the capture provider's raw mail live in R2, not in D1's
 * blob_chunks; the provider gets the same MIME as before.
 */
vi.setConfig({ testTimeout: 60_000 });

const count = async (sql: string, ...params: unknown[]) =>
  (await env.DB.prepare(sql)
    .bind(...params)
    .first<{ n: number }>())!.n;
const r2Bytes = async (projectId: string, prefix: string) =>
  (await env.DB.prepare("SELECT coalesce(sum(bytes), 0) AS n FROM r2_usage WHERE project_id = ? AND prefix = ?")
    .bind(projectId, prefix)
    .first<{ n: number }>())!.n;
const storedBytes = async (projectId: string) =>
  (await env.DB.prepare("SELECT stored_bytes AS n FROM projects WHERE id = ?").bind(projectId).first<{ n: number }>())!.n;

describe("attachments in R2", () => {
  it("are put once per send, read by the send consumer from R2 and reach the provider's MIME unchanged; D1 holds no base64", async () => {
    const s = await sendingSetup();
    const binary = bytesToBase64(Uint8Array.from({ length: 300_000 }, (_, i) => (i * 7919) % 256));
    const text = btoa("hello, attachment");
    const res = await s.send({
      to: ["a@example.com", "b@example.com"],
      from: s.from,
      subject: "files",
      body: "<p>see attached</p>",
      attachments: [
        { filename: "blob.bin", content: binary, contentType: "application/octet-stream" },
        { filename: "note.txt", content: text, contentType: "text/plain" },
      ],
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const emailId = res.body.data.emails[0].email;
    const { send_id: sendId } = (await env.DB.prepare("SELECT send_id FROM emails WHERE id = ?").bind(emailId).first<{ send_id: string }>())!;

    // One object per attachment under the project's prefix, holding the base64 as given.
    const listed = await env.STORAGE.list({ prefix: `attachments/${s.project.id}/${sendId}/` });
    expect(listed.objects.map((o) => o.key).sort()).toEqual([`attachments/${s.project.id}/${sendId}/0`, `attachments/${s.project.id}/${sendId}/1`]);
    expect(await (await env.STORAGE.get(`attachments/${s.project.id}/${sendId}/0`))!.text()).toBe(binary);
    // The rows name the objects; nothing of the content is in D1.
    const rows = await env.DB.prepare("SELECT blob_id, object_key, size FROM email_attachments WHERE send_id = ? ORDER BY position").bind(sendId).all();
    expect(rows.results).toEqual([
      { blob_id: "", object_key: `attachments/${s.project.id}/${sendId}/0`, size: 300_000 },
      { blob_id: "", object_key: `attachments/${s.project.id}/${sendId}/1`, size: 17 },
    ]);
    expect(await count("SELECT count(*) AS n FROM blob_chunks")).toBe(0);
    // Counted on the project's R2 ledger (the objects' bytes), not in D1's stored bytes.
    expect(await r2Bytes(s.project.id, "attachments/")).toBe(binary.length + text.length);
    expect(await storedBytes(s.project.id)).toBeLessThan(10_000);

    await s.deliver();
    expect(s.ses.calls).toHaveLength(2);
    for (const sent of s.ses.calls) {
      const parts = sent.mime.parts.filter((p) => /attachment/.test(p.headers["content-disposition"] ?? ""));
      expect(parts.map((p) => p.base64)).toEqual([binary, text]);
    }
  });

  it("a send whose attachments would pass QUOTA_R2_STORED_BYTES is a 403 and writes nothing", async () => {
    const s = await sendingSetup({ QUOTA_R2_STORED_BYTES: "50000" } as never);
    const email = (content: string) => ({
      to: "a@example.com",
      from: s.from,
      subject: "Hi",
      body: "<p>Hi</p>",
      attachments: [{ filename: "a.bin", contentType: "application/octet-stream", content }],
    });
    expectError(await s.send(email(btoa("z".repeat(60_000)))), 403, "QUOTA_EXCEEDED");
    expect(await count("SELECT count(*) AS n FROM emails WHERE project_id = ?", s.project.id)).toBe(0);
    expect(await r2Bytes(s.project.id, "attachments/")).toBe(0);
    expect((await s.send(email(btoa("small")))).status).toBe(200);
  });
});

describe("captured mail in R2 (EMAIL_PROVIDER=capture)", () => {
  it("the raw message is in an R2 object under captured/; the row names it and /dev/outbox serves it byte for byte", async () => {
    const s = await sendingSetup({ EMAIL_PROVIDER: "capture" } as never);
    const devEnv = { ...env, ENVIRONMENT: "development" };
    const res = await s.send({
      to: ["x@example.com", "y@example.com"],
      from: s.from,
      subject: "Captured ✓",
      body: "<p>kept in R2 — ünïcode</p>",
      attachments: [{ filename: "n.txt", content: btoa("captured attachment"), contentType: "text/plain" }],
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    await s.deliver();
    const rows = (
      await env.DB.prepare("SELECT id, email_id, object_key, object_offset, size FROM captured_messages WHERE project_id = ? ORDER BY email_id")
        .bind(s.project.id)
        .all<{ id: string; email_id: string; object_key: string; object_offset: number; size: number }>()
    ).results;
    expect(rows).toHaveLength(2);
    for (const row of rows) {
      expect(row.object_key).toMatch(/^captured\/\d{4}-\d{2}-\d{2}\//);
      const object = await env.STORAGE.get(row.object_key, { range: { offset: row.object_offset, length: row.size } });
      const raw = await object!.text();
      expect(raw).toContain(`Message-ID: <${row.email_id}@${s.domain}>`);
      const eml = await call<string>("GET", `/dev/outbox/${row.id}.eml`, { env: devEnv });
      expect(eml.status).toBe(200);
      expect(eml.body === raw).toBe(true);
      expect(eml.body).toContain(btoa("captured attachment"));
    }
    expect(await count("SELECT count(*) AS n FROM blob_chunks")).toBe(0);
    const page = await call<string>("GET", "/dev/outbox", { env: devEnv });
    expect(page.body).toContain("Captured ✓");
    const detail = await call<string>("GET", `/dev/outbox/${rows[0].id}`, { env: devEnv });
    expect(detail.status).toBe(200);
    expect(detail.body).toContain("kept in R2");
  });
});
