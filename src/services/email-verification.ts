/**
 * Address verification for POST /v1/verify: syntax as mail providers accept
 * it, disposable and relay (alias) domains, plus-addressing, likely typos,
 * and whether the domain exists and can receive mail (DNS over HTTPS, with a
 * short per-domain cache).
 */
import { mxValue, resolveDnsCached, type DnsAnswerCache, type DnsConfig, type DnsResult } from "../outside/dns";
import type { VerificationResult } from "../schemas/verify-address";
import { normaliseDomainName } from "./domains/names";

/** Every human-readable reason /v1/verify can give (some end with details). */
export const REASONS = {
  noAt: "Invalid syntax: the address has no @",
  whitespace: "Invalid syntax: the address contains whitespace",
  emptyLocal: "Invalid syntax: the part before @ is empty",
  quotedLocal: "Invalid syntax: quoted local parts are not accepted by mail providers",
  localTooLong: "Invalid syntax: the part before @ is longer than 64 characters",
  nonAsciiLocal: "Invalid syntax: non-ASCII characters before @ are not supported (SMTPUTF8)",
  dots: "Invalid syntax: the part before @ starts or ends with a dot or has consecutive dots",
  localChars: "Invalid syntax: the part before @ contains characters that are not allowed",
  ipLiteral: "Invalid syntax: IP address literals are not accepted as the domain",
  addressTooLong: "Invalid syntax: the address is longer than 254 characters",
  badDomain: "Invalid syntax: the domain is not valid", // + ": <why>"
  disposable: "The domain is a disposable (temporary) email provider",
  alias: "The address belongs to an email relay (alias) service",
  plus: "The address is plus-addressed (user+tag): a tagged sub-address of one mailbox",
  typo: "The domain looks like a typo", // + ": did you mean x?"
  nxdomain: "The domain does not exist (NXDOMAIN)",
  nullMx: "The domain publishes a null MX record (RFC 7505): it accepts no email",
  implicitMx: "The domain has no MX records; mail is delivered to its A/AAAA address (RFC 5321 implicit MX)",
  noMailHost: "The domain has no MX records and no A/AAAA address: it cannot receive email",
  dnsFailed: "The domain could not be checked: DNS lookup failed", // + " (<why>); try again later"
} as const;

/** Relay / alias services: the mailbox behind the address is hidden. Subdomains count too. */
export const ALIAS_DOMAINS = new Set([
  "privaterelay.appleid.com", // Apple Hide My Email
  "mozmail.com", // Firefox Relay
  "relay.firefox.com",
  "duck.com", // DuckDuckGo Email Protection
  "simplelogin.com",
  "simplelogin.co",
  "simplelogin.fr",
  "aleeas.com",
  "slmail.me",
  "silomails.com",
  "slmails.com",
  "8shield.net",
  "anonaddy.com", // addy.io
  "anonaddy.me",
  "addy.io",
  "addymail.com",
  "passmail.net", // Proton Pass
  "passmail.com",
  "passinbox.com",
  "passfwd.com",
  "33mail.com",
  "erine.email",
  "spamgourmet.com",
]);

/** Where the disposable-domain list is served among the static assets (copied there by scripts/docs-assets.mjs). */
export const DISPOSABLE_DOMAINS_ASSET = "/data/disposable-domains.json";
const MAX_DISPOSABLE_LIST_BYTES = 2_000_000;

// The disposable-domain list (a few thousand names, data rather than code) is a static
// asset read on the first verification, so it is neither in the Worker bundle nor
// parsed at startup; the spell checker's tables load on first use too.
let disposable: Promise<Set<string>> | undefined;
function disposableDomains(assets: Fetcher): Promise<Set<string>> {
  disposable ??= (async () => {
    const res = await assets.fetch(new Request(`https://assets.invalid${DISPOSABLE_DOMAINS_ASSET}`));
    const text = res.ok ? await res.text() : "";
    if (!res.ok || text.length > MAX_DISPOSABLE_LIST_BYTES)
      throw new Error(`disposable-domain list asset ${DISPOSABLE_DOMAINS_ASSET}: ${res.status}, ${text.length} bytes`);
    return new Set((JSON.parse(text) as unknown[]).filter((d): d is string => typeof d === "string"));
  })().catch((err) => {
    disposable = undefined; // a failed read is retried by the next request
    throw err;
  });
  return disposable;
}
const spellChecker = () => import("@zootools/email-spell-checker");

/** The domain and each parent domain (not the bare TLD): a.b.example.com, b.example.com, example.com. */
function withParents(domain: string): string[] {
  const labels = domain.split(".");
  const out: string[] = [];
  for (let i = 0; i < labels.length - 1; i++) out.push(labels.slice(i).join("."));
  return out;
}

export async function isDisposableDomain(assets: Fetcher, domain: string): Promise<boolean> {
  const list = await disposableDomains(assets);
  return withParents(domain).some((d) => list.has(d));
}

export const isAliasDomain = (domain: string) => withParents(domain).some((d) => ALIAS_DOMAINS.has(d));

const ATEXT = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~.-]+$/;

type Syntax = { ok: true; local: string; domain: string; typedDomain: string } | { ok: false; reason: string };

