/**
 * The DNS records a sending domain must publish, and how an answer from DNS
 * is judged against each of them.
 */
import type { DomainDnsRecord } from "../../db/schema";
import { readConfig, type ConfigInput } from "../../lib/config";
import { mxValue, txtValue, type DnsResult, type DnsType } from "../../outside/dns";
import { dkimRecordValue } from "./dkim";

export interface DomainRecordConfig {
  spfInclude: string;
  mailFromSubdomain: string;
  /** Mail server of the return-path subdomain's MX record. */
  returnPathMx: string;
}

/**
 * The records follow the provider. SES: SPF include:amazonses.com, MAIL FROM
 * on mail.<domain> with MX feedback-smtp.<region>.amazonses.com. Cloudflare
 * Email Service publishes (and locks) its own records when a domain is
 * onboarded: SPF include:_spf.mx.cloudflare.net and MX route1-3.mx.cloudflare.net
 * on cf-bounce.<domain>, so the defaults check for exactly those.
 */
export function domainRecordConfig(env: ConfigInput): DomainRecordConfig {
  const config = readConfig(env);
  const cloudflare = config.EMAIL_PROVIDER === "cloudflare";
  return {
    spfInclude: config.SPF_INCLUDE ?? (cloudflare ? "_spf.mx.cloudflare.net" : "amazonses.com"),
    mailFromSubdomain: config.MAIL_FROM_SUBDOMAIN ?? (cloudflare ? "cf-bounce" : "mail"),
    returnPathMx: cloudflare ? "route1.mx.cloudflare.net" : `feedback-smtp.${config.SES_REGION}.amazonses.com`,
  };
}

export const spfValue = (include: string) => `v=spf1 include:${include} ~all`;
export const DMARC_VALUE = "v=DMARC1; p=none;";

/**
 * What the owner publishes. Required for VERIFIED: the DKIM TXT record and the
 * SPF TXT record on the domain itself. Reported but not required: the
 * return-path (MAIL FROM) subdomain's MX and SPF records (without them SES
 * falls back to its own MAIL FROM domain) and a DMARC policy.
 */
export function expectedRecords(config: DomainRecordConfig, domain: string, selector: string, publicKey: string): DomainDnsRecord[] {
  const mailFrom = `${config.mailFromSubdomain}.${domain}`;
  return [
    {
      purpose: "DKIM",
      type: "TXT",
      name: `${selector}._domainkey.${domain}`,
      value: dkimRecordValue(publicKey),
      required: true,
      status: "PENDING",
    },
    { purpose: "SPF", type: "TXT", name: domain, value: spfValue(config.spfInclude), required: true, status: "PENDING" },
    {
      purpose: "RETURN_PATH_MX",
      type: "MX",
      name: mailFrom,
      value: config.returnPathMx,
      priority: 10,
      required: false,
      status: "PENDING",
    },
    {
      purpose: "RETURN_PATH_SPF",
      type: "TXT",
      name: mailFrom,
      value: spfValue(config.spfInclude),
      required: false,
      status: "PENDING",
    },
    { purpose: "DMARC", type: "TXT", name: `_dmarc.${domain}`, value: DMARC_VALUE, required: false, status: "PENDING" },
  ];
}

/** `found`: the right value is published; `missing`: it is not (detail says what is there); `unknown`: DNS did not answer. */
export type Judgement = { verdict: "found" | "missing" | "unknown"; detail: string };

function tags(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const part of text.split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0) out.set(part.slice(0, eq).trim().toLowerCase(), part.slice(eq + 1).trim());
  }
  return out;
}

const clip = (text: string) => (text.length > 80 ? `${text.slice(0, 77)}...` : text);

function judgeSpf(texts: string[], include: string, name: string): Judgement {
  const spf = texts.filter((t) => /^v=spf1(\s|$)/i.test(t.trim()));
  if (spf.length === 0) return { verdict: "missing", detail: `No SPF (v=spf1) TXT record found at ${name}` };
  if (spf.length > 1) {
    return {
      verdict: "missing",
      detail: `${spf.length} SPF records found at ${name}; a name may have only one: merge them into one v=spf1 record`,
    };
  }
  const terms = spf[0].trim().toLowerCase().split(/\s+/);
  if (!terms.some((t) => t.replace(/^[+~?-]/, "") === `include:${include}`)) {
    return { verdict: "missing", detail: `SPF record found but it lacks include:${include}: "${clip(spf[0])}"` };
  }
  return { verdict: "found", detail: "SPF record found with the right include" };
}

/** Judges one expected record against the DNS answer for its name and type. */
export function judgeRecord(record: DomainDnsRecord, result: DnsResult, config: DomainRecordConfig): Judgement {
  if (result.outcome !== "ok" && result.outcome !== "nxdomain") {
    return { verdict: "unknown", detail: `Could not check ${record.name}: ${result.message ?? result.outcome}` };
  }
  if (record.type === "MX") {
    const hosts = result.answers.map((a) => mxValue(a.data));
    if (hosts.length === 0) return { verdict: "missing", detail: `No MX record found at ${record.name}` };
    if (hosts.some((h) => h.host === record.value.toLowerCase())) {
      return { verdict: "found", detail: "MX record found" };
    }
    return {
      verdict: "missing",
      detail: `MX record found but it points to ${hosts.map((h) => h.host || ".").join(", ")}, not ${record.value}`,
    };
  }
  const texts = result.answers.map((a) => txtValue(a.data));
  if (texts.length === 0) {
    return {
      verdict: "missing",
      detail: result.outcome === "nxdomain" ? `${record.name} does not exist in DNS yet (NXDOMAIN)` : `No TXT record found at ${record.name}`,
    };
  }
  switch (record.purpose) {
    case "DKIM": {
      const expected = tags(record.value).get("p") ?? "";
      const dkim = texts.map(tags).filter((t) => t.has("p"));
      if (dkim.length === 0) return { verdict: "missing", detail: `TXT record at ${record.name} is not a DKIM key (no p= tag)` };
      const good = dkim.some(
        (t) =>
          (t.get("p") ?? "").replace(/\s+/g, "") === expected &&
          (!t.has("v") || t.get("v") === "DKIM1") &&
          (!t.has("k") || t.get("k")?.toLowerCase() === "rsa"),
      );
      if (good) return { verdict: "found", detail: "DKIM record found with this domain's public key" };
      return {
        verdict: "missing",
        detail: `DKIM record found at ${record.name} but its key (p=) does not match this domain's key; copy the value exactly`,
      };
    }
    case "SPF":
    case "RETURN_PATH_SPF":
      return judgeSpf(texts, config.spfInclude, record.name);
    case "DMARC": {
      const dmarc = texts.filter((t) => /^v=DMARC1(\s*;|\s*$)/i.test(t.trim()));
      if (dmarc.length === 1) return { verdict: "found", detail: "DMARC record found" };
      if (dmarc.length > 1) return { verdict: "missing", detail: `${dmarc.length} DMARC records found; publish exactly one` };
      return { verdict: "missing", detail: `No DMARC (v=DMARC1) TXT record found at ${record.name}` };
    }
    default:
      return { verdict: "missing", detail: "Unknown record" };
  }
}

export const lookupKey = (record: { name: string; type: string }) => `${record.type} ${record.name}`;
export const lookupType = (record: DomainDnsRecord): DnsType => record.type as DnsType;
