import { describe, expect, it } from "vitest";
import defineProperty from "@babel/runtime-corejs3/helpers/esm/defineProperty";
import trim from "@babel/runtime-corejs3/core-js/instance/trim";
import PostalMime, { decodeWords } from "postal-mime";
import { buildMime, type MimeEmail } from "../../../src/services/send/mime";
import defineShim from "../../../scripts/bundle/define-property.mjs";
import trimShim from "../../../scripts/bundle/instance-trim.mjs";
import { expectError } from "../../support/http";
import { sendingSetup } from "../../support/sending";

/**
 * mimetext's browser build runs with the two @babel/runtime-corejs3 stand-ins of
 * wrangler.toml [alias] (vitest.config.ts applies them here as in the bundle):
 * defineProperty sets every class field of mimetext, and instance/trim parses a
 * "Name <address>" mailbox. test/e2e/shipped-build.e2e.test.ts checks the same
 * headers on the bundle `wrangler dev` builds. What we write is read back by
 * postal-mime, a parser nobody here wrote.
 */
const b64 = (text: string) => btoa(String.fromCharCode(...new TextEncoder().encode(text)));
const decodeWord = (word: string) => new TextDecoder().decode(Uint8Array.from(atob(/^=\?utf-8\?B\?(.*)\?=$/i.exec(word)![1]), (c) => c.charCodeAt(0)));

const email = (over: Partial<MimeEmail> = {}): MimeEmail => ({
  fromAddress: "news@example.com",
  fromName: "Zoë Café",
  toAddress: "ada@example.net",
  toName: null,
  replyTo: '  "Ada Lovelace" <ada.replies@example.net>  ',
  subject: "Grüße aus Köln",
  messageId: "m1@example.com",
  headers: { "X-Campaign": "nov" },
  ...over,
});

function build() {
  return buildMime(email(), {
    html: "<p>Hallo</p>",
    attachments: [{ filename: "Bericht-ü.txt", contentType: "text/plain", content: b64("Inhalt ü") }],
  });
}

/** Lines of a raw message (CRLF-separated) longer than RFC 5322's 998 octets, by their length. */
const longLines = (raw: string) =>
  raw
    .split("\r\n")
    .map((line) => new TextEncoder().encode(line).length)
    .filter((n) => n > 998);

/** The header block of a raw message: everything before the first empty line. */
const headerBlock = (raw: string) => raw.slice(0, raw.indexOf("\r\n\r\n"));

// Inputs at the limits the API allows: 998-character header values, 200-character names, 255-character file names.
const words = (n: number, word: string) => Array.from({ length: n }, (_, i) => `${word}${i}`).join(" ");
const LONG_WORDY = words(150, "token").slice(0, 998).trimEnd();
const REFERENCES = Array.from({ length: 24 }, (_, i) => `<message-${i}-${"r".repeat(10)}@mail.example.org>`).join(" ");
const ONE_LONG_WORD = "z".repeat(998 - "X-Tracking: ".length + 10);
const EMOJI_NAME = "😀".repeat(100); // 200 UTF-16 units, 400 bytes of UTF-8
const LONG_FILE_NAME = `${"Überweisungsbestätigung-".repeat(10)}${"ä".repeat(255 - 240 - 4)}.pdf`;

describe("MIME through mimetext with the core-js stand-ins", () => {
  it("writes the display names as UTF-8 encoded-words, parses a quoted Reply-To mailbox, keeps custom headers and the attachment bytes", async () => {
    const raw = build();
    const header = (name: string) => new RegExp(`^${name}: (.*)$`, "mi").exec(raw)?.[1];
    expect(header("From")).toBe(`=?utf-8?B?${b64("Zoë Café")}?= <news@example.com>`);
    expect(header("To")).toBe("<ada@example.net>");
    // The trim stand-in: surrounding spaces go, the quotes come off the name.
    expect(header("Reply-To")).toBe(`=?utf-8?B?${b64("Ada Lovelace")}?= <ada.replies@example.net>`);
    expect(decodeWord(header("Subject")!)).toBe("Grüße aus Köln");
    expect(header("Message-ID")).toBe("<m1@example.com>");
    expect(header("X-Campaign")).toBe("nov");
    expect(raw).toMatch(/^Content-Type: multipart\/mixed; boundary=/m);
    // RFC 2231, not an encoded-word inside quotes.
    expect(raw).toContain("Content-Disposition: attachment; filename*=utf-8''Bericht-%C3%BC.txt");
    expect(raw).toContain("Content-Type: text/plain; name*=utf-8''Bericht-%C3%BC.txt");
    const attachment = raw.split(/\r\n\r\n/).find((_part, i, parts) => i > 0 && /filename/.test(parts[i - 1]))!;
    expect(new TextDecoder().decode(Uint8Array.from(atob(attachment.trim().split("\r\n")[0]), (c) => c.charCodeAt(0)))).toBe("Inhalt ü");
    const parsed = await PostalMime.parse(raw);
    expect(parsed.attachments.map((a) => [a.filename, a.mimeType])).toEqual([["Bericht-ü.txt", "text/plain"]]);
  });

  it("runs the stand-ins, as the bundle does (vitest.config.ts applies wrangler.toml's [alias])", () => {
    expect(defineProperty).toBe(defineShim);
    expect(trim).toBe(trimShim);
    expect(trim(" x ")).toBe(String.prototype.trim);
  });
});

