/**
 * Amazon SNS HTTP(S) message verification, per
 * https://docs.aws.amazon.com/sns/latest/dg/sns-verify-signature-of-message.html:
 * the signing certificate must come from an SNS host over https, the
 * string to sign is rebuilt from the message's fields, and the signature is
 * checked with the certificate's RSA key (SHA1withRSA for SignatureVersion 1,
 * SHA256withRSA for 2).
 */

import { base64ToBytes } from "../lib/base64";
import type { Clock } from "../lib/caches";
import { TtlCache } from "../lib/ttl-cache";

export type SnsMessageType = "Notification" | "SubscriptionConfirmation" | "UnsubscribeConfirmation";

export interface SnsMessage {
  Type: SnsMessageType;
  MessageId: string;
  TopicArn: string;
  Message: string;
  Timestamp: string;
  SignatureVersion: "1" | "2";
  Signature: string;
  SigningCertURL: string;
  Subject?: string;
  SubscribeURL?: string;
  Token?: string;
}

/** Why a message was refused: "malformed" (400) or "forged" (403). */
export class SnsVerificationError extends Error {
  constructor(
    readonly kind: "malformed" | "forged" | "unavailable",
    message: string,
  ) {
    super(message);
    this.name = "SnsVerificationError";
  }
}

/** Messages older than this are refused (replay window); SNS's own retries fall well inside it. */
export const MAX_MESSAGE_AGE_MS = 60 * 60 * 1000;
const MAX_CLOCK_SKEW_MS = 5 * 60 * 1000;

const SNS_HOST = /^sns\.[a-z0-9-]+\.amazonaws\.com(\.cn)?$/;

/** An https URL on an SNS host (sns.<region>.amazonaws.com[.cn]), default port, no credentials. */
export function isSnsUrl(value: string): URL | null {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return null;
  }
  if (url.protocol !== "https:" || url.username || url.password || url.port) return null;
  if (!SNS_HOST.test(url.hostname)) return null;
  return url;
}

/**
 * The one SNS host a topic's messages may come from: `sns.<region>.amazonaws.com`
 * for the region in the TopicArn (`.amazonaws.com.cn` in the China partition),
 * or null when the ARN is not an SNS topic ARN.
 */
export function snsHostForTopic(topicArn: string): string | null {
  const match = /^arn:(aws|aws-cn|aws-us-gov):sns:([a-z]{2}(?:-[a-z]+)+-\d):\d{12}:[A-Za-z0-9_.-]{1,256}$/.exec(topicArn);
  if (!match) return null;
  return `sns.${match[2]}.amazonaws.com${match[1] === "aws-cn" ? ".cn" : ""}`;
}

/**
 * A SigningCertURL that may be fetched: an https URL on exactly the SNS host of
 * the topic's region, whose path ends in .pem, without query or fragment.
 */
export function checkSigningCertUrl(value: string, topicArn: string): URL | null {
  const url = isSnsUrl(value);
  if (!url?.pathname.endsWith(".pem") || url.search || url.hash) return null;
  if (url.hostname !== snsHostForTopic(topicArn)) return null;
  return url;
}

const TYPES: readonly SnsMessageType[] = ["Notification", "SubscriptionConfirmation", "UnsubscribeConfirmation"];

/** Checks the shape of a parsed SNS body; throws "malformed" when a required field is missing. */
export function parseSnsMessage(body: unknown): SnsMessage {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw new SnsVerificationError("malformed", "The body is not an SNS message object");
  }
  const m = body as Record<string, unknown>;
  const type = m.Type;
  if (typeof type !== "string" || !TYPES.includes(type as SnsMessageType)) {
    throw new SnsVerificationError("malformed", "Unknown or missing SNS message Type");
  }
  const required = ["MessageId", "TopicArn", "Message", "Timestamp", "SignatureVersion", "Signature", "SigningCertURL"];
  if (type !== "Notification") required.push("SubscribeURL", "Token");
  for (const field of required) {
    if (typeof m[field] !== "string") throw new SnsVerificationError("malformed", `SNS message field ${field} is missing`);
  }
  if (m.Subject !== undefined && m.Subject !== null && typeof m.Subject !== "string") {
    throw new SnsVerificationError("malformed", "SNS message field Subject is not a string");
  }
  return m as unknown as SnsMessage;
}

/** The canonical string SNS signs, built from the message's fields in the documented order. */
export function stringToSign(m: SnsMessage): string {
  const fields: [string, string | undefined][] =
    m.Type === "Notification"
      ? [
          ["Message", m.Message],
          ["MessageId", m.MessageId],
          ["Subject", typeof m.Subject === "string" ? m.Subject : undefined],
          ["Timestamp", m.Timestamp],
          ["TopicArn", m.TopicArn],
          ["Type", m.Type],
        ]
      : [
          ["Message", m.Message],
          ["MessageId", m.MessageId],
          ["SubscribeURL", m.SubscribeURL],
          ["Timestamp", m.Timestamp],
          ["Token", m.Token],
          ["TopicArn", m.TopicArn],
          ["Type", m.Type],
        ];
  let out = "";
  for (const [name, value] of fields) if (value !== undefined) out += `${name}\n${value}\n`;
  return out;
}

