import { AwsV4Signer } from "aws4fetch";
import { expect } from "vitest";

/**
 * A fake AWS SES v2 endpoint at the HTTP boundary. It accepts only what real
 * SES accepts from us: POST /v2/email/outbound-emails with a SigV4
 * Authorization header (recomputed and compared here), JSON with the raw
 * message base64 in Content.Raw.Data. Each call's decoded MIME is kept.
 * Answers are scripted: 200 with a MessageId by default, or queued failures.
 */
export const SES_ENDPOINT = "https://ses.fake.test";
export const SES_CREDENTIALS = { SES_ACCESS_KEY_ID: "AKIDTESTFAKE", SES_SECRET_ACCESS_KEY: "fake-secret-key", SES_REGION: "eu-west-1" };

export interface SesCall {
  /** The MessageId the fake answered with. */
  messageId: string;
  authorization: string;
  from: string;
  to: string[];
  configurationSet?: string;
  raw: string;
  mime: ParsedMime;
}

/** A scripted answer: an HTTP error, or `network: true` for a connection that fails before any answer. */
type Scripted = { status: number; errorType?: string; message?: string } | { network: true };

export function fakeSes() {
  const calls: SesCall[] = [];
  /** Every request that reached the fake, accepted or not (status 0: the connection failed). */
  const requests: { status: number }[] = [];
  const script: Scripted[] = [];
  let counter = 0;

  async function handle(request: Request): Promise<Response> {
    const url = new URL(request.url);
    if (request.method !== "POST" || url.pathname !== "/v2/email/outbound-emails") {
      return Response.json({ message: `No route ${request.method} ${url.pathname}` }, { status: 404 });
    }
    const body = await request.text();
    const authorization = request.headers.get("authorization") ?? "";
    const match =
      /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([a-z0-9-]+)\/ses\/aws4_request, SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})$/.exec(
        authorization,
      );
    const amzDate = request.headers.get("x-amz-date") ?? "";
    if (!match || match[1] !== SES_CREDENTIALS.SES_ACCESS_KEY_ID || match[3] !== SES_CREDENTIALS.SES_REGION || !amzDate.startsWith(match[2])) {
      return Response.json({ message: "The security token included in the request is invalid." }, { status: 403 });
    }
    const headers = new Headers(request.headers);
    headers.delete("authorization");
    const expected = await new AwsV4Signer({
      method: "POST",
      url: request.url,
      headers,
      body,
      accessKeyId: SES_CREDENTIALS.SES_ACCESS_KEY_ID,
      secretAccessKey: SES_CREDENTIALS.SES_SECRET_ACCESS_KEY,
      service: "ses",
      region: SES_CREDENTIALS.SES_REGION,
      datetime: amzDate,
    }).signature();
    if (expected !== match[5]) {
      return Response.json({ message: "The request signature we calculated does not match" }, { status: 403 });
    }
    const payload = JSON.parse(body) as {
      FromEmailAddress: string;
      Destination: { ToAddresses: string[] };
      Content: { Raw: { Data: string } };
      ConfigurationSetName?: string;
    };
    const raw = new TextDecoder().decode(Uint8Array.from(atob(payload.Content.Raw.Data), (c) => c.charCodeAt(0)));
    const next = script.shift();
    if (next && "network" in next) {
      requests.push({ status: 0 });
      throw new TypeError("Network connection lost.");
    }
    requests.push({ status: next?.status ?? 200 });
    if (next && next.status !== 200) {
      return Response.json(
        { message: next.message ?? "scripted failure" },
        { status: next.status, headers: next.errorType ? { "x-amzn-ErrorType": `${next.errorType}:http://internal.amazon.com/` } : {} },
      );
    }
    const messageId = `ses-${++counter}`;
    calls.push({
      messageId,
      authorization,
      from: payload.FromEmailAddress,
      to: payload.Destination.ToAddresses,
      configurationSet: payload.ConfigurationSetName,
      raw,
      mime: parseMime(raw),
    });
    return Response.json({ MessageId: messageId });
  }

  return {
    calls,
    requests,
    handle,
    /** The next answers, in order (then 200s again). */
    failNext(...answers: Scripted[]) {
      script.push(...answers);
    },
  };
}

export interface ParsedMime {
  headers: Record<string, string>;
  /** Leaf parts with decoded text (attachments keep their base64 in `base64`). */
  parts: { contentType: string; headers: Record<string, string>; text: string; base64: string }[];
}

function parseHeaderBlock(block: string): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const line of block.replace(/\r\n[ \t]+/g, " ").split("\r\n")) {
    const i = line.indexOf(":");
    if (i > 0) headers[line.slice(0, i).toLowerCase()] = line.slice(i + 1).trim();
  }
  return headers;
}

export function decodeWords(value: string): string {
  // Whitespace between two adjacent encoded-words is not part of the text (RFC 2047).
  return value
    .replace(/(\?=)\s+(=\?)/g, "$1$2")
    .replace(/=\?utf-8\?B\?([^?]*)\?=/gi, (_m, b64: string) =>
      new TextDecoder().decode(Uint8Array.from(atob(b64), (c) => c.charCodeAt(0))),
    );
}

/** Enough of a MIME reader to check what we send: nested multiparts, base64 leaves. */
export function parseMime(raw: string): ParsedMime {
  const split = raw.indexOf("\r\n\r\n");
  expect(split, "a header block ended by an empty line").toBeGreaterThan(0);
  const headers = parseHeaderBlock(raw.slice(0, split));
  const parts: ParsedMime["parts"] = [];
  const walk = (partHeaders: Record<string, string>, body: string) => {
    const type = partHeaders["content-type"] ?? "text/plain";
    const boundary = /boundary="?([^";]+)"?/.exec(type)?.[1];
    if (type.startsWith("multipart/") && boundary) {
      for (const chunk of body.split(`--${boundary}`).slice(1)) {
        if (chunk.startsWith("--")) break;
        const content = chunk.replace(/^\r\n/, "");
        const end = content.indexOf("\r\n\r\n");
        walk(parseHeaderBlock(content.slice(0, end)), content.slice(end + 4).replace(/\r\n$/, ""));
      }
      return;
    }
    const base64 = /base64/i.test(partHeaders["content-transfer-encoding"] ?? "") ? body.replace(/\s+/g, "") : "";
    const text = base64 ? new TextDecoder().decode(Uint8Array.from(atob(base64), (c) => c.charCodeAt(0))) : body;
    parts.push({ contentType: type, headers: partHeaders, text, base64 });
  };
  walk(headers, raw.slice(split + 4));
  return { headers, parts };
}
