/**
 * /v1/send inReplyTo: answering an inbound message threads the answer in the recipient's mail
 * client: `In-Reply-To: <its Message-ID>` and `References: <its references...> <its Message-ID>`,
 * on SES raw MIME and the Cloudflare binding. The message must be one this project received (else a
 * 422 naming inReplyTo, nothing sent); the ids come from a stranger's mail, so none with CR, LF or
 * spaces reaches a header, and References keeps at most 100 ids. The inbound messages are received
 * through the Worker's email() handler and its consumer (test/services/inbound/harness.ts).
 */
import { describe, expect, it } from "vitest";
import gmailReply from "../../fixtures/inbound/gmail-reply.eml?raw";
import { threadingHeaders } from "../../../src/services/send/threading";
import { fakeEmailService } from "../../fakes/email-service";
import { expectError } from "../../support/http";
import { fill, INBOUND_DOMAIN, inboundSetup } from "../inbound/harness";

type Setup = Awaited<ReturnType<typeof inboundSetup>>;

const GMAIL_ID = "<CAJx9v+Q2kZ4a8bWQ3nM1rP0sT5uV7wX9yZ1aB3cD5eF7gH9iJ@mail.gmail.com>";
const namedAddress = (projectId: string) => `support+${projectId.replaceAll("-", "")}@${INBOUND_DOMAIN}`;

/** Receives a raw message on the project's named address and parses it; returns its inbound id. */
async function received(s: Setup, raw: string): Promise<string> {
  const message = await s.receive({ from: "ada@example.com", to: namedAddress(s.project.id), raw });
  expect(message.rejected).toBeNull();
  await s.parse();
  const [latest] = (await s.list()).items;
  return latest.id;
}

/** A plain message with this Message-ID and References header. */
const messageWith = (messageId: string, references: string) =>
  [
    "From: Ada <ada@example.com>",
    "To: support@in.edge-mail.test",
    "Subject: A question",
    `Message-ID: ${messageId}`,
    `References: ${references}`,
    "Date: Tue, 1 Dec 2026 10:14:05 +0000",
    "Content-Type: text/plain; charset=utf-8",
    "",
    "Hello, a question about my order.",
    "",
  ].join("\r\n");

const answer = (s: Setup, over: object) => s.send({ to: "ada@example.com", from: s.from, subject: "Re: your question", body: "<p>Here you go.</p>", ...over });

describe("/v1/send inReplyTo", () => {
  it("answers a reply the project received: In-Reply-To its Message-ID, References its references then its Message-ID (SES raw MIME)", async () => {
    const s = await inboundSetup();
    const sent = await s.sendTo("ada@example.com");
    const reply = fill(gmailReply, { to: sent.replyTo, from: "ada@example.com", parentId: sent.headerId });
    const message = await s.receive({ from: "ada@example.com", to: sent.replyTo, raw: reply });
    expect(message.rejected).toBeNull();
    await s.parse();
    const [inbound] = (await s.list()).items;
    expect(inbound.emailId).toBe(sent.emailId);

    const before = s.ses.calls.length;
    const res = await answer(s, { inReplyTo: inbound.id });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    await s.deliver();
    const headers = s.ses.calls[before].mime.headers;
    expect(headers["in-reply-to"]).toBe(GMAIL_ID);
    expect(headers.references).toBe(`<${sent.headerId}> ${GMAIL_ID}`);
  });

  it("on the Cloudflare binding too (both headers are on its allow-list)", async () => {
    const service = fakeEmailService();
    const s = await inboundSetup({ EMAIL_PROVIDER: "cloudflare", EMAIL: service.binding, PUBLIC_URL: "https://mail.edge-mail.test" });
    const id = await received(s, messageWith("<q1@mail.example.com>", "<root@mail.example.com> <q0@mail.example.com>"));
    const res = await answer(s, { inReplyTo: id, headers: { "X-Ticket": "42" } });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    await s.deliver();
    expect(service.sent).toHaveLength(1);
    expect(service.sent[0].headers).toEqual({
      "X-Ticket": "42",
      "In-Reply-To": "<q1@mail.example.com>",
      References: "<root@mail.example.com> <q0@mail.example.com> <q1@mail.example.com>",
    });
  });

  it("an id of no inbound message, or another project's, is a 422 naming inReplyTo, and nothing is written or sent", async () => {
    const s = await inboundSetup();
    const other = await inboundSetup();
    const theirs = await received(other, messageWith("<theirs@mail.example.com>", ""));

    for (const inReplyTo of [theirs, "0190f5a1-c2d3-7e4f-8a9b-0c1d2e3f4a5b"]) {
      const error = expectError(await answer(s, { inReplyTo }), 422, "VALIDATION_ERROR");
      expect(error.errors).toEqual([expect.objectContaining({ field: "inReplyTo", code: "unknown_inbound_message" })]);
    }
    expect(s.queue.messages).toHaveLength(0);
    expect((await s.get<{ data: { total: number } }>("/emails")).body.data.total).toBe(0);
  });

  it("refuses an inReplyTo that is no id (CR/LF, spaces, over 64 characters) and custom threading headers beside it: 422 naming the field", async () => {
    const s = await inboundSetup();
    const id = await received(s, messageWith("<q1@mail.example.com>", ""));
    for (const inReplyTo of [`${id}\r\nBcc: eve@example.com`, "<q1@mail.example.com>", "a".repeat(65), ""]) {
      const error = expectError(await answer(s, { inReplyTo }), 422, "VALIDATION_ERROR");
      expect(error.errors?.map((e) => e.field)).toEqual(["inReplyTo"]);
    }
    const both = expectError(await answer(s, { inReplyTo: id, headers: { references: "<x@y>" } }), 422, "VALIDATION_ERROR");
    expect(both.errors).toEqual([expect.objectContaining({ field: "inReplyTo", message: expect.stringContaining("references") })]);
    expect(s.queue.messages).toHaveLength(0);
  });

  it("References keeps at most 100 ids: the first one known, then the newest, then the Message-ID", async () => {
    const s = await inboundSetup();
    const refs = Array.from({ length: 150 }, (_, i) => `<r${i}@mail.example.com>`);
    const id = await received(s, messageWith("<last@mail.example.com>", refs.join("\r\n ")));
    const before = s.ses.calls.length;
    expect((await answer(s, { inReplyTo: id })).status).toBe(200);
    await s.deliver();
    const references = s.ses.calls[before].mime.headers.references.split(" ");
    expect(references).toHaveLength(100);
    // The received message keeps its last 100 references (r50-r149): the first of those is kept, then the newest.
    expect(references[0]).toBe("<r50@mail.example.com>");
    expect(references[1]).toBe("<r52@mail.example.com>");
    expect(references.at(-2)).toBe("<r149@mail.example.com>");
    expect(references.at(-1)).toBe("<last@mail.example.com>");
    // Every header line of the message stays within 998 octets (References is folded at its spaces).
    const head = s.ses.calls[before].raw.slice(0, s.ses.calls[before].raw.indexOf("\r\n\r\n"));
    expect(Math.max(...head.split("\r\n").map((line) => line.length))).toBeLessThanOrEqual(998);
  });
});