// ---- X.509: just enough DER to find the SubjectPublicKeyInfo ----

interface DerNode {
  tag: number;
  /** Offset of the tag byte. */
  start: number;
  /** Offset of the first content byte. */
  contentStart: number;
  /** Offset after the last content byte. */
  end: number;
}

function readNode(der: Uint8Array, offset: number, limit: number): DerNode {
  if (offset + 2 > limit) throw new Error("truncated DER");
  const tag = der[offset];
  if ((tag & 0x1f) === 0x1f) throw new Error("multi-byte DER tags are not supported");
  let length = der[offset + 1];
  let contentStart = offset + 2;
  if (length & 0x80) {
    const bytes = length & 0x7f;
    if (bytes === 0 || bytes > 4) throw new Error("unsupported DER length");
    if (contentStart + bytes > limit) throw new Error("truncated DER");
    length = 0;
    for (let i = 0; i < bytes; i++) length = length * 256 + der[contentStart + i];
    contentStart += bytes;
  }
  const end = contentStart + length;
  if (end > limit) throw new Error("truncated DER");
  return { tag, start: offset, contentStart, end };
}

function children(der: Uint8Array, node: DerNode): DerNode[] {
  const out: DerNode[] = [];
  for (let offset = node.contentStart; offset < node.end; ) {
    const child = readNode(der, offset, node.end);
    out.push(child);
    offset = child.end;
  }
  return out;
}

const SEQUENCE = 0x30;

/**
 * Certificate ::= SEQUENCE { tbsCertificate, signatureAlgorithm, signature }
 * TBSCertificate ::= SEQUENCE { [0] version OPTIONAL, serialNumber, signature,
 *   issuer, validity, subject, subjectPublicKeyInfo, ... }
 * Returns the DER of subjectPublicKeyInfo.
 */
export function spkiFromCertificate(der: Uint8Array): Uint8Array {
  const cert = readNode(der, 0, der.length);
  if (cert.tag !== SEQUENCE) throw new Error("certificate is not a SEQUENCE");
  const tbs = children(der, cert)[0];
  if (!tbs || tbs.tag !== SEQUENCE) throw new Error("tbsCertificate is not a SEQUENCE");
  const fields = children(der, tbs);
  const skip = fields[0]?.tag === 0xa0 ? 1 : 0; // explicit [0] version
  const spki = fields[skip + 5];
  if (!spki || spki.tag !== SEQUENCE) throw new Error("subjectPublicKeyInfo not found");
  return der.slice(spki.start, spki.end);
}

/** The DER of the first CERTIFICATE block of a PEM file. */
export function pemToDer(pem: string): Uint8Array {
  const match = /-----BEGIN CERTIFICATE-----([\s\S]+?)-----END CERTIFICATE-----/.exec(pem);
  if (!match) throw new Error("no certificate in PEM");
  return base64ToBytes(match[1]);
}

// ---- Keys: fetched once per certificate URL, kept in memory (a URL names one certificate) ----

const MAX_CACHED_CERTS = 64;
const spkiCache = new TtlCache<string, Promise<Uint8Array>>({ max: MAX_CACHED_CERTS, ttlMs: Number.POSITIVE_INFINITY });
const keyCache = new TtlCache<string, Promise<CryptoKey>>({ max: MAX_CACHED_CERTS, ttlMs: Number.POSITIVE_INFINITY });
/**
 * How long a certificate URL that could not be fetched or read is refused
 * without fetching it again: a flood of posts naming one bad URL costs one
 * fetch, and SNS's own retries (20 s apart by default) find a recovered host.
 */
export const CERT_FAILURE_TTL_MS = 10_000;
/** The app's certificate URLs that failed lately (`caches.get(failedCertificates)`). */
export const failedCertificates = (now: Clock) => new TtlCache<string, SnsVerificationError>({ max: 1_000, ttlMs: CERT_FAILURE_TTL_MS, now });

interface CertificateFetch {
  fetcher: typeof fetch;
  failed: ReturnType<typeof failedCertificates>;
  beforeFetch?: () => Promise<void>;
}

async function fetchSpki(url: URL, { fetcher, failed, beforeFetch }: CertificateFetch): Promise<Uint8Array> {
  const failure = failed.get(url.href);
  if (failure) throw failure;
  await beforeFetch?.();
  try {
    return await fetchAndReadSpki(url, fetcher);
  } catch (err) {
    if (err instanceof SnsVerificationError) failed.set(url.href, err);
    throw err;
  }
}

