import { expect } from "vitest";
import { reportViolation } from "./violations";
import { verifySigV4 } from "./sigv4";

/**
 * A fake AWS SES v2 endpoint at the HTTP boundary. It accepts only what real
 * SES accepts from us, checked with an independent SigV4 implementation
 * (./sigv4.ts: credential scope, signed host and x-amz-* headers, clock
 * skew, signature):
 * - POST /v2/email/outbound-emails (SendEmail): JSON with the raw message
 *   base64 in Content.Raw.Data; FromEmailAddress and Destination must agree
 *   with the message's From and To headers. Each call's decoded MIME is kept.
 *   Answers are scripted: 200 with a MessageId by default, or queued failures.
 * - POST /v2/email/identities (CreateEmailIdentity with BYODKIM
 *   DkimSigningAttributes; 409 AlreadyExistsException for a known identity) and
 *   DELETE /v2/email/identities/{domain} (DeleteEmailIdentity, 404 for an
 *   unknown identity).
 * Anything the fake finds wrong with a request (a bug in our client, not an
 * SES answer) is also reported as a violation, which fails the running test
 * (see ./violations.ts) even if the Worker would treat the answer as retryable.
 */
export const SES_ENDPOINT = "https://ses.fake.test";
export const SES_CREDENTIALS = { SES_ACCESS_KEY_ID: "AKIDTESTFAKE", SES_SECRET_ACCESS_KEY: "fake-secret-key", SES_REGION: "eu-west-1" };
const CREDENTIALS = {
  accessKeyId: SES_CREDENTIALS.SES_ACCESS_KEY_ID,
  secretAccessKey: SES_CREDENTIALS.SES_SECRET_ACCESS_KEY,
  region: SES_CREDENTIALS.SES_REGION,
  service: "ses",
};

export interface SesCall {
  /** The MessageId the fake answered with. */
  messageId: string;
  authorization: string;
  from: string;
  to: string[];
  configurationSet?: string;
  /** EmailTags as sent: name -> value (SES event publishing hands them back in mail.tags). */
  tags: Record<string, string>;
  raw: string;
  mime: ParsedMime;
}

/** A BYODKIM identity as SES keeps it. */
export interface SesIdentity {
  selector: string;
  privateKey: string;
  /** How it got there: CreateEmailIdentity, or set up outside this service. */
  via: "create" | "elsewhere";
}

/**
 * A scripted answer: an HTTP error, `network: true` for a connection that fails before any answer, or
 * `hang: true` for a request SES takes (the message is accepted, kept in `calls`) but never answers.
 */
type Scripted = { status: number; errorType?: string; message?: string } | { network: true } | { hang: true };

const awsError = (status: number, type: string, message: string) =>
  Response.json({ message }, { status, headers: { "x-amzn-ErrorType": `${type}:http://internal.amazon.com/coral/com.amazonaws.sesv2/` } });

/** The address inside a From/To header value ("Name <a@b>" or "a@b", names possibly encoded-words). */
const addressOf = (value: string | undefined) => (/<([^>]+)>\s*$/.exec(value ?? "")?.[1] ?? value ?? "").trim().toLowerCase();

