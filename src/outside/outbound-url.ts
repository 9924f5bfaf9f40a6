import ipaddr from "ipaddr.js";
import type { Env } from "../env";
import { readConfig } from "../lib/config";
import { dnsConfig, resolveDns } from "./dns";

/**
 * The one SSRF guard for every URL the service calls on a user's behalf
 * (workflow WEBHOOK steps, event webhooks), checked when the URL is stored and
 * again before every call.
 *
 * Outside development a target must be https on port 443, 80 or 8443, and must
 * not be (or resolve to) anything but a public unicast address, in any
 * spelling: the URL parser normalises IPv4 in decimal, octal, hex or short
 * form (2130706433, 0x7f.1, 0177.0.0.1, 127.1), and IPv6 forms that embed an
 * IPv4 address (::ffff:a.b.c.d, ::a.b.c.d, NAT64 64:ff9b::/96, 6to4, Teredo)
 * are refused or judged by their IPv4 part. Names are resolved (A and AAAA)
 * through the service's DNS-over-HTTPS resolver just before each call;
 * Workers' own fetch additionally cannot reach private networks in production,
 * which covers a name that changes its answer between the check and the call.
 * In development (ENVIRONMENT=development) any http(s) URL is allowed, so a
 * receiver on localhost works.
 */

/** Names that never point at the public internet. */
const INTERNAL_NAME = /(^|\.)(localhost|local|internal|intranet|lan|home\.arpa|localdomain|corp|test|invalid|example)$/i;
/** Ports a deployment may call (https on its usual ports). */
export const ALLOWED_PORTS = ["", "443", "80", "8443"];

/** Only ordinary public unicast addresses may be called. */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  let parsed = ipaddr.parse(address);
  if (parsed.kind() === "ipv6") {
    const v6 = parsed as ipaddr.IPv6;
    // ::ffff:a.b.c.d is judged as a.b.c.d.
    if (v6.isIPv4MappedAddress()) parsed = v6.toIPv4Address();
    // Global unicast is 2000::/3: this also refuses ::a.b.c.d (IPv4-compatible),
    // ::ffff:0:a.b.c.d (IPv4-translated) and anything else below it.
    else if (!v6.match(ipaddr.IPv6.parse("2000::"), 3)) return false;
  }
  // NAT64, 6to4, Teredo, unique-local, documentation, CGNAT, ... are all something other than "unicast".
  return parsed.range() === "unicast";
}

/** A problem with the URL itself (checked when it is stored and again before each call), or null. */
export function outboundUrlProblem(raw: string, env: Pick<Env, "ENVIRONMENT">): string | null {
  if (raw.length > 2048) return "URLs may be at most 2048 characters";
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return "Not a valid URL";
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") return "Only http(s) URLs can be called";
  if (url.username || url.password) return "Credentials in the URL are not allowed; use headers";
  if (readConfig(env).development) return null;
  if (url.protocol !== "https:") return "Webhook URLs must use https";
  if (!ALLOWED_PORTS.includes(url.port)) return `Port ${url.port} is not allowed (use 443, 80 or 8443)`;
  const host = url.hostname.replace(/^\[|\]$/g, "").replace(/\.$/, "");
  if (ipaddr.isValid(host)) return isPublicAddress(host) ? null : `${host} is a private, loopback, link-local or otherwise internal address`;
  if (!host.includes(".") || INTERNAL_NAME.test(host)) return `${host} is not a public host name`;
  return null;
}

export interface TargetProblem {
  reason: string;
  /** The resolver, not the answer, was the problem: worth trying again. */
  retryable: boolean;
}

/**
 * Checks the URL and resolves its host (A and AAAA), refusing it when any
 * address is not public. Null when the call may go ahead.
 */
export async function outboundTargetProblem(raw: string, env: Env): Promise<TargetProblem | null> {
  const static_ = outboundUrlProblem(raw, env);
  if (static_) return { reason: static_, retryable: false };
  if (readConfig(env).development) return null;
  const host = new URL(raw).hostname.replace(/^\[|\]$/g, "").replace(/\.$/, "");
  if (ipaddr.isValid(host)) return null;
  const config = dnsConfig(env);
  const [a, aaaa] = await Promise.all([resolveDns(config, host, "A"), resolveDns(config, host, "AAAA")]);
  for (const result of [a, aaaa]) {
    if (result.outcome !== "ok" && result.outcome !== "nxdomain") {
      return { reason: `Could not resolve ${host}: ${result.message ?? result.outcome}`, retryable: true };
    }
  }
  const addresses = [...a.answers, ...aaaa.answers].filter((answer) => answer.type === 1 || answer.type === 28).map((answer) => answer.data.trim());
  if (addresses.length === 0) return { reason: `${host} has no A or AAAA record`, retryable: true };
  const refused = addresses.find((address) => !isPublicAddress(address));
  if (refused) return { reason: `${host} resolves to ${refused}, a private, loopback, link-local or otherwise internal address`, retryable: false };
  return null;
}
