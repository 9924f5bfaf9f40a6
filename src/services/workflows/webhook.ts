import ipaddr from "ipaddr.js";
import type { Env } from "../../env";
import { base64ToBytes, bytesToBase64 } from "../../lib/base64";
import { readConfig } from "../../lib/config";
import { dnsConfig, resolveDns } from "../dns";

/**
 * WEBHOOK steps: Standard Webhooks signatures and the SSRF guard.
 *
 * Outside development a target must be https and must not be (or resolve to)
 * a private, loopback, link-local or otherwise non-public address. The name is
 * resolved through the service's DNS-over-HTTPS resolver just before each call;
 * Workers' own fetch additionally cannot reach private networks in production,
 * which covers a name that changes its answer between the check and the call.
 */

/** Names that never point at the public internet. */
const INTERNAL_NAME = /(^|\.)(localhost|local|internal|intranet|lan|home\.arpa|localdomain)$/i;

/** Only ordinary public unicast addresses may be called. */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  let parsed = ipaddr.parse(address);
  // ::ffff:a.b.c.d is judged as a.b.c.d; every other special range (NAT64,
  // 6to4, Teredo, unique-local, documentation ...) is something other than "unicast".
  if (parsed.kind() === "ipv6" && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) parsed = (parsed as ipaddr.IPv6).toIPv4Address();
  return parsed.range() === "unicast";
}

/** A problem with the URL itself (checked when the workflow is written and again before each call), or null. */
export function webhookUrlProblem(raw: string, env: Pick<Env, "ENVIRONMENT">): string | null {
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
  const host = url.hostname.replace(/^\[|\]$/g, "");
  if (ipaddr.isValid(host)) return isPublicAddress(host) ? null : `${host} is a private, loopback or link-local address`;
  if (!host.includes(".") || INTERNAL_NAME.test(host)) return `${host} is not a public host name`;
  return null;
}

/**
 * Resolves the URL's host (A and AAAA) and refuses it when any address is not
 * public. Returns null when the call may go ahead, or the reason it may not;
 * `retryable` says whether the resolver, not the answer, was the problem.
 */
export async function webhookTargetProblem(raw: string, env: Env): Promise<{ reason: string; retryable: boolean } | null> {
  const static_ = webhookUrlProblem(raw, env);
  if (static_) return { reason: static_, retryable: false };
  if (readConfig(env).development) return null;
  const host = new URL(raw).hostname.replace(/^\[|\]$/g, "");
  if (ipaddr.isValid(host)) return null;
  const config = dnsConfig(env);
  const [a, aaaa] = await Promise.all([resolveDns(config, host, "A"), resolveDns(config, host, "AAAA")]);
  for (const result of [a, aaaa]) {
    if (result.outcome !== "ok" && result.outcome !== "nxdomain") {
      return { reason: `Could not resolve ${host}: ${result.message ?? result.outcome}`, retryable: true };
    }
  }
  const addresses = [...a.answers, ...aaaa.answers].map((answer) => answer.data.trim());
  if (addresses.length === 0) return { reason: `${host} has no A or AAAA record`, retryable: true };
  const refused = addresses.find((address) => !isPublicAddress(address));
  if (refused) return { reason: `${host} resolves to ${refused}, a private, loopback or link-local address`, retryable: false };
  return null;
}

/** `whsec_` + base64 of 32 random bytes (the Standard Webhooks secret format). */
export function newWebhookSecret(): string {
  return `whsec_${bytesToBase64(crypto.getRandomValues(new Uint8Array(32)))}`;
}

/**
 * The Standard Webhooks headers for one delivery: `webhook-signature` is
 * `v1,` + base64(HMAC-SHA256(secret bytes, "<id>.<timestamp>.<body>")).
 */
export async function signWebhook(secret: string, id: string, timestampSeconds: number, body: string) {
  const key = await crypto.subtle.importKey("raw", base64ToBytes(secret.replace(/^whsec_/, "")), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const mac = await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(`${id}.${timestampSeconds}.${body}`));
  return {
    "webhook-id": id,
    "webhook-timestamp": String(timestampSeconds),
    "webhook-signature": `v1,${bytesToBase64(mac)}`,
  };
}