describe("the whole loop", () => {
  it("a tracked send's Reply-To brings the reply back matched by its token; the answer to it threads under it", async () => {
    const s = await inboundSetup();
    const res = await s.send({ to: "ada@example.com", from: s.from, subject: "Your order has shipped", body: "<p>Shipped.</p>", trackReplies: true });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    await s.deliver();
    const sent = s.ses.calls.at(-1)!;
    const replyTo = /<([^>]+)>/.exec(sent.mime.headers["reply-to"])?.[1] ?? sent.mime.headers["reply-to"];
    expect(replyTo).toMatch(/^r\+[0-9a-f]{52}@in\.edge-mail\.test$/);

    // The recipient answers to the Reply-To it got: Email Routing hands the reply to email() at that address.
    const reply = fill(gmailReply, { to: replyTo, from: "ada@example.com", parentId: `${sent.messageId}@email.amazonses.com` });
    expect((await s.receive({ from: "ada@example.com", to: replyTo, raw: reply })).rejected).toBeNull();
    await s.parse();
    const [inbound] = (await s.list()).items;
    expect(inbound).toMatchObject({ emailId: res.body.data.emails[0].email, match: "TOKEN" });

    expect((await answer(s, { inReplyTo: inbound.id })).status).toBe(200);
    await s.deliver();
    expect(s.ses.calls.at(-1)!.mime.headers["in-reply-to"]).toBe(GMAIL_ID);
  });
});

describe("the threading headers of an answer (ids from a stranger's message)", () => {
  it("leave out every id that is not <...> of printable ASCII without spaces: CR, LF or a second header never reaches the mail", () => {
    const headers = threadingHeaders("<ok@x.test>", [
      "<a@x.test>\r\nBcc: eve@x.test",
      "<b c@x.test>",
      "no-brackets@x.test",
      42,
      "<a@x.test>",
      `<${"l".repeat(300)}@x.test>`,
    ]);
    expect(headers).toEqual({ "In-Reply-To": "<ok@x.test>", References: "<a@x.test> <ok@x.test>" });
    expect(threadingHeaders("<bad\r\n@x.test>", [])).toBeNull();
    expect(threadingHeaders(null, ["<a@x.test>"])).toBeNull();
    expect(threadingHeaders("<ok@x.test>", "not an array")).toEqual({ "In-Reply-To": "<ok@x.test>", References: "<ok@x.test>" });
  });

  it("bound References to 8000 characters, the first id and the Message-ID kept", () => {
    const long = Array.from({ length: 99 }, (_, i) => `<${String(i).padStart(3, "0")}${"x".repeat(200)}@x.test>`);
    const { References } = threadingHeaders("<me@x.test>", long)!;
    expect(References.length).toBeLessThanOrEqual(8000);
    const ids = References.split(" ");
    expect(ids[0]).toBe(long[0]);
    expect(ids.at(-1)).toBe("<me@x.test>");
    expect(ids.at(-2)).toBe(long.at(-1));
  });
});
