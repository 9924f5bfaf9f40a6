import { afterEach, describe, expect, it, vi } from "vitest";
import { MAX_ATTACHMENT_BYTES, MAX_RAW_MESSAGE_BYTES } from "../../src/schemas/attachments";
import { RENDER_STEP_BUDGET } from "../../src/services/send/render";
import { expectError } from "../support/http";
import { sendingSetup } from "../support/sending";
import type { Email } from "../support/api";

afterEach(() => vi.restoreAllMocks());

/** Base64 of exactly `bytes` zero bytes. */
function zeros(bytes: number): string {
  const full = Math.floor(bytes / 3);
  const rest = bytes % 3;
  return "A".repeat(full * 4) + (rest === 0 ? "" : rest === 1 ? "AA==" : "AAA=");
}

describe("attachments: what one email can carry through SES v2", () => {
  it(`the largest allowed attachment (${MAX_ATTACHMENT_BYTES} bytes) to 10 recipients: every one SENT, one large message at a time, each under 10 MB raw`, async () => {
    const s = await sendingSetup();
    const recipients = Array.from({ length: 10 }, (_, i) => `r${i}@example.com`);
    const res = await s.send({
      to: recipients,
      from: s.from,
      subject: "Your report",
      body: "<p>Attached.</p>",
      attachments: [{ filename: "report.pdf", content: zeros(MAX_ATTACHMENT_BYTES), contentType: "application/pdf" }],
    });
    expect(res.status, JSON.stringify(res.body).slice(0, 500)).toBe(200);

    // A lean stand-in for SES at the same HTTP boundary (the full fake re-verifies
    // SigV4 and parses 10 MB messages, which is slow): it records how many
    // messages are in flight at once and how big each raw message is.
    let inFlight = 0;
    let maxInFlight = 0;
    const sizes: number[] = [];
    const filenames: boolean[] = [];
    s.ses.handle = async (request: Request) => {
      maxInFlight = Math.max(maxInFlight, ++inFlight);
      try {
        const payload = (await request.json()) as { Content: { Raw: { Data: string } } };
        const data = payload.Content.Raw.Data;
        sizes.push((data.length / 4) * 3 - (data.endsWith("==") ? 2 : data.endsWith("=") ? 1 : 0));
        filenames.push(atob(data.slice(0, 8000)).includes('filename="report.pdf"'));
        await new Promise((resolve) => setTimeout(resolve, 5));
        return Response.json({ MessageId: `ses-${sizes.length}` });
      } finally {
        inFlight--;
      }
    };

    const result = await s.deliver();
    expect(result.explicitAcks).toHaveLength(10);
    expect(maxInFlight).toBe(1);
    expect(sizes).toHaveLength(10);
    for (const size of sizes) {
      expect(size).toBeGreaterThan(MAX_ATTACHMENT_BYTES);
      expect(size).toBeLessThanOrEqual(MAX_RAW_MESSAGE_BYTES);
    }
    expect(filenames).toEqual(Array(10).fill(true));
    for (const { email } of res.body.data.emails) expect((await s.get<Email>(`/emails/${email}`)).body.status).toBe("SENT");
  }, 120_000);

  it("one byte more is a 422 on attachments, and so is a near-limit attachment with a large body; nothing queued", async () => {
    const s = await sendingSetup();
    const base = { to: "ada@example.com", from: s.from, subject: "Report" };
    const over = await s.send({
      ...base,
      body: "<p>x</p>",
      attachments: [{ filename: "a.bin", content: zeros(MAX_ATTACHMENT_BYTES + 1), contentType: "application/octet-stream" }],
    });
    expect(expectError(over, 422, "VALIDATION_ERROR").errors!.map((e) => e.field)).toEqual(["attachments"]);
    const withBigBody = await s.send({
      ...base,
      body: `<p>${"y".repeat(500_000)}</p>`,
      attachments: [{ filename: "a.bin", content: zeros(MAX_ATTACHMENT_BYTES), contentType: "application/octet-stream" }],
    });
    const error = expectError(withBigBody, 422, "VALIDATION_ERROR");
    expect(error.errors!.map((e) => e.field)).toEqual(["attachments"]);
    expect(s.queue.messages).toHaveLength(0);
  });
});

describe("rendered output limits", () => {
  it("a subject that renders past 998 characters is a 422 on subject", async () => {
    const s = await sendingSetup();
    const res = await s.send({ to: "ada@example.com", from: s.from, subject: "{% for i in (1..100) %}0123456789{% endfor %}", body: "<p>x</p>" });
    const error = expectError(res, 422, "VALIDATION_ERROR");
    expect(error.errors).toEqual([expect.objectContaining({ field: "subject", code: "too_big" })]);
    // 99 repetitions (990 characters) are fine.
    const ok = await s.send({ to: "ada@example.com", from: s.from, subject: "{% for i in (1..99) %}0123456789{% endfor %}", body: "<p>x</p>" });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
  });

  it("a Liquid loop that turns 400 KB into 80 MB is stopped at 1 MB: a 422 on body, nothing queued", async () => {
    const s = await sendingSetup();
    const body = `{% for i in (1..200) %}<p>${"z".repeat(400_000)}</p>{% endfor %}`;
    const res = await s.send({ to: "ada@example.com", from: s.from, subject: "Big", body });
    const error = expectError(res, 422, "VALIDATION_ERROR");
    expect(error.errors).toEqual([expect.objectContaining({ field: "body", code: "too_big" })]);
    expect(s.queue.messages).toHaveLength(0);
  });

  it("a markdown body whose values render past 1 MB is a 422 on body", async () => {
    const s = await sendingSetup();
    const res = await s.send({
      to: "ada@example.com",
      from: s.from,
      subject: "Big",
      type: "markdown",
      body: "{% for i in (1..40) %}{{ big }}\n{% endfor %}",
      data: { big: "b".repeat(30_000) },
    });
    expect(expectError(res, 422, "VALIDATION_ERROR").errors).toEqual([expect.objectContaining({ field: "body", code: "too_big" })]);
  });

  it("one render budget per request: what one recipient may spend, many recipients of the same request may not", async () => {
    const s = await sendingSetup();
    // About 30% of the request's step budget per render.
    const inner = Math.ceil((RENDER_STEP_BUDGET * 0.3) / 600);
    const body = `{% for a in (1..600) %}{% for b in (1..${inner}) %}{% endfor %}{% endfor %}<p>done</p>`;
    const one = await s.send({ to: "a@example.com", from: s.from, subject: "Loop", body });
    expect(one.status, JSON.stringify(one.body)).toBe(200);
    const four = await s.send({ to: ["a@example.com", "b@example.com", "c@example.com", "d@example.com"], from: s.from, subject: "Loop", body });
    const error = expectError(four, 422, "VALIDATION_ERROR");
    expect(error.errors).toEqual([expect.objectContaining({ field: "body", code: "render_budget" })]);
  }, 30_000);
});
