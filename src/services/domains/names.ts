import { TtlCache } from "../../lib/ttl-cache";

/**
 * Domain name normalisation shared by sending domains and /v1/verify:
 * lower-case, IDN to punycode (A-labels), one trailing dot dropped; no IP
 * addresses, no single-label names (bare TLDs), LDH labels of 1-63
 * characters, at most 253 characters in all.
 */

export type DomainNameResult = { ok: true; name: string } | { ok: false; reason: string };

const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
const IPV4_LIKE = /^[0-9.]+$|^0x/i;

export function normaliseDomainName(input: string): DomainNameResult {
  let raw = input.trim();
  if (raw.length === 0) return { ok: false, reason: "domain is empty" };
  if (/\s/.test(raw)) return { ok: false, reason: "domain contains whitespace" };
  if (raw.startsWith("[") || raw.includes(":")) return { ok: false, reason: "IP addresses are not accepted as domains" };
  if (/[/\\@?#%]/.test(raw)) return { ok: false, reason: "domain contains characters not allowed in a host name" };
  if (raw.endsWith(".")) raw = raw.slice(0, -1);
  if (raw.includes("..") || raw.startsWith(".")) return { ok: false, reason: "domain has an empty label (consecutive dots)" };
  // IPv4 in any spelling the URL parser would accept (1.2.3.4, 0x7f.1, 2130706433).
  const lastLabel = raw.slice(raw.lastIndexOf(".") + 1);
  if (IPV4_LIKE.test(raw) || /^\d+$/.test(lastLabel) || /^0x[0-9a-f]+$/i.test(lastLabel)) {
    return { ok: false, reason: "IP addresses are not accepted as domains" };
  }
  let name: string;
  try {
    // The WHATWG URL parser applies UTS #46 (IDNA) mapping and punycode.
    name = new URL(`http://${raw}/`).hostname;
  } catch {
    return { ok: false, reason: "domain is not a valid host name" };
  }
  name = name.toLowerCase();
  if (name.length > 253) return { ok: false, reason: "domain is longer than 253 characters" };
  const labels = name.split(".");
  if (labels.length < 2) return { ok: false, reason: "a bare top-level domain is not accepted; use a name like example.com" };
  for (const label of labels) {
    if (label.length > 63) return { ok: false, reason: `label "${label.slice(0, 20)}..." is longer than 63 characters` };
    if (!LABEL.test(label)) {
      return {
        ok: false,
        reason: `label "${label}" may only contain letters, digits and inner hyphens`,
      };
    }
  }
  if (/^\d+$/.test(labels[labels.length - 1])) return { ok: false, reason: "the top-level domain cannot be numeric" };
  return { ok: true, name };
}

/** The domain of an address (text after the last @), normalised, or undefined. */
export function domainOfAddress(address: string): string | undefined {
  let name = domainOfAddressCache.get(address);
  if (name === undefined) {
    const at = address.lastIndexOf("@");
    const result = at < 1 ? null : normaliseDomainName(address.slice(at + 1).replace(/>\s*$/, ""));
    name = result?.ok ? result.name : "";
    // Every /v1/send asks this for its from address; the URL parser behind it is not free.
    domainOfAddressCache.set(address, name);
  }
  return name || undefined;
}
const domainOfAddressCache = new TtlCache<string, string>({ max: 1_000, ttlMs: Number.POSITIVE_INFINITY });
