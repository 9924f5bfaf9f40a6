/**
 * Receiving (issue 37): worker.email() with real-world messages, through the inbound consumer,
 * read back over the HTTP API.
 */
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import apple from "../../fixtures/inbound/apple-mail-reply.eml?raw";
import dsn from "../../fixtures/inbound/dsn-bounce.eml?raw";
import gmail from "../../fixtures/inbound/gmail-reply.eml?raw";
import outOfOffice from "../../fixtures/inbound/out-of-office.eml?raw";
import outlook from "../../fixtures/inbound/outlook-reply.eml?raw";
import { largeMessage } from "../../fakes/email-message";
import { namedAddress } from "../../../src/services/inbound/receive";
import { expectError } from "../../support/http";
import { fill, INBOUND_DOMAIN, inboundSetup } from "./harness";

afterEach(() => vi.restoreAllMocks());

describe("a reply to an email's reply address", () => {
  it("a Gmail reply is stored, parsed, matched by its token to the email and contact, and its quoted history stripped", async () => {
    const s = await inboundSetup();
    const sent = await s.sendTo("ada@example.com");
    const message = await s.receive({
      from: "ada@example.com",
      to: sent.replyTo,
      raw: fill(gmail, { to: sent.replyTo, from: "ada@example.com", parentId: sent.headerId }),
    });
    expect(message.rejected).toBeNull();

    // Stored before it is parsed: RECEIVED, the match of its token already known.
    const [received] = (await s.list()).items;
    expect(received).toMatchObject({
      status: "RECEIVED",
      emailId: sent.emailId,
      contactId: sent.contactId,
      match: "TOKEN",
      to: sent.replyTo,
      strippedText: null,
    });

    await s.parse();
    const item = await s.detail(received.id);
    expect(item).toMatchObject({
      status: "PARSED",
      emailId: sent.emailId,
      contactId: sent.contactId,
      match: "TOKEN",
      from: "ada@example.com",
      fromName: "Ada Lovelace",
      subject: "Re: Your order has shipped",
      autoReply: false,
      messageId: "<CAJx9v+Q2kZ4a8bWQ3nM1rP0sT5uV7wX9yZ1aB3cD5eF7gH9iJ@mail.gmail.com>",
      inReplyTo: `<${sent.headerId}>`,
      references: [`<${sent.headerId}>`],
      attachments: [],
    });
    expect(item.strippedText).toBe("Thanks, that works for me! Could you send it to the office address instead?\n\nAda");
    expect(item.text).toContain("> Your order #1042 has shipped.");

    // The contact's event, with the contract's data.
    const events = await s.get<{ data: { items: { name: string; contactId: string; data: Record<string, unknown> }[] } }>(
      `/events?contactId=${sent.contactId}&name=email.received`,
    );
    expect(events.body.data.items).toHaveLength(1);
    expect(events.body.data.items[0].data).toMatchObject({
      inboundId: received.id,
      emailId: sent.emailId,
      contactId: sent.contactId,
      from: "ada@example.com",
      subject: "Re: Your order has shipped",
      strippedText: item.strippedText,
      autoReply: false,
      match: "TOKEN",
    });

    // GET /emails/{id}/replies lists it.
    const replies = await s.get<{ data: { items: { id: string }[] } }>(`/emails/${sent.emailId}/replies`);
    expect(replies.body.data.items.map((r) => r.id)).toEqual([received.id]);
  });

  it("a reply address an MTA folded to upper case still names the email; the parsed text counts in storedBytes", async () => {
    const s = await inboundSetup();
    const sent = await s.sendTo("ada@example.com");
    const storedBytes = async () => (await s.get<{ data: { storedBytes: number } }>("/project")).body.data.storedBytes;
    const before = await storedBytes();
    const upper = sent.replyTo.toUpperCase();
    const message = await s.receive({ from: "ada@example.com", to: upper, raw: fill(gmail, { to: upper, from: "ada@example.com" }) });
    expect(message.rejected).toBeNull();
    await s.parse();
    const [item] = (await s.list()).items;
    expect(item).toMatchObject({ match: "TOKEN", emailId: sent.emailId, to: sent.replyTo });
    const { text } = await s.detail(item.id);
    // The row (its text, the stripped reply, the subject, 200 bytes of envelope) and the event's data.
    expect((await storedBytes()) - before).toBeGreaterThan(200 + (text?.length ?? 0));
  });

  it("redelivering the queue message changes nothing: one row, one event", async () => {
    const s = await inboundSetup();
    const sent = await s.sendTo("ada@example.com");
    await s.receive({ from: "ada@example.com", to: sent.replyTo, raw: fill(gmail, { to: sent.replyTo, from: "ada@example.com", parentId: sent.headerId }) });
    await s.parse(3);
    expect((await s.list()).total).toBe(1);
    const events = await s.get<{ data: { total: number } }>(`/events?contactId=${sent.contactId}&name=email.received`);
    expect(events.body.data.total).toBe(1);
  });

  it("an Apple Mail reply keeps its attachment's metadata, and the attachment downloads as a file, never inline", async () => {
    const s = await inboundSetup();
    const sent = await s.sendTo("kj@example.com");
    await s.receive({ from: "kj@example.com", to: sent.replyTo, raw: fill(apple, { to: sent.replyTo, from: "kj@example.com", parentId: sent.headerId }) });
    await s.parse();
    const [row] = (await s.list()).items;
    const item = await s.detail(row.id);
    expect(item.strippedText).toBe("Here is the signed delivery form.");
    expect(item.attachments).toEqual([{ filename: "signed-form.pdf", contentType: "application/pdf", size: expect.any(Number) }]);

    const file = await s.request("GET", `/inbound/${row.id}/attachments/0`);
    expect(file.status).toBe(200);
    expect(file.headers.get("Content-Disposition")).toMatch(/^attachment; filename="signed-form.pdf"/);
    expect(file.headers.get("X-Content-Type-Options")).toBe("nosniff");
    expect(String(file.body).startsWith("%PDF-1.4")).toBe(true);
    expectError(await s.request("GET", `/inbound/${row.id}/attachments/1`), 404, "NOT_FOUND");

    const raw = await s.request("GET", `/inbound/${row.id}/raw`);
    expect(raw.status).toBe(200);
    expect(raw.headers.get("Content-Type")).toBe("message/rfc822");
    expect(raw.headers.get("Content-Disposition")).toMatch(/^attachment;/);
    expect(String(raw.body)).toContain("Message-Id: <8F1C2D3E-4A5B-6C7D-8E9F-0A1B2C3D4E5F@icloud.com>");
  });
});