export function fakeSes() {
  const calls: SesCall[] = [];
  /** Every request that reached the fake, accepted or not (status 0: the connection failed). */
  const requests: { method: string; path: string; status: number }[] = [];
  const identities = new Map<string, SesIdentity>();
  const script: Scripted[] = [];
  let counter = 0;
  // SES's ids are unique across its whole account: tests sharing one database must not reuse them.
  const run = crypto.randomUUID().slice(0, 8);

  /** A request we should never have sent: fails the test, and answers as SES would (4xx). */
  function violation(status: number, type: string, message: string): Response {
    reportViolation(`fake SES: ${message}`);
    return awsError(status, type, message);
  }

  async function route(request: Request, path: string, body: string, entry: { status: number }): Promise<Response> {
    const problem = await verifySigV4({ method: request.method, url: request.url, headers: request.headers, body }, CREDENTIALS);
    if (problem) return violation(403, "SignatureDoesNotMatch", problem);
    let payload: any = {};
    try {
      if (request.method !== "DELETE") payload = JSON.parse(body);
    } catch {
      return violation(400, "BadRequestException", "The body is not JSON");
    }

    if (request.method === "POST" && path === "/v2/email/identities") {
      const name = String(payload.EmailIdentity ?? "");
      const dkim = payload.DkimSigningAttributes;
      if (!name || typeof dkim?.DomainSigningSelector !== "string" || typeof dkim?.DomainSigningPrivateKey !== "string") {
        return violation(
          400,
          "BadRequestException",
          "CreateEmailIdentity needs EmailIdentity and DkimSigningAttributes {DomainSigningSelector, DomainSigningPrivateKey}",
        );
      }
      if (identities.has(name)) return awsError(409, "AlreadyExistsException", `Email identity ${name} already exist.`);
      identities.set(name, { selector: dkim.DomainSigningSelector, privateKey: dkim.DomainSigningPrivateKey, via: "create" });
      return Response.json({
        IdentityType: "DOMAIN",
        VerifiedForSendingStatus: false,
        DkimAttributes: { SigningAttributesOrigin: "EXTERNAL", Status: "PENDING" },
      });
    }
    const identityPath = /^\/v2\/email\/identities\/([^/]+)$/.exec(path);
    if (request.method === "DELETE" && identityPath) {
      const name = decodeURIComponent(identityPath[1]);
      if (!identities.delete(name)) return awsError(404, "NotFoundException", `Email identity ${name} does not exist.`);
      return Response.json({});
    }
    if (request.method !== "POST" || path !== "/v2/email/outbound-emails") {
      return violation(404, "NotFoundException", `No route ${request.method} ${path}`);
    }

    const raw = new TextDecoder().decode(Uint8Array.from(atob(payload.Content?.Raw?.Data ?? ""), (c) => c.charCodeAt(0)));
    const mime = parseMime(raw);
    const from = String(payload.FromEmailAddress ?? "");
    const to: string[] = payload.Destination?.ToAddresses ?? [];
    if (addressOf(mime.headers.from) !== from.toLowerCase()) {
      return violation(400, "BadRequestException", `FromEmailAddress ${from} is not the message's From (${mime.headers.from})`);
    }
    const headerTo = (mime.headers.to ?? "").split(",").map(addressOf).filter(Boolean);
    if (to.length === 0 || to.map((a) => a.toLowerCase()).join(",") !== headerTo.join(",")) {
      return violation(400, "BadRequestException", `Destination ${JSON.stringify(to)} is not the message's To (${mime.headers.to})`);
    }
    // MessageTag: name and value each 1-256 of [A-Za-z0-9_-] (SES refuses anything else with a 400).
    const tags: Record<string, string> = {};
    for (const tag of payload.EmailTags ?? []) {
      const ok = (v: unknown) => typeof v === "string" && /^[A-Za-z0-9_-]{1,256}$/.test(v);
      if (!ok(tag?.Name) || !ok(tag?.Value)) return violation(400, "BadRequestException", `EmailTags entry ${JSON.stringify(tag)} is not a valid MessageTag`);
      tags[tag.Name] = tag.Value;
    }
    /** SES takes the message: recorded as a call, its new MessageId returned. */
    const accept = () => {
      const messageId = `ses-${++counter}-${run}`;
      calls.push({
        messageId,
        authorization: request.headers.get("authorization") ?? "",
        from,
        to,
        configurationSet: payload.ConfigurationSetName,
        tags,
        raw,
        mime,
      });
      return messageId;
    };
    const next = script.shift();
    if (next && "hang" in next) {
      // The request reached SES, which takes the message but never answers (the caller times out).
      accept();
      entry.status = 0;
      return new Promise<Response>((_, reject) => request.signal.addEventListener("abort", () => reject(request.signal.reason)));
    }
    if (next && "network" in next) {
      entry.status = 0;
      throw new TypeError("Network connection lost.");
    }
    if (next && next.status !== 200) {
      entry.status = next.status;
      return Response.json(
        { message: next.message ?? "scripted failure" },
        { status: next.status, headers: next.errorType ? { "x-amzn-ErrorType": `${next.errorType}:http://internal.amazon.com/` } : {} },
      );
    }
    return Response.json({ MessageId: accept() });
  }

  async function handle(request: Request): Promise<Response> {
    const path = new URL(request.url).pathname;
    const entry = { method: request.method, path, status: 200 };
    requests.push(entry);
    const body = await request.text();
    let response: Response;
    try {
      response = await route(request, path, body, entry);
    } catch (err) {
      // A scripted network failure is meant to reach the Worker; anything else thrown here is a fake's assertion.
      if (err instanceof TypeError && err.message === "Network connection lost.") throw err;
      // A scripted hang ends when the caller gives up (its timeout aborts the request).
      if (request.signal.aborted) throw err;
      response = violation(400, "BadRequestException", `the fake could not read the request: ${err instanceof Error ? err.message : String(err)}`);
    }
    if (entry.status === 200) entry.status = response.status;
    return response;
  }

  return {
    calls,
    /** Every request, in order, with the status it was answered (0: the connection failed). */
    requests,
    identities,
    handle,
    /** The next SendEmail answers, in order (then 200s again). */
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
    .replace(/=\?utf-8\?B\?([^?]*)\?=/gi, (_m, b64: string) => new TextDecoder().decode(Uint8Array.from(atob(b64), (c) => c.charCodeAt(0))));
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
