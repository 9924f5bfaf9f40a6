/**
 * Domain verification: look the expected records up (fresh, uncached
 * DNS-over-HTTPS), judge each, and move the domain through its states.
 *
 * Domain status:
 * - PENDING: waiting for the required records (DKIM, SPF). Checked on create,
 *   on "check now", and by the cron with back-off (1, 2, 5, 10, 30, then every
 *   60 minutes); FAILED when 72 hours after creation they are still not found.
 * - VERIFIED: required records found. Re-checked every 6 hours. If a required
 *   record disappears, that record becomes FAILED (with `failingSince`), the
 *   domain stays VERIFIED (sending continues) and is re-checked with back-off;
 *   if it is still missing 72 hours later the domain becomes FAILED.
 * - FAILED: no longer checked by the cron; "check now" still re-checks and
 *   turns it VERIFIED once the records are right.
 *
 * Record status: VERIFIED (found with the right value at the last check),
 * PENDING (not found yet while the domain is being verified), FAILED (a
 * verified record that vanished, or any unfound record once the domain FAILED).
 * A resolver failure (SERVFAIL, timeout) changes no status; it is noted in the
 * record's `detail` and retried.
 */
import { dbFor } from "../../db/shards";
import { fromRow, type Database } from "../../db/client";
import { domains, type Domain, type DomainDnsRecord } from "../../db/schema";
import type { Env } from "../../env";
import { dnsConfig, resolveDns, type DnsConfig, type DnsResult } from "../../outside/dns";
import { newId } from "../../lib/ids";
import type { AfterCommit } from "../../lib/after-commit";
import { WriteBatch } from "../../store/batch";
import { recordWebhookEvent } from "../../store/webhooks/events";
import { claimDueDomainChecks, saveDomainCheck } from "../../store/domains";
import { domainRecordConfig, judgeRecord, lookupKey, lookupType, type Judgement } from "./records";
import { toDomainView } from "./view";
import { checkTrackingHostname, forgetDomainTracking } from "../tracking/control";

export const VERIFICATION_WINDOW_MS = 72 * 60 * 60 * 1000;
export const VERIFIED_RECHECK_MS = 6 * 60 * 60 * 1000;
/** Minutes to wait after the n-th unsuccessful check (the last value repeats). */
export const BACKOFF_MINUTES = [1, 2, 5, 10, 30, 60];
/**
 * Domains checked per cron invocation. Each check is 5 DNS lookups (5
 * subrequests), so 8 domains stay well under the free plan's 50 subrequests
 * per invocation, with room for other scheduled jobs.
 */
export const MAX_DOMAIN_CHECKS_PER_RUN = 8;
/** A claimed domain is not picked again by an overlapping cron run for this long. */
const CLAIM_LEASE_MS = 5 * 60 * 1000;

export function backoffMs(attempts: number): number {
  const minutes = BACKOFF_MINUTES[Math.min(Math.max(attempts, 1), BACKOFF_MINUTES.length) - 1];
  return minutes * 60 * 1000;
}

/** Looks every distinct (name, type) of the domain's records up once, in parallel. */
export async function lookupRecords(config: DnsConfig, records: DomainDnsRecord[]): Promise<Map<string, DnsResult>> {
  const wanted = new Map<string, DomainDnsRecord>();
  for (const record of records) wanted.set(lookupKey(record), record);
  const entries = await Promise.all([...wanted].map(async ([key, record]) => [key, await resolveDns(config, record.name, lookupType(record))] as const));
  return new Map(entries);
}

/**
 * The pure state transition of one check: the domain as it was, what DNS said
 * about each record, and the time. Returns the columns to write.
 */