describe("a message to a named address of the project", () => {
  it("an Outlook reply is linked to the email it answers by In-Reply-To (the SES id), its Outlook history and signature stripped", async () => {
    const s = await inboundSetup();
    const sent = await s.sendTo("grace@example.com");
    const to = namedAddress("support", s.project.id, INBOUND_DOMAIN);
    await s.receive({ from: "grace@example.com", to, raw: fill(outlook, { to, from: "grace@example.com", parentId: sent.headerId }) });
    await s.parse();
    const [item] = (await s.list()).items;
    expect(item).toMatchObject({ status: "PARSED", match: "HEADERS", emailId: sent.emailId, contactId: sent.contactId, to });
    expect(item.strippedText).toBe("Hi,\n\nPlease hold the parcel at the depot, I will collect it on Thursday.\n\nKind regards,\nGrace");
  });

  it("unthreaded mail from an unknown sender is stored unlinked, and no contact is created", async () => {
    const s = await inboundSetup();
    const to = namedAddress("support", s.project.id, INBOUND_DOMAIN);
    await s.receive({ from: "stranger@example.net", to, raw: fill(outlook, { to, from: "stranger@example.net" }) });
    await s.parse();
    const [item] = (await s.list()).items;
    expect(item).toMatchObject({ status: "PARSED", match: "NONE", emailId: null, contactId: null, from: "stranger@example.net" });
    const contacts = await s.get<{ total: number }>("/contacts");
    expect(contacts.body.total).toBe(0);
  });

  it("an existing contact who writes unthreaded is that contact's message", async () => {
    const s = await inboundSetup();
    const created = await s.request<{ id: string }>("POST", "/contacts", { email: "grace@example.com" });
    const to = namedAddress("support", s.project.id, INBOUND_DOMAIN);
    await s.receive({ from: "grace@example.com", to, raw: fill(outlook, { to, from: "Grace@Example.com" }) });
    await s.parse();
    const [item] = (await s.list(`?contactId=${created.body.id}`)).items;
    expect(item).toMatchObject({ match: "NONE", emailId: null, contactId: created.body.id });
  });

  it("headers naming another project's email link nothing: ids are matched within the project only", async () => {
    const other = await inboundSetup();
    const theirs = await other.sendTo("ada@example.com");
    const s = await inboundSetup();
    const to = namedAddress("support", s.project.id, INBOUND_DOMAIN);
    await s.receive({ from: "ada@example.com", to, raw: fill(gmail, { to, from: "ada@example.com", parentId: theirs.headerId }) });
    await s.parse();
    const [item] = (await s.list()).items;
    expect(item).toMatchObject({ match: "NONE", emailId: null, contactId: null });
    expect((await other.list()).total).toBe(0);
  });
});

