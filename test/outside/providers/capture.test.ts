import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { getDb } from "../../../src/db/client";
import { CaptureProvider } from "../../../src/outside/providers/capture";
import { call } from "../../support/http";

const devEnv = { ...env, ENVIRONMENT: "development" };

/** A message as the consumer hands it over, with `raw` as its whole text. */
const outgoing = (n: number, raw: string) => ({
  emailId: `email-${n}`,
  projectId: "project-capture",
  from: "hello@example.com",
  to: `to${n}@example.com`,
  subject: `Capture ${n}`,
  raw,
  parts: { html: "", text: "", headers: {}, attachments: [] },
});

describe("the capture provider (local development's stand-in for SES)", () => {
  it("keeps every message of one flush byte for byte, small ones together and large ones (over the row budget, over one blob chunk) alone", async () => {
    const provider = new CaptureProvider(getDb(env.DB), env.STORAGE);
    const raws = [
      'Subject: a\r\n\r\nhello "quoted" \\ back\u0001slash\r\n',
      ...Array.from({ length: 40 }, (_, i) => `Subject: ${i}\r\n\r\n${"x".repeat(i * 100)}\r\n`),
      `Subject: big\r\n\r\n${"\r\n".repeat(150_000)}`, // escaping doubles it: over the JSON budget
      `Subject: huge\r\n\r\n${"y".repeat(2_500_000)}`, // three blob chunks
      "Subject: last\r\n\r\nafter the large ones\r\n",
    ];
    const results = await Promise.all(raws.map((raw, n) => provider.send(outgoing(n, raw))));
    const ids = new Set(results.map((r) => r.providerMessageId));
    expect(ids.size).toBe(raws.length);
    for (const [n, raw] of raws.entries()) {
      const id = String(results[n].providerMessageId).replace(/^capture-/, "");
      const eml = await call<string>("GET", `/dev/outbox/${id}.eml`, { env: devEnv });
      expect(eml.status, `message ${n}`).toBe(200);
      expect(eml.body.length, `message ${n}`).toBe(raw.length);
      expect(eml.body === raw, `message ${n}`).toBe(true);
    }
  });
});
