/**
 * AWS Signature Version 4, written here from AWS's specification
 * (https://docs.aws.amazon.com/IAM/latest/UserGuide/create-signed-request.html)
 * with Web Crypto only, independent of aws4fetch, which the Worker signs with.
 * The fakes verify requests with it, so a bug shared by the client library and
 * its own re-computation cannot pass; test/fakes/fakes.test.ts holds it to
 * AWS's published test-suite signatures.
 */
const encoder = new TextEncoder();

const hex = (bytes: ArrayBuffer) => [...new Uint8Array(bytes)].map((b) => b.toString(16).padStart(2, "0")).join("");
export const sha256Hex = async (data: string | Uint8Array) =>
  hex(await crypto.subtle.digest("SHA-256", typeof data === "string" ? encoder.encode(data) : data));

async function hmac(key: ArrayBuffer | Uint8Array, data: string): Promise<ArrayBuffer> {
  const k = await crypto.subtle.importKey("raw", key, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  return crypto.subtle.sign("HMAC", k, encoder.encode(data));
}

/** RFC 3986 percent-encoding as SigV4 wants it: everything but unreserved characters. */
const uriEncode = (value: string) => encodeURIComponent(value).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

export interface SigV4Input {
  method: string;
  url: string;
  /** Header names (any case) and values; every one listed in `signedHeaders` must be here. */
  headers: Record<string, string>;
  /** Lower-case names, as they appear in SignedHeaders. */
  signedHeaders: string[];
  body: string;
  accessKeyId: string;
  secretAccessKey: string;
  region: string;
  service: string;
  /** x-amz-date, e.g. 20150830T123600Z. */
  amzDate: string;
}

/** The canonical request (URI segments encoded once more, as every service but S3 requires). */
export async function canonicalRequest(input: SigV4Input): Promise<string> {
  const url = new URL(input.url);
  const path = url.pathname
    .split("/")
    .map((segment) => uriEncode(decodeURIComponent(segment)))
    .map((segment) => uriEncode(segment))
    .join("/");
  const query = [...url.searchParams]
    .map(([k, v]) => [uriEncode(k), uriEncode(v)])
    .sort(([a, x], [b, y]) => (a < b ? -1 : a > b ? 1 : x < y ? -1 : x > y ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`)
    .join("&");
  const lower = Object.fromEntries(Object.entries(input.headers).map(([k, v]) => [k.toLowerCase(), v]));
  const headers = input.signedHeaders.map((name) => `${name}:${(lower[name] ?? "").trim().replace(/\s+/g, " ")}\n`).join("");
  return [input.method, path || "/", query, headers, input.signedHeaders.join(";"), await sha256Hex(input.body)].join("\n");
}

/** The Authorization header value for the input. */
export async function authorization(input: SigV4Input): Promise<string> {
  const date = input.amzDate.slice(0, 8);
  const scope = `${date}/${input.region}/${input.service}/aws4_request`;
  const stringToSign = ["AWS4-HMAC-SHA256", input.amzDate, scope, await sha256Hex(await canonicalRequest(input))].join("\n");
  let key = await hmac(encoder.encode(`AWS4${input.secretAccessKey}`), date);
  for (const part of [input.region, input.service, "aws4_request"]) key = await hmac(key, part);
  const signature = hex(await hmac(key, stringToSign));
  return `AWS4-HMAC-SHA256 Credential=${input.accessKeyId}/${scope}, SignedHeaders=${input.signedHeaders.join(";")}, Signature=${signature}`;
}

/** SigV4 requests more than 5 minutes off the server's clock are refused (RequestTimeTooSkewed / signature expired). */
export const MAX_SKEW_MS = 5 * 60 * 1000;

/**
 * Checks a request as an AWS endpoint does: the credential scope, that host
 * and every x-amz-* header are signed, the clock skew, and the signature. Returns null when it is good, else why not.
 */
export async function verifySigV4(
  request: { method: string; url: string; headers: Headers; body: string },
  expected: { accessKeyId: string; secretAccessKey: string; region: string; service: string },
  now = Date.now(),
): Promise<string | null> {
  const header = request.headers.get("authorization") ?? "";
  const match =
    /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([a-z0-9-]+)\/([a-z0-9-]+)\/aws4_request, SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})$/.exec(
      header,
    );
  if (!match) return `malformed Authorization header: ${header}`;
  const [, accessKeyId, date, region, service, signed] = match;
  if (accessKeyId !== expected.accessKeyId || region !== expected.region || service !== expected.service) {
    return `wrong credential scope ${accessKeyId}/${region}/${service}`;
  }
  const amzDate = request.headers.get("x-amz-date") ?? "";
  const at = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(amzDate);
  if (!at || !amzDate.startsWith(date)) return `x-amz-date ${amzDate} does not match the credential date ${date}`;
  const time = Date.UTC(+at[1], +at[2] - 1, +at[3], +at[4], +at[5], +at[6]);
  if (Math.abs(time - now) > MAX_SKEW_MS) return `x-amz-date ${amzDate} is more than 5 minutes from now`;
  const signedHeaders = signed.split(";");
  // AWS requires host and every x-amz-* header sent to be signed (content-type may be left out, as aws4fetch does).
  const amzHeaders: string[] = [];
  request.headers.forEach((_value, name) => {
    if (name.startsWith("x-amz-")) amzHeaders.push(name);
  });
  const required = ["host", "x-amz-date", ...amzHeaders];
  const missing = required.filter((h) => !signedHeaders.includes(h));
  if (missing.length > 0) return `SignedHeaders ${signed} leaves out ${missing.join(", ")}`;
  if ([...signedHeaders].sort().join(";") !== signed) return `SignedHeaders ${signed} is not sorted`;
  const headers: Record<string, string> = { host: new URL(request.url).host };
  request.headers.forEach((value, name) => {
    if (name !== "host") headers[name] = value;
  });
  const expectedHeader = await authorization({
    method: request.method,
    url: request.url,
    headers,
    signedHeaders,
    body: request.body,
    accessKeyId,
    secretAccessKey: expected.secretAccessKey,
    region,
    service,
    amzDate,
  });
  return expectedHeader === header ? null : "The request signature we calculated does not match the signature you provided";
}