describe("MIME lines within RFC 5322's 998 octets, read back by postal-mime", () => {
  it("folds long header values at their whitespace, encodes an unbroken X- value, and splits long display names and file names", async () => {
    const pdf = b64("%PDF-1.4 fake");
    const raw = buildMime(
      email({
        fromName: EMOJI_NAME,
        toName: `Ada ${"Ł".repeat(195)}`,
        subject: "Grüße ".repeat(160).trim(),
        headers: { "X-Words": LONG_WORDY, References: REFERENCES, "X-Tracking": ONE_LONG_WORD, Keywords: " spaced\tout  " },
      }),
      {
        html: "<p>Hallo</p>",
        attachments: [
          { filename: LONG_FILE_NAME, contentType: "application/pdf", content: pdf },
          { filename: "report.pdf", contentType: "application/pdf", content: pdf },
          { filename: "inline.pdf", contentType: "application/pdf", content: pdf },
        ],
        listUnsubscribe: { url: `https://edge-mail.test/unsubscribe/${"t".repeat(300)}`, mailto: "mailto:unsubscribe@example.com?subject=unsubscribe" },
      },
    );
    expect(longLines(raw)).toEqual([]);
    // Header lines stay within the 78 octets RFC 5322 asks for wherever there is whitespace to fold at
    // (the 300-character unsubscribe link has none), encoded-words and RFC 2231 sections included.
    const over78 = headerBlock(raw)
      .split("\r\n")
      .filter((line) => line.length > 78 && (/=\?utf-8\?B\?|\*=/.test(line) || /[ \t]/.test(line.replace(/^[ \t]+/, "").replace(/^[!-9;-~]+: /, ""))));
    expect(over78).toEqual([]);
    expect(raw).not.toMatch(/name="=\?/i);

    const parsed = await PostalMime.parse(raw);
    const value = (key: string) => parsed.headers.find((h) => h.key === key.toLowerCase())?.value;
    expect(value("X-Words")).toBe(LONG_WORDY);
    expect(value("References")).toBe(REFERENCES);
    expect(parsed.references).toBe(REFERENCES);
    expect(value("Keywords")).toBe("spaced\tout"); // readers trim the ends; inside, whitespace is kept
    expect(decodeWords(value("X-Tracking")!)).toBe(ONE_LONG_WORD);
    expect(value("List-Unsubscribe")).toBe(`<https://edge-mail.test/unsubscribe/${"t".repeat(300)}>, <mailto:unsubscribe@example.com?subject=unsubscribe>`);
    expect(parsed.from).toMatchObject({ name: EMOJI_NAME, address: "news@example.com" });
    expect(parsed.to).toEqual([{ name: `Ada ${"Ł".repeat(195)}`, address: "ada@example.net" }]);
    expect(parsed.subject).toBe("Grüße ".repeat(160).trim());
    // Each file once (a name containing "inline" is no inline part), its name and bytes intact.
    expect(parsed.attachments.map((a) => [a.filename, a.disposition, b64(String.fromCharCode(...new Uint8Array(a.content as ArrayBuffer)))])).toEqual([
      [LONG_FILE_NAME, "attachment", pdf],
      ["report.pdf", "attachment", pdf],
      ["inline.pdf", "attachment", pdf],
    ]);
    // ASCII names stay plain quoted; a long non-ASCII one is in RFC 2231 sections.
    expect(raw).toContain('Content-Disposition: attachment; filename="report.pdf"');
    expect(raw).toMatch(/^ filename\*0\*=utf-8''%C3%9Cberweisungsbest/m);
    expect(raw).toMatch(/^ filename\*1\*=/m);
  });
});

describe("POST /v1/send: custom headers and file names as sent", () => {
  it("refuses a structured header whose first word cannot fit in a 998-octet line, naming the header and the limit", async () => {
    const s = await sendingSetup();
    const body = { to: "a@example.com", from: s.from, subject: "s", body: "b" };
    const res = await s.send({ ...body, headers: { "In-Reply-To": `<${"a".repeat(980)}@example.org>` } });
    const error = expectError(res, 422, "VALIDATION_ERROR");
    expect(error.errors).toEqual([
      {
        field: "headers.In-Reply-To",
        code: "custom",
        message: expect.stringMatching(
          /^The In-Reply-To header starts with 994 characters without a space or tab to fold at, but a header line is at most 998 octets \(RFC 5322\), so at most 985 fit after "In-Reply-To: "\. Add a space/,
        ),
      },
    ]);
    expect(s.queue.messages).toHaveLength(0);
  });

  it("sends the longest values the API accepts in lines of at most 998 octets, and postal-mime reads them back", async () => {
    const s = await sendingSetup();
    const pdf = b64("%PDF-1.4 fake");
    const res = await s.send({
      to: { name: EMOJI_NAME, email: "a@example.com" },
      from: { name: EMOJI_NAME, email: s.from },
      subject: "s",
      body: "<p>b</p>",
      headers: { "X-Words": LONG_WORDY, References: REFERENCES, "X-Tracking": ONE_LONG_WORD },
      attachments: [{ filename: LONG_FILE_NAME, content: pdf, contentType: "application/pdf" }],
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    await s.deliver();
    expect(s.ses.calls).toHaveLength(1);
    const raw = s.ses.calls[0].raw;
    expect(longLines(raw)).toEqual([]);
    const parsed = await PostalMime.parse(raw);
    const value = (key: string) => parsed.headers.find((h) => h.key === key.toLowerCase())?.value;
    expect(value("X-Words")).toBe(LONG_WORDY);
    expect(value("References")).toBe(REFERENCES);
    expect(decodeWords(value("X-Tracking")!)).toBe(ONE_LONG_WORD);
    expect(parsed.from).toMatchObject({ name: EMOJI_NAME });
    expect(parsed.to).toEqual([{ name: EMOJI_NAME, address: "a@example.com" }]);
    expect(parsed.attachments.map((a) => a.filename)).toEqual([LONG_FILE_NAME]);
  });
});
