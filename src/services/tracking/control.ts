import { and, eq, ne } from "drizzle-orm";
import { getDb, type Database } from "../../db/client";
import { controlDb } from "../../db/shards";
import { domains, type Domain } from "../../db/schema";
import type { Env } from "../../env";
import { publicUrl } from "../../lib/config";
import { ApiError } from "../../lib/errors";
import { TtlCache } from "../../lib/ttl-cache";
import { dnsConfig, resolveDns } from "../../outside/dns";
import type { UpdateDomainRequest } from "../../schemas/domains";
import { updateDomainTracking } from "../../store/domains";

/**
 * Tracking control (CONTRACT "Tracking control and pausing"): what one email's tracking is, from
 * - the send's own choice (`/v1/send` `track: {opens?, clicks?}`): a switch given wins;
 * - else its project's trackingMode (the claim answers it per email: ENABLED, DISABLED, or
 *   MARKETING_ONLY, where only marketing mail is tracked) AND its sending domain's openTracking /
 *   clickTracking (PATCH /domains/{id}).
 * With opens off there is no pixel; with clicks off every link stays as written. A sending domain's
 * custom tracking hostname (a CNAME to this service's host, checked over DNS) is the host of every
 * tracked link and pixel of its mail once VERIFIED; the Worker answers /t/... on any host.
 */

/** A sending domain's tracking, as the send consumer reads it (cached per isolate for DOMAIN_TRACKING_TTL_MS). */
export interface DomainTracking {
  openTracking: boolean;
  clickTracking: boolean;
  /** The custom tracking hostname, only once its CNAME is VERIFIED. */
  host: string | null;
}

const DEFAULT_TRACKING: DomainTracking = { openTracking: true, clickTracking: true, host: null };

/** How long the send consumer keeps a domain's tracking settings: a PATCH elsewhere takes effect within this. */
export const DOMAIN_TRACKING_TTL_MS = 5_000;
const cache = new TtlCache<string, Promise<DomainTracking>>({ max: 1000, ttlMs: DOMAIN_TRACKING_TTL_MS });

/** This isolate forgets a domain's settings (its PATCH): the next email reads them again. */
export function forgetDomainTracking(name: string): void {
  cache.delete(name);
}

/** The sending domain's tracking settings: one read of the control database per domain per TTL (concurrent emails share it). */
export function domainTracking(env: Env, name: string): Promise<DomainTracking> {
  const cached = cache.get(name);
  if (cached) return cached;
  const read = getDb(controlDb(env))
    .select({ openTracking: domains.openTracking, clickTracking: domains.clickTracking, host: domains.trackingHostname, status: domains.trackingStatus })
    .from(domains)
    .where(eq(domains.name, name))
    .limit(1)
    .then(([row]) =>
      row ? { openTracking: row.openTracking, clickTracking: row.clickTracking, host: row.status === "VERIFIED" ? row.host : null } : DEFAULT_TRACKING,
    );
  cache.set(name, read);
  // A failed read is not kept (the email is retried).
  read.catch(() => cache.delete(name));
  return read;
}

/** What one email gets: a pixel, tracked links, and the host of both (undefined: the service's own). */
export interface EmailTracking {
  opens: boolean;
  clicks: boolean;
  baseUrl?: string;
}

export const NO_TRACKING: EmailTracking = { opens: false, clicks: false };

/** One claimed email's tracking (`tracked` false, a campaign test: none). */
export async function trackingFor(
  env: Env,
  email: { fromAddress: string; tracked: boolean; trackingEnabled: boolean; trackOpens: boolean | null; trackClicks: boolean | null },
): Promise<EmailTracking> {
  if (!email.tracked) return NO_TRACKING;
  // Nothing to track and nothing the domain could change: no read.
  if (!email.trackingEnabled && email.trackOpens !== true && email.trackClicks !== true) return NO_TRACKING;
  const domain = await domainTracking(env, email.fromAddress.split("@")[1]?.toLowerCase() ?? "");
  const opens = email.trackOpens ?? (email.trackingEnabled && domain.openTracking);
  const clicks = email.trackClicks ?? (email.trackingEnabled && domain.clickTracking);
  return { opens, clicks, baseUrl: domain.host ? `https://${domain.host}` : undefined };
}

/** The host a tracking hostname's CNAME must point to: this service's public host. */
export const trackingCnameTarget = (env: Env) => new URL(publicUrl(env)).hostname.toLowerCase();

const stripDot = (s: string) => s.replace(/\.$/, "").toLowerCase();

/**
 * Looks the domain's tracking hostname up over DNS (DoH, DOH_URL): VERIFIED when it is a CNAME to the
 * service's host, PENDING while not (FAILED when a verified one disappeared). The columns to write.
 */
export async function checkTrackingHostname(env: Env, domain: Pick<Domain, "trackingHostname" | "trackingStatus">, now: Date) {
  if (!domain.trackingHostname) return { trackingStatus: null, trackingCheckedAt: null };
  const result = await resolveDns(dnsConfig(env), domain.trackingHostname, "CNAME");
  const target = trackingCnameTarget(env);
  // A resolver that could not answer changes nothing (as for the domain's records).
  if (result.outcome !== "ok" && result.outcome !== "nxdomain")
    return { trackingStatus: domain.trackingStatus ?? ("PENDING" as const), trackingCheckedAt: now };
  const found = result.answers.some((a) => a.type === 5 && stripDot(a.data) === target);
  const trackingStatus = found ? ("VERIFIED" as const) : domain.trackingStatus === "VERIFIED" ? ("FAILED" as const) : ("PENDING" as const);
  return { trackingStatus, trackingCheckedAt: now };
}

/**
 * PATCH /domains/{id}: the domain's open and click switches and its tracking hostname (a subdomain of
 * the domain: 422 naming trackingHostname otherwise; another domain's: 409 CONFLICT). A new hostname
 * is checked over DNS at once (and with the domain's checks after that, POST /domains/{id}/verify).
 */
export async function updateDomainTrackingSettings(db: Database, env: Env, domain: Domain, input: UpdateDomainRequest, now = new Date()): Promise<Domain> {
  const set: Partial<typeof domains.$inferInsert> = {};
  if (input.openTracking !== undefined) set.openTracking = input.openTracking;
  if (input.clickTracking !== undefined) set.clickTracking = input.clickTracking;
  if (input.trackingHostname !== undefined && input.trackingHostname !== domain.trackingHostname) {
    const host = input.trackingHostname;
    if (host !== null) {
      if (!host.endsWith(`.${domain.name}`)) {
        throw ApiError.validation([
          { field: "trackingHostname", message: `Must be a subdomain of ${domain.name}, e.g. track.${domain.name}`, code: "invalid_hostname" },
        ]);
      }
      const [taken] = await db
        .select({ id: domains.id })
        .from(domains)
        .where(and(eq(domains.trackingHostname, host), ne(domains.id, domain.id)))
        .limit(1);
      if (taken) throw new ApiError("CONFLICT", `${host} is the tracking hostname of another domain`);
    }
    set.trackingHostname = host;
    Object.assign(set, await checkTrackingHostname(env, { trackingHostname: host, trackingStatus: null }, now));
  }
  if (Object.keys(set).length === 0) return domain;
  set.updatedAt = now;
  const [row] = await updateDomainTracking(db.$client, domain.projectId, domain.id, set);
  if (!row) throw ApiError.notFound("Domain");
  forgetDomainTracking(domain.name);
  return row;
}
