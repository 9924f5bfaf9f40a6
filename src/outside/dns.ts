/**
 * DNS over HTTPS, JSON API (RFC 8484's JSON sibling as served by Cloudflare and
 * Google): `GET <DOH_URL>?name=<name>&type=<type>` with
 * `accept: application/dns-json`. Workers have no socket-level DNS, so every
 * lookup of the service (domain checks, /v1/verify) goes through here, to a URL
 * configuration can point at a local fake.
 */

import { readConfig, type ConfigInput } from "../lib/config";
import type { Clock } from "../lib/caches";
import { TtlCache } from "../lib/ttl-cache";

export type DnsType = "A" | "AAAA" | "MX" | "TXT" | "CNAME";
const TYPE_CODES: Record<DnsType, number> = { A: 1, CNAME: 5, MX: 15, TXT: 16, AAAA: 28 };

/** One answer of the wanted type; `data` as the resolver gives it (TXT: quoted strings). */
export interface DnsAnswer {
  name: string;
  type: number;
  TTL: number;
  data: string;
}

/**
 * - `ok`: NOERROR; `answers` may be empty (the name exists but has no record of that type).
 * - `nxdomain`: the name does not exist.
 * - `servfail`, `timeout`, `error`: the resolver could not answer; nothing is known.
 */
export type DnsOutcome = "ok" | "nxdomain" | "servfail" | "timeout" | "error";

export interface DnsResult {
  outcome: DnsOutcome;
  answers: DnsAnswer[];
  /** Human-readable, for reasons and per-record details. */
  message?: string;
}

export interface DnsConfig {
  url: string;
  timeoutMs: number;
}

export function dnsConfig(env: ConfigInput): DnsConfig {
  const config = readConfig(env);
  return { url: config.DOH_URL, timeoutMs: config.DOH_TIMEOUT_MS };
}

interface DohJson {
  Status?: number;
  Answer?: DnsAnswer[];
}

const RCODES: Record<number, string> = { 1: "FORMERR", 4: "NOTIMP", 5: "REFUSED" };

/** One lookup, never cached, never throwing: resolver trouble is an outcome. */
export async function resolveDns(config: DnsConfig, name: string, type: DnsType): Promise<DnsResult> {
  const url = new URL(config.url);
  url.searchParams.set("name", name);
  url.searchParams.set("type", type);
  let body: DohJson;
  try {
    const response = await fetch(url.toString(), {
      headers: { accept: "application/dns-json" },
      signal: AbortSignal.timeout(config.timeoutMs),
    });
    if (!response.ok) {
      try {
        await response.body?.cancel();
      } catch {
        // nothing to free
      }
      return { outcome: "error", answers: [], message: `resolver answered HTTP ${response.status}` };
    }
    body = (await response.json()) as DohJson;
  } catch (err) {
    const name = err instanceof Error || err instanceof DOMException ? err.name : "";
    if (name === "TimeoutError" || name === "AbortError") {
      return { outcome: "timeout", answers: [], message: `resolver timed out after ${config.timeoutMs} ms` };
    }
    return { outcome: "error", answers: [], message: "resolver could not be reached or answered malformed JSON" };
  }
  switch (body?.Status) {
    case 0: {
      const code = TYPE_CODES[type];
      const answers = Array.isArray(body.Answer) ? body.Answer.filter((a) => a && a.type === code && typeof a.data === "string") : [];
      return { outcome: "ok", answers };
    }
    case 3:
      return { outcome: "nxdomain", answers: [], message: "the name does not exist (NXDOMAIN)" };
    case 2:
      return { outcome: "servfail", answers: [], message: "resolver answered SERVFAIL" };
    default:
      return {
        outcome: "error",
        answers: [],
        message: `resolver answered status ${body?.Status} (${RCODES[body?.Status as number] ?? "unknown"})`,
      };
  }
}

/** A definitive answer (the records are what they are); worth caching. */
export const isDefinitive = (result: DnsResult) => result.outcome === "ok" || result.outcome === "nxdomain";

/**
 * A TXT answer's text: the resolver gives one or more quoted character-strings
 * (`"v=DKIM1; k=rsa; " "p=MIIB..."`, long values are split at 255 bytes), with
 * `\"`, `\\` and `\DDD` escapes. They are concatenated, as DKIM and SPF require.
 */