describe("auto-replies and delivery reports", () => {
  it("an out-of-office is flagged autoReply and records no event (a wait for a reply goes on)", async () => {
    const s = await inboundSetup();
    const sent = await s.sendTo("ada@example.com");
    await s.receive({
      from: "ada@example.com",
      to: sent.replyTo,
      raw: fill(outOfOffice, { to: sent.replyTo, from: "ada@example.com", parentId: sent.headerId }),
    });
    await s.parse();
    const [item] = (await s.list()).items;
    expect(item).toMatchObject({ autoReply: true, match: "TOKEN", emailId: sent.emailId });
    const events = await s.get<{ data: { total: number } }>(`/events?contactId=${sent.contactId}&name=email.received`);
    expect(events.body.data.total).toBe(0);
  });

  it("a DSN bounce (empty envelope sender, multipart/report) is flagged autoReply", async () => {
    const s = await inboundSetup();
    const sent = await s.sendTo("ada@example.com");
    await s.receive({ from: "", to: sent.replyTo, raw: fill(dsn, { to: sent.replyTo, from: "ada@example.com", parentId: sent.headerId }) });
    await s.parse();
    const [item] = (await s.list()).items;
    expect(item).toMatchObject({ autoReply: true, from: "mailer-daemon@googlemail.com", status: "PARSED" });
  });
});

describe("what email() refuses", () => {
  it("a message over INBOUND_MAX_BYTES is rejected before its stream is read", async () => {
    const s = await inboundSetup();
    const sent = await s.sendTo("ada@example.com");
    const raw = largeMessage({ from: "ada@example.com", to: sent.replyTo, bytes: 12 * 1024 * 1024 });
    const message = await s.receive({ from: "ada@example.com", to: sent.replyTo, raw });
    expect(message.rejected).toMatch(/too large/i);
    expect(message.streamRead).toBe(false);
    expect((await s.list()).total).toBe(0);
  });

  it("a message between the parse cap and the size limit keeps its headers and text, lists no attachments", async () => {
    const s = await inboundSetup({ INBOUND_MAX_BYTES: String(12 * 1024 * 1024) });
    const sent = await s.sendTo("ada@example.com");
    const raw = largeMessage({ from: "ada@example.com", to: sent.replyTo, bytes: 9 * 1024 * 1024 });
    const message = await s.receive({ from: "ada@example.com", to: sent.replyTo, raw });
    expect(message.rejected).toBeNull();
    await s.parse();
    const [row] = (await s.list()).items;
    const item = await s.detail(row.id);
    expect(item).toMatchObject({ status: "PARSED", subject: "A large file", strippedText: "Here is the file you asked for.", attachments: [] });
    expect(item.size).toBe(raw.length);
    expect(item.error).toMatch(/parse cap/);
    expectError(await s.request("GET", `/inbound/${row.id}/attachments/0`), 400, "INVALID_STATE");
  });

  it("a forged reply token is rejected as an unknown recipient", async () => {
    const s = await inboundSetup();
    const sent = await s.sendTo("ada@example.com");
    const forged = sent.replyTo.replace(/[0-9a-f](?=@)/, (c) => (c === "0" ? "1" : "0"));
    const message = await s.receive({ from: "ada@example.com", to: forged, raw: fill(gmail, { to: forged, from: "ada@example.com" }) });
    expect(message.rejected).toBe("No such recipient here");
    expect(message.streamRead).toBe(false);
    expect((await s.list()).total).toBe(0);
  });

  it("a token of another project's email is received for that project, never for the one addressed by name", async () => {
    const other = await inboundSetup();
    const theirs = await other.sendTo("ada@example.com");
    const s = await inboundSetup();
    await s.receive({ from: "ada@example.com", to: theirs.replyTo, raw: fill(gmail, { to: theirs.replyTo, from: "ada@example.com" }) });
    expect((await s.list()).total).toBe(0);
    expect((await other.list()).items[0]).toMatchObject({ emailId: theirs.emailId, match: "TOKEN" });
  });

  it("unknown addresses, reserved names and other domains are rejected", async () => {
    const s = await inboundSetup();
    for (const to of [
      `support+${"0".repeat(32)}@${INBOUND_DOMAIN}`,
      namedAddress("u", s.project.id, INBOUND_DOMAIN),
      namedAddress("support", s.project.id, "elsewhere.test"),
      `nobody@${INBOUND_DOMAIN}`,
    ]) {
      const message = await s.receive({ from: "a@example.com", to, raw: fill(gmail, { to, from: "a@example.com" }) });
      expect(message.rejected, to).toBe("No such recipient here");
    }
  });

  it("past QUOTA_INBOUND_PER_DAY the project's mail is rejected", async () => {
    const s = await inboundSetup({ QUOTA_INBOUND_PER_DAY: "2" });
    const to = namedAddress("support", s.project.id, INBOUND_DOMAIN);
    const outcomes: (string | null)[] = [];
    for (let i = 0; i < 3; i++) outcomes.push((await s.receive({ from: "a@example.com", to, raw: fill(gmail, { to, from: "a@example.com" }) })).rejected);
    expect(outcomes.slice(0, 2)).toEqual([null, null]);
    expect(outcomes[2]).toMatch(/daily quota/);
    expect((await s.list()).total).toBe(2);
  });

  it("past the per-sender rate the sender's mail is rejected", async () => {
    let calls = 0;
    const limiter = { limit: async () => ({ success: ++calls <= 1 }) };
    const s = await inboundSetup({ INBOUND_SENDER_LIMITER: limiter as unknown as RateLimit });
    const to = namedAddress("support", s.project.id, INBOUND_DOMAIN);
    const first = await s.receive({ from: "a@example.com", to, raw: fill(gmail, { to, from: "a@example.com" }) });
    const second = await s.receive({ from: "a@example.com", to, raw: fill(gmail, { to, from: "a@example.com" }) });
    expect(first.rejected).toBeNull();
    expect(second.rejected).toMatch(/Too many messages/);
  });

  it("the raw bytes count toward the project's R2 bytes, and past QUOTA_R2_STORED_BYTES mail is rejected", async () => {
    const s = await inboundSetup();
    const to = namedAddress("support", s.project.id, INBOUND_DOMAIN);
    const raw = fill(gmail, { to, from: "a@example.com" });
    const r2Bytes = async () => (await s.get<{ data: { r2StoredBytes: number } }>("/project")).body.data.r2StoredBytes;
    const before = await r2Bytes();
    const message = await s.receive({ from: "a@example.com", to, raw });
    expect(message.rejected).toBeNull();
    expect((await r2Bytes()) - before).toBe(message.rawSize);

    const full = await inboundSetup({ QUOTA_R2_STORED_BYTES: String(message.rawSize + 10) });
    const toFull = namedAddress("support", full.project.id, INBOUND_DOMAIN);
    const first = await full.receive({ from: "a@example.com", to: toFull, raw: fill(gmail, { to: toFull, from: "a@example.com" }) });
    const second = await full.receive({ from: "a@example.com", to: toFull, raw: fill(gmail, { to: toFull, from: "a@example.com" }) });
    expect(first.rejected).toBeNull();
    expect(second.rejected).toMatch(/mailbox is full/);
  });
});

