/** The stripped reply (src/services/inbound/strip.ts): the sender's own words, without quoted history or signature. */
import { describe, expect, it } from "vitest";
import { stripReply } from "../../../src/services/inbound/strip";

describe("stripReply", () => {
  it("cuts at an 'On ... wrote:' line, also when the client wrapped it onto two lines", () => {
    expect(stripReply("Yes please.\n\nOn Tue, 1 Dec 2026 at 09:00, Shop <a@b.c> wrote:\n> Want it?")).toBe("Yes please.");
    expect(stripReply("Yes please.\n\nOn Tue, 1 Dec 2026 at 09:00, Shop Name\n<a@b.c> wrote:\n> Want it?")).toBe("Yes please.");
  });

  it("cuts at Outlook's header block and '-----Original Message-----'", () => {
    expect(stripReply("Fine.\n________________________________\nFrom: Shop <a@b.c>\nSent: Tuesday\nTo: me\n\nOld text")).toBe("Fine.");
    expect(stripReply("Fine.\n\nFrom: Shop <a@b.c>\nSent: Tuesday, 1 December 2026\nSubject: x\n\nOld")).toBe("Fine.");
    expect(stripReply("Fine.\n-----Original Message-----\nOld")).toBe("Fine.");
  });

  it("drops signatures: '-- ', 'Sent from my iPhone', 'Get Outlook for ...'", () => {
    expect(stripReply("Thanks!\n-- \nAda Lovelace\nAnalytical Engines Ltd")).toBe("Thanks!");
    expect(stripReply("Thanks!\n\nSent from my iPhone")).toBe("Thanks!");
    expect(stripReply("Thanks!\n\nGet Outlook for Android")).toBe("Thanks!");
  });

  it("keeps an inline answer between quotes, drops the quotes at the end", () => {
    const text = "> Do you want it?\nYes.\n> And when?\nThursday.\n\n> Thanks\n> Shop";
    expect(stripReply(text)).toBe("> Do you want it?\nYes.\n> And when?\nThursday.");
  });

  it("a message that is all quote leaves nothing; text without history is kept whole", () => {
    expect(stripReply("> only a quote\n> more")).toBe("");
    expect(stripReply("Just a note,\nno history here.\r\n")).toBe("Just a note,\nno history here.");
  });

  it("takes time linear in the text: 64 KB of quote-like lines", () => {
    const text = "x\n> y\n".repeat(6000);
    const started = Date.now();
    stripReply(text);
    expect(Date.now() - started).toBeLessThan(500);
  });
});