export function applyCheck(domain: Domain, judgements: Judgement[], now: Date) {
  const nowIso = now.toISOString();
  const records: DomainDnsRecord[] = domain.records.map((record, i) => {
    const { verdict, detail } = judgements[i];
    if (verdict === "found") {
      const { failingSince: _, ...rest } = record;
      return { ...rest, status: "VERIFIED", detail };
    }
    if (verdict === "unknown") return { ...record, detail };
    if (record.status === "VERIFIED" || record.failingSince) {
      return { ...record, status: "FAILED", detail, failingSince: record.failingSince ?? nowIso };
    }
    return { ...record, status: domain.status === "FAILED" ? "FAILED" : "PENDING", detail };
  });

  const required = records.filter((r) => r.required);
  const allFound = domain.records.every((r, i) => !r.required || judgements[i].verdict === "found");
  const anyUnknown = domain.records.some((r, i) => r.required && judgements[i].verdict === "unknown");
  const base = { lastCheckedAt: now, updatedAt: now };

  if (allFound) {
    return {
      ...base,
      records,
      status: "VERIFIED" as const,
      verifiedAt: domain.status === "VERIFIED" && domain.verifiedAt ? domain.verifiedAt : now,
      checkAttempts: 0,
      nextCheckAt: new Date(now.getTime() + VERIFIED_RECHECK_MS),
    };
  }

  const attempts = domain.checkAttempts + 1;
  const giveUp = (records: DomainDnsRecord[]) => ({
    ...base,
    status: "FAILED" as const,
    records: records.map((r): DomainDnsRecord => (r.status === "VERIFIED" ? r : { ...r, status: "FAILED" })),
    checkAttempts: attempts,
    nextCheckAt: null,
  });

  if (domain.status === "FAILED") return { ...base, records, status: "FAILED" as const, checkAttempts: attempts, nextCheckAt: null };

  if (domain.status === "PENDING") {
    const deadline = domain.createdAt.getTime() + VERIFICATION_WINDOW_MS;
    if (now.getTime() >= deadline && !anyUnknown) return giveUp(records);
    const next = Math.min(now.getTime() + backoffMs(attempts), Math.max(deadline, now.getTime() + 60_000));
    return { ...base, records, status: "PENDING" as const, checkAttempts: attempts, nextCheckAt: new Date(next) };
  }

  // VERIFIED, but a required record is missing (or DNS did not answer).
  const since = required.map((r) => (r.failingSince ? Date.parse(r.failingSince) : Number.NaN)).filter((t) => Number.isFinite(t));
  const firstFailure = since.length ? Math.min(...since) : now.getTime();
  if (since.length && now.getTime() >= firstFailure + VERIFICATION_WINDOW_MS && !anyUnknown) return giveUp(records);
  return {
    ...base,
    records,
    status: "VERIFIED" as const,
    checkAttempts: attempts,
    nextCheckAt: new Date(now.getTime() + backoffMs(attempts)),
  };
}

/**
 * Checks one domain against DNS now and saves the outcome; its webhook event leaves through `afterCommit` (without one, the cron's outbox
 * drain queues it). `db` is the control database (domains); the event is recorded on the project's data shard: in the same batch when
 * that is the control database (shard 0), else right after the save.
 */
export async function checkDomain(db: Database, env: Env, domain: Domain, now = new Date(), afterCommit?: AfterCommit): Promise<Domain> {
  const [results, tracking] = await Promise.all([
    lookupRecords(dnsConfig(env), domain.records),
    domain.trackingHostname ? checkTrackingHostname(env, domain, now) : undefined,
  ]);
  const config = domainRecordConfig(env);
  const judgements = domain.records.map((record) => judgeRecord(record, results.get(lookupKey(record))!, config));
  // The custom tracking hostname's CNAME is checked with the records (services/tracking/control.ts).
  const update = { ...applyCheck(domain, judgements, now), ...tracking };
  // domain.verified / domain.failed when this check changes the status, in the same batch as the change.
  const type = update.status !== domain.status && update.status !== "PENDING" ? (update.status === "VERIFIED" ? "domain.verified" : "domain.failed") : null;
  const data = type ? await dbFor(env, domain.projectId) : db.$client;
  const event = type
    ? recordWebhookEvent(data, { id: newId(), projectId: domain.projectId, type, data: toDomainView({ ...domain, ...update }), at: now })
    : null;
  const apart = data !== db.$client;
  const batch = new WriteBatch(db.$client);
  const saved = batch.add(saveDomainCheck(db.$client, domain.id, update));
  batch.add(apart ? null : event);
  const [row] = (await batch.run({ afterCommit })).rows(saved);
  if (tracking) forgetDomainTracking(domain.name);
  if (apart && event) {
    const recorded = new WriteBatch(data);
    recorded.add(event);
    await recorded.run({ afterCommit });
  }
  return row ? fromRow(domains, row) : { ...domain, ...update };
}

/**
 * The cron job: claims up to `limit` domains whose check is due (PENDING, and
 * VERIFIED ones for their periodic re-check) with one conditional UPDATE, so
 * overlapping runs never check a domain twice, then checks them.
 */
export async function runDomainChecks(
  db: Database,
  env: Env,
  now = new Date(),
  afterCommit?: AfterCommit,
  limit = MAX_DOMAIN_CHECKS_PER_RUN,
): Promise<{ checked: number; verified: number; failed: number; pending: number }> {
  const claimed = await claimDueDomainChecks(db.$client, now, new Date(now.getTime() + CLAIM_LEASE_MS), limit);
  const results = await Promise.allSettled(claimed.map((domain) => checkDomain(db, env, domain, now, afterCommit)));
  const summary = { checked: claimed.length, verified: 0, failed: 0, pending: 0 };
  for (const result of results) {
    if (result.status === "rejected") {
      console.error("domain check failed", result.reason);
      continue;
    }
    if (result.value.status === "VERIFIED") summary.verified++;
    else if (result.value.status === "FAILED") summary.failed++;
    else summary.pending++;
  }
  return summary;
}