describe("reading received mail", () => {
  it("a message whose raw object is gone before it was parsed is FAILED with the reason, and its raw download is 404", async () => {
    const s = await inboundSetup();
    const to = namedAddress("support", s.project.id, INBOUND_DOMAIN);
    await s.receive({ from: "a@example.com", to, raw: fill(gmail, { to, from: "a@example.com" }) });
    const listed = await env.STORAGE.list({ prefix: `inbound/${s.project.id}/` });
    expect(listed.objects).toHaveLength(1);
    await env.STORAGE.delete(listed.objects[0].key);
    await s.parse();
    const [item] = (await s.list()).items;
    expect(item).toMatchObject({ status: "FAILED", error: "The raw message is gone from storage", strippedText: null });
    expectError(await s.request("GET", `/inbound/${item.id}/raw`), 404, "NOT_FOUND");
  });

  it("a public key gets 403 and another project's ids are 404", async () => {
    const s = await inboundSetup();
    const sent = await s.sendTo("ada@example.com");
    const to = namedAddress("support", s.project.id, INBOUND_DOMAIN);
    await s.receive({ from: "a@example.com", to, raw: fill(gmail, { to, from: "a@example.com" }) });
    const [item] = (await s.list()).items;
    const other = await inboundSetup();
    for (const path of [`/inbound/${item.id}`, `/inbound/${item.id}/raw`, `/inbound/${item.id}/attachments/0`, `/inbound/${item.id}/html`]) {
      expectError(await other.request("GET", path), 404, "NOT_FOUND");
    }
    const { call } = await import("../../support/http");
    for (const path of [
      "/inbound",
      `/inbound/${item.id}`,
      `/inbound/${item.id}/raw`,
      `/inbound/${item.id}/attachments/0`,
      `/inbound/${item.id}/html`,
      `/emails/${sent.emailId}/replies`,
    ]) {
      expectError(await call("GET", path, { key: s.project.publicKey }), 403);
    }
  });
});
