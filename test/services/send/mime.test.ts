import { describe, expect, it } from "vitest";
import defineProperty from "@babel/runtime-corejs3/helpers/esm/defineProperty";
import trim from "@babel/runtime-corejs3/core-js/instance/trim";
import { buildMime } from "../../../src/services/send/mime";
import defineShim from "../../../scripts/bundle/define-property.mjs";
import trimShim from "../../../scripts/bundle/instance-trim.mjs";

/**
 * mimetext's browser build runs with the two @babel/runtime-corejs3 stand-ins of
 * wrangler.toml [alias] (vitest.config.ts applies them here as in the bundle):
 * defineProperty sets every class field of mimetext, and instance/trim parses a
 * "Name <address>" mailbox. test/e2e/shipped-build.e2e.test.ts checks the same
 * headers on the bundle `wrangler dev` builds.
 */
const b64 = (text: string) => btoa(String.fromCharCode(...new TextEncoder().encode(text)));
const decodeWord = (word: string) => new TextDecoder().decode(Uint8Array.from(atob(/^=\?utf-8\?B\?(.*)\?=$/i.exec(word)![1]), (c) => c.charCodeAt(0)));

function build() {
  return buildMime(
    {
      fromAddress: "news@example.com",
      fromName: "Zoë Café",
      toAddress: "ada@example.net",
      toName: null,
      replyTo: '  "Ada Lovelace" <ada.replies@example.net>  ',
      subject: "Grüße aus Köln",
      messageId: "m1@example.com",
      headers: { "X-Campaign": "nov" },
    },
    { html: "<p>Hallo</p>", attachments: [{ filename: "Bericht-ü.txt", contentType: "text/plain", content: b64("Inhalt ü") }] },
  );
}

describe("MIME through mimetext with the core-js stand-ins", () => {
  it("writes the display names as UTF-8 encoded-words, parses a quoted Reply-To mailbox, keeps custom headers and the attachment bytes", () => {
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
    const filename = /filename="([^"]+)"/.exec(raw)![1];
    expect(decodeWord(filename)).toBe("Bericht-ü.txt");
    const attachment = raw.split(/\r\n\r\n/).find((_part, i, parts) => i > 0 && /filename=/.test(parts[i - 1]))!;
    expect(new TextDecoder().decode(Uint8Array.from(atob(attachment.trim().split("\r\n")[0]), (c) => c.charCodeAt(0)))).toBe("Inhalt ü");
  });

  it("runs the stand-ins, as the bundle does (vitest.config.ts applies wrangler.toml's [alias])", () => {
    expect(defineProperty).toBe(defineShim);
    expect(trim).toBe(trimShim);
    expect(trim(" x ")).toBe(String.prototype.trim);
  });
});