async function fetchAndReadSpki(url: URL, fetcher: typeof fetch): Promise<Uint8Array> {
  let response: Response;
  try {
    response = await fetcher(url.href, { redirect: "manual" });
  } catch (err) {
    throw new SnsVerificationError("unavailable", `Could not fetch the SNS signing certificate: ${String(err)}`);
  }
  if (!response.ok) {
    throw new SnsVerificationError("unavailable", `The SNS signing certificate answered ${response.status}`);
  }
  const pem = await response.text();
  try {
    return spkiFromCertificate(pemToDer(pem));
  } catch (err) {
    throw new SnsVerificationError("forged", `The SNS signing certificate is not a readable X.509 certificate: ${String(err)}`);
  }
}

function remember<T>(cache: TtlCache<string, Promise<T>>, key: string, make: () => Promise<T>): Promise<T> {
  let value = cache.get(key);
  if (!value) {
    value = make();
    cache.set(key, value);
    // A failure (network, bad certificate) is not kept here: failedCertificates refuses the URL for a few seconds only.
    value.catch(() => {
      if (cache.get(key) === value) cache.delete(key);
    });
  }
  return value;
}

function publicKey(url: URL, version: "1" | "2", certificate: CertificateFetch): Promise<CryptoKey> {
  const hash = version === "1" ? "SHA-1" : "SHA-256";
  return remember(keyCache, `${hash} ${url.href}`, async () => {
    const spki = await remember(spkiCache, url.href, () => fetchSpki(url, certificate));
    try {
      return await crypto.subtle.importKey("spki", spki, { name: "RSASSA-PKCS1-v1_5", hash }, false, ["verify"]);
    } catch (err) {
      throw new SnsVerificationError("forged", `The SNS signing certificate has no usable RSA key: ${String(err)}`);
    }
  });
}

/** Forgets every cached certificate key (tests). */
export function clearSnsKeyCache(): void {
  spkiCache.clear();
  keyCache.clear();
}

function decodeBase64(value: string): Uint8Array | null {
  try {
    return base64ToBytes(value);
  } catch {
    return null;
  }
}

/**
 * Verifies an SNS message; throws SnsVerificationError when it is not
 * authentic. The certificate URL is checked before anything is fetched, and
 * only that checked URL is fetched.
 */
/**
 * `beforeFetch` runs before the signing certificate is fetched (a URL not
 * cached) and may throw to refuse the message (the per-client limit);
 * `failed` is the app's cache of certificate URLs that failed lately.
 */
export async function verifySnsMessage(
  m: SnsMessage,
  options: { failed: ReturnType<typeof failedCertificates>; fetcher?: typeof fetch; now?: number; beforeFetch?: () => Promise<void> },
): Promise<void> {
  if (m.SignatureVersion !== "1" && m.SignatureVersion !== "2") {
    throw new SnsVerificationError("forged", `Unsupported SignatureVersion ${JSON.stringify(m.SignatureVersion)}`);
  }
  const certUrl = checkSigningCertUrl(m.SigningCertURL, m.TopicArn);
  if (!certUrl) {
    throw new SnsVerificationError("forged", "SigningCertURL is not an https .pem URL on the SNS host of the TopicArn's region");
  }
  const timestamp = Date.parse(m.Timestamp);
  const now = options.now ?? Date.now();
  if (Number.isNaN(timestamp)) throw new SnsVerificationError("malformed", "Timestamp is not a date");
  if (now - timestamp > MAX_MESSAGE_AGE_MS) throw new SnsVerificationError("forged", "The message is too old");
  if (timestamp - now > MAX_CLOCK_SKEW_MS) throw new SnsVerificationError("forged", "The message is dated in the future");
  const signature = decodeBase64(m.Signature);
  if (!signature || signature.length === 0) throw new SnsVerificationError("forged", "Signature is not base64");

  const key = await publicKey(certUrl, m.SignatureVersion, { fetcher: options.fetcher ?? fetch, failed: options.failed, beforeFetch: options.beforeFetch });
  const ok = await crypto.subtle.verify("RSASSA-PKCS1-v1_5", key, signature, new TextEncoder().encode(stringToSign(m)));
  if (!ok) throw new SnsVerificationError("forged", "The SNS signature does not match");
}

/**
 * Local development only: a fetcher that fetches a checked SNS certificate URL
 * (https://sns.<region>.amazonaws.com/<path>) from `origin` + <path> instead, so a
 * local fake SNS can sign notifications `wrangler dev` verifies without the internet.
 * The route uses it only with ENVIRONMENT=development and SNS_DEV_CERT_ORIGIN set.
 */
export function devCertificateFetcher(origin: string): typeof fetch {
  return (input, init) => {
    const url = new URL(typeof input === "string" ? input : input instanceof URL ? input.href : input.url);
    return fetch(`${origin.replace(/\/+$/, "")}${url.pathname}`, init);
  };
}