export function txtValue(data: string): string {
  const trimmed = data.trim();
  if (!trimmed.startsWith('"')) return trimmed;
  let out = "";
  let i = 0;
  while (i < trimmed.length) {
    if (trimmed[i] !== '"') {
      i++;
      continue;
    }
    i++;
    while (i < trimmed.length && trimmed[i] !== '"') {
      if (trimmed[i] === "\\" && i + 1 < trimmed.length) {
        const digits = trimmed.slice(i + 1, i + 4);
        if (/^\d{3}$/.test(digits)) {
          out += String.fromCharCode(Number(digits));
          i += 4;
        } else {
          out += trimmed[i + 1];
          i += 2;
        }
      } else {
        out += trimmed[i++];
      }
    }
    i++;
  }
  return out;
}

/** An MX answer `10 mx.example.com.` as {priority, host} (host lower-case, no trailing dot; "" for null MX). */
export function mxValue(data: string): { priority: number; host: string } {
  const [priority, host = ""] = data.trim().split(/\s+/);
  return { priority: Number(priority), host: host.toLowerCase().replace(/\.$/, "") };
}

// ---------------------------------------------------------------------------
// Short-lived cache for /v1/verify: a burst of checks of one domain costs one
// lookup per record type. Two levels: the app's in-isolate cache (always works) and
// the Cache API of the colo (shared between isolates; a no-op where the Cache
// API is unavailable). Only definitive answers are cached.

const CACHE_ORIGIN = "https://doh-cache.edge-mail.invalid";
const MIN_CACHE_SECONDS = 30;
const MAX_CACHE_SECONDS = 300;
const NEGATIVE_CACHE_SECONDS = 60;
const MEMORY_ENTRIES = 1000;

/** The app's in-isolate DNS answers (`caches.get(dnsAnswerCache)`); each entry lives as long as its DNS TTL allows. */
export const dnsAnswerCache = (now: Clock) => new TtlCache<string, DnsResult>({ max: MEMORY_ENTRIES, ttlMs: MIN_CACHE_SECONDS * 1000, now });
export type DnsAnswerCache = ReturnType<typeof dnsAnswerCache>;

function cacheSeconds(result: DnsResult): number {
  if (result.answers.length === 0) return NEGATIVE_CACHE_SECONDS;
  const ttl = Math.min(...result.answers.map((a) => (Number.isFinite(a.TTL) ? a.TTL : MAX_CACHE_SECONDS)));
  return Math.max(MIN_CACHE_SECONDS, Math.min(MAX_CACHE_SECONDS, ttl));
}

function defaultCache(): Cache | undefined {
  try {
    return (globalThis as unknown as { caches?: { default?: Cache } }).caches?.default;
  } catch {
    return undefined;
  }
}

/** Like resolveDns, but answers from a short-lived cache when it can. */
export async function resolveDnsCached(config: DnsConfig, memory: DnsAnswerCache, name: string, type: DnsType): Promise<DnsResult> {
  const key = `${CACHE_ORIGIN}/${type}/${encodeURIComponent(name)}`;
  const hit = memory.get(key);
  if (hit) return hit;

  const cache = defaultCache();
  if (cache) {
    try {
      const cached = await cache.match(key);
      if (cached) {
        const result = (await cached.json()) as DnsResult;
        const age = Number(cached.headers.get("x-cache-seconds")) || MIN_CACHE_SECONDS;
        memory.set(key, result, age * 1000);
        return result;
      }
    } catch {
      // a broken cache is only a slower lookup
    }
  }

  const result = await resolveDns(config, name, type);
  if (isDefinitive(result)) {
    const seconds = cacheSeconds(result);
    memory.set(key, result, seconds * 1000);
    if (cache) {
      try {
        await cache.put(
          key,
          new Response(JSON.stringify(result), {
            headers: {
              "content-type": "application/json",
              "cache-control": `max-age=${seconds}`,
              "x-cache-seconds": String(seconds),
            },
          }),
        );
      } catch {
        // ignore
      }
    }
  }
  return result;
}