/** RFC 5321/5322 dot-atom addresses as mail providers accept them (no quoted strings, no IP literals). */
export function checkSyntax(email: string): Syntax {
  if (/\s/.test(email)) return { ok: false, reason: REASONS.whitespace };
  const at = email.lastIndexOf("@");
  if (at < 0) return { ok: false, reason: REASONS.noAt };
  const local = email.slice(0, at);
  const typedDomain = email.slice(at + 1);
  if (local.length === 0) return { ok: false, reason: REASONS.emptyLocal };
  if (local.startsWith('"')) return { ok: false, reason: REASONS.quotedLocal };
  if (/[^\x00-\x7f]/.test(local)) return { ok: false, reason: REASONS.nonAsciiLocal };
  if (local.length > 64) return { ok: false, reason: REASONS.localTooLong };
  if (local.startsWith(".") || local.endsWith(".") || local.includes("..")) return { ok: false, reason: REASONS.dots };
  if (!ATEXT.test(local)) return { ok: false, reason: REASONS.localChars };
  if (typedDomain.startsWith("[")) return { ok: false, reason: REASONS.ipLiteral };
  if (typedDomain.endsWith(".")) return { ok: false, reason: `${REASONS.badDomain}: it ends with a dot` };
  const domain = normaliseDomainName(typedDomain);
  if (!domain.ok) {
    if (/IP address/.test(domain.reason)) return { ok: false, reason: REASONS.ipLiteral };
    return { ok: false, reason: `${REASONS.badDomain}: ${domain.reason}` };
  }
  if (local.length + 1 + domain.name.length > 254) return { ok: false, reason: REASONS.addressTooLong };
  return { ok: true, local, domain: domain.name, typedDomain: typedDomain.toLowerCase() };
}

const dnsTrouble = (result: DnsResult) => `${REASONS.dnsFailed} (${result.message ?? result.outcome}); try again later`;

async function mailHost(config: DnsConfig, answers: DnsAnswerCache, domain: string) {
  const mx = await resolveDnsCached(config, answers, domain, "MX");
  if (mx.outcome === "nxdomain") return { domainExists: false, hasMxRecords: false, canReceive: false, reason: REASONS.nxdomain };
  if (mx.outcome !== "ok") return { domainExists: false, hasMxRecords: false, canReceive: false, reason: dnsTrouble(mx) };
  const hosts = mx.answers.map((a) => mxValue(a.data));
  if (hosts.length > 0) {
    const isNull = hosts.length === 1 && (hosts[0].host === "" || hosts[0].host === ".");
    if (isNull) return { domainExists: true, hasMxRecords: false, canReceive: false, reason: REASONS.nullMx };
    return { domainExists: true, hasMxRecords: true, canReceive: true };
  }
  for (const type of ["A", "AAAA"] as const) {
    const address = await resolveDnsCached(config, answers, domain, type);
    if (address.outcome !== "ok") return { domainExists: true, hasMxRecords: false, canReceive: false, reason: dnsTrouble(address) };
    if (address.answers.length > 0) return { domainExists: true, hasMxRecords: false, canReceive: true, reason: REASONS.implicitMx };
  }
  return { domainExists: true, hasMxRecords: false, canReceive: false, reason: REASONS.noMailHost };
}

/** `assets` is the Worker's static assets binding (env.ASSETS), which serves the disposable-domain list; `answers` the app's DNS cache. */
export async function verifyEmailAddress(config: DnsConfig, answers: DnsAnswerCache, assets: Fetcher, input: string): Promise<VerificationResult> {
  const email = input.trim();
  const syntax = checkSyntax(email);
  if (!syntax.ok) {
    return {
      email,
      valid: false,
      isDisposable: false,
      isAlias: false,
      isTypo: false,
      isPlusAddressed: false,
      domainExists: false,
      hasMxRecords: false,
      reasons: [syntax.reason],
    };
  }
  const { local, domain, typedDomain } = syntax;
  const reasons: string[] = [];
  const isDisposable = await isDisposableDomain(assets, domain);
  if (isDisposable) reasons.push(REASONS.disposable);
  const isAlias = isAliasDomain(domain);
  if (isAlias) reasons.push(REASONS.alias);
  const isPlusAddressed = local.indexOf("+") > 0;
  if (isPlusAddressed) reasons.push(REASONS.plus);

  // The library also "corrects" unknown TLDs of working domains (x.test -> x.de), so a
  // suggestion counts only towards a popular mailbox provider, or when the typed domain
  // cannot receive mail anyway.
  const host = await mailHost(config, answers, domain);
  let suggestedEmail: string | undefined;
  if (!isAlias) {
    const { POPULAR_DOMAINS, run: suggestEmail } = await spellChecker();
    const suggestion = suggestEmail({ email: `${local}@${typedDomain}` });
    if (
      suggestion?.domain &&
      suggestion.domain !== typedDomain &&
      suggestion.domain !== domain &&
      (POPULAR_DOMAINS.includes(suggestion.domain) || !host.canReceive)
    ) {
      suggestedEmail = `${local}@${suggestion.domain}`;
      reasons.push(`${REASONS.typo}: did you mean ${suggestedEmail}?`);
    }
  }
  if (host.reason) reasons.push(host.reason);
  return {
    email,
    valid: host.canReceive,
    isDisposable,
    isAlias,
    isTypo: suggestedEmail !== undefined,
    isPlusAddressed,
    domainExists: host.domainExists,
    hasMxRecords: host.hasMxRecords,
    reasons,
    ...(suggestedEmail ? { suggestedEmail } : {}),
  };
}
