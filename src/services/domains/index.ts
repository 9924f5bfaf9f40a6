/**
 * Sending domains: create (with a DKIM key pair), list, get, check now,
 * delete, and the sender check every send path makes (`senderDomain`).
 */
import { getDb } from "../../db/client";
import { controlDbOf } from "../../db/shards";
import { and, eq, isNull, lt, ne, sql, type SQL } from "drizzle-orm";
import type { Clock } from "../../lib/caches";
import { TtlCache } from "../../lib/ttl-cache";
import { runStatements, type Database } from "../../db/client";
import { domainReleases, domains, type Domain } from "../../db/schema";
import type { Env } from "../../env";
import type { AfterCommit } from "../../lib/after-commit";
import { readConfig, requireEncryptionKey } from "../../lib/config";
import { ApiError } from "../../lib/errors";
import { newId } from "../../lib/ids";
import type { DomainListQuery } from "../../schemas/domains";
import { listNewestFirst } from "../../lib/pagination";
import { dkimSelectorFor, encryptPrivateKey, generateDkimKeyPair } from "./dkim";
import { domainOfAddress, normaliseDomainName } from "./names";
import { domainRecordConfig, expectedRecords } from "./records";
import { quotaExceeded } from "../../store/guards";
import {
  deleteDomain as deleteDomainRow,
  deleteUnverifiedDomain,
  domainFromRow,
  insertDomainWithinCap,
  pruneDomainReleases,
  recentDomainRelease,
  recordDomainRelease,
} from "../../store/domains";
import { deleteDomainFromSes, registerDomainWithSes, SesRegistrationError } from "./ses";
import { usesSes } from "../../outside/providers";
import { findDomainUsage } from "./usage";
import { checkDomain, VERIFICATION_WINDOW_MS } from "./dns-check";

export { runDomainChecks } from "./dns-check";

export { toDomainView } from "./view";

/** The validated, normalised name, or a 422 naming the problem. */
export function parseDomainName(input: string): string {
  const result = normaliseDomainName(input);
  if (!result.ok) throw ApiError.validation([{ field: "domain", message: result.reason, code: "invalid_domain" }]);
  return result.name;
}

function conflict(name: string, sameProject: boolean) {
  return new ApiError(
    "CONFLICT",
    sameProject ? `The domain ${name} has already been added to this project` : `The domain ${name} is already in use by another project`,
    {
      suggestion: sameProject
        ? "Use GET /domains to find it; POST /domains/{id}/verify checks it again."
        : "A domain can belong to one project only. Remove it from the other project first.",
    },
  );
}

/**
 * Adds a domain: a fresh DKIM key pair (private key encrypted at rest), the
 * records to publish, registration with SES when SES is the provider, and a
 * first DNS check, whose outcome the returned record already shows.
 */
export async function createDomain(db: Database, env: Env, projectId: string, input: string, afterCommit?: AfterCommit, now = new Date()) {
  const name = parseDomainName(input);
  const secret = requireEncryptionKey(env);
  const d1 = db.$client;
  const cooldownStart = new Date(now.getTime() - DOMAIN_RECLAIM_COOLDOWN_MS);
  const [existing, release] = await Promise.all([
    db.query.domains.findFirst({ where: eq(domains.name, name), columns: { projectId: true } }),
    recentDomainRelease(d1, projectId, name, cooldownStart).first<{ claimed_at: number; released_at: number }>(),
  ]);
  if (existing) throw conflict(name, existing.projectId === projectId);
  // The hold is used up once UNVERIFIED_RELEASE_MS have passed since the first claim (the cron released it then).
  if (release && Math.max(now.getTime(), release.released_at) - release.claimed_at >= UNVERIFIED_RELEASE_MS) {
    const again = new Date(release.released_at + DOMAIN_RECLAIM_COOLDOWN_MS).toISOString();
    throw new ApiError("CONFLICT", `This project held ${name} for 7 days without verifying it; it cannot add it again before ${again}`, {
      suggestion: "Meanwhile whoever controls the domain's DNS can add and verify it. A domain must be verified within 7 days of first being added.",
    });
  }
  const cap = readConfig(env).QUOTA_DOMAINS;

  const keys = await generateDkimKeyPair();
  const selector = dkimSelectorFor(now);
  // The cap and the name's uniqueness are conditions of the INSERT itself: exact under concurrency.
  const [row] = await insertDomainWithinCap(
    d1,
    {
      id: newId(),
      projectId,
      name,
      dkimSelector: selector,
      dkimPublicKey: keys.publicKey,
      dkimPrivateKeyEncrypted: await encryptPrivateKey(secret, name, keys.privateKeyPkcs8),
      records: expectedRecords(domainRecordConfig(env), name, selector, keys.publicKey),
      nextCheckAt: new Date(now.getTime() + 60_000),
      now,
    },
    cap,
  )
    .all<Record<string, unknown>>()
    .then((r) => r.results);
  if (!row) {
    // Either a concurrent add took the name, or the project is at its cap.
    const taken = await db.query.domains.findFirst({ where: eq(domains.name, name), columns: { projectId: true } });
    if (taken) throw conflict(name, taken.projectId === projectId);
    throw quotaExceeded("QUOTA_DOMAINS", cap);
  }
  const inserted = domainFromRow(row);

  if (usesSes(env)) {
    try {
      await registerDomainWithSes(env, name, selector, keys.privateKeyPkcs8);
    } catch (err) {
      await deleteUnverifiedDomain(d1, inserted.id);
      if (err instanceof SesRegistrationError && err.alreadyExists) {
        throw new ApiError("CONFLICT", `The domain ${name} already exists in this service's Amazon SES account; it was left unchanged`, {
          suggestion:
            "The email provider account is shared by every project: a domain set up there outside this service cannot be added. An operator must remove that identity from SES first.",
        });
      }
      const message = err instanceof SesRegistrationError ? err.message : "SES could not be reached";
      throw new ApiError("INTERNAL_ERROR", `The domain could not be registered with Amazon SES: ${message}`, {
        suggestion: "Nothing was saved; retry later. If it persists, an operator should check the SES credentials.",
      });
    }
  }
  return checkDomain(db, env, inserted, now, afterCommit);
}

export async function getDomain(db: Database, projectId: string, id: string): Promise<Domain> {
  const domain = await db.query.domains.findFirst({ where: and(eq(domains.id, id), eq(domains.projectId, projectId)) });
  if (!domain) throw ApiError.notFound("Domain");
  return domain;
}

/** "Check now": looks the records up immediately, whatever the schedule. */
export async function verifyDomainNow(db: Database, env: Env, projectId: string, id: string, afterCommit?: AfterCommit, now = new Date()) {
  return checkDomain(db, env, await getDomain(db, projectId, id), now, afterCommit);
}

/** Newest first, keyset-paginated on id. */
export async function listDomains(db: Database, projectId: string, query: DomainListQuery) {
  const filters: SQL[] = [eq(domains.projectId, projectId)];
  if (query.status) filters.push(eq(domains.status, query.status));
  return listNewestFirst(db, domains, and(...filters), query);
}

/**
 * Deletes the domain unless something still sends from it (400 INVALID_STATE),
 * and with it its identity in the SES account (when SES is the provider), so
 * the name is free again for whoever owns it. If SES cannot remove the
 * identity, nothing is deleted (503; retry).
 */
export async function deleteDomain(db: Database, env: Env, projectId: string, id: string, verifiedDomains: VerifiedDomains): Promise<void> {
  const domain = await getDomain(db, projectId, id);
  const usedBy = await findDomainUsage(db, projectId, domain.name);
  if (usedBy) {
    throw ApiError.invalidState(
      `The domain ${domain.name} cannot be deleted: ${usedBy} sends from it`,
      "Change the from address of everything that uses this domain, then delete it.",
    );
  }
  if (usesSes(env)) {
    try {
      await deleteDomainFromSes(env, domain.name);
    } catch (err) {
      const message = err instanceof SesRegistrationError ? err.message : "SES could not be reached";
      throw new ApiError("SERVICE_UNAVAILABLE", `The domain could not be removed from Amazon SES: ${message}`, {
        suggestion: "Nothing was deleted; retry later.",
      });
    }
  }
  await runStatements(db, [...releaseStatements(db, domain, new Date()), deleteDomainRow(db.$client, projectId, id)]);
  verifiedDomains.forget(projectId, domain.name);
}

/** Domains released per cron tick (each costs one SES call). */
const RELEASE_BATCH = 10;
/**
 * A never-verified domain is released this long after it was added: it is
 * FAILED after its 72-hour verification window, and "check now" can still
 * rescue it for the rest of the week.
 */
export const UNVERIFIED_RELEASE_MS = 7 * 24 * 60 * 60 * 1000;

/**
 * A project that gave up a name it never verified cannot add it again for
 * this long once it has held it UNVERIFIED_RELEASE_MS in all (squatting).
 */
export const DOMAIN_RECLAIM_COOLDOWN_MS = 30 * 24 * 60 * 60 * 1000;

/** With the delete of a never-verified domain: the record of its release (the cooldown). */
function releaseStatements(db: Database, domain: Pick<Domain, "name" | "projectId" | "createdAt" | "verifiedAt">, now: Date) {
  if (domain.verifiedAt) return [];
  const cooldownStart = new Date(now.getTime() - DOMAIN_RECLAIM_COOLDOWN_MS);
  return [recordDomainRelease(db.$client, { name: domain.name, projectId: domain.projectId, claimedAt: domain.createdAt, releasedAt: now }, cooldownStart)];
}

/**
 * Scheduled: a domain never verified is released UNVERIFIED_RELEASE_MS after
 * the project first claimed it (its first add, or an earlier add it deleted
 * within the cooldown): its SES identity and its record are deleted, so no
 * project can hold a name it cannot prove it owns, and the project cannot add
 * it again for DOMAIN_RECLAIM_COOLDOWN_MS. A domain that was verified once and
 * then lost its records stays (it is its owner's). Bounded: RELEASE_BATCH
 * domains per tick, oldest first.
 */
export async function releaseUnverifiedDomains(db: Database, env: Env, now = new Date()) {
  const cooldownStart = new Date(now.getTime() - DOMAIN_RECLAIM_COOLDOWN_MS);
  const claimedAt = sql<number>`coalesce((SELECT ${domainReleases.claimedAt} FROM ${domainReleases} WHERE ${domainReleases.name} = ${domains.name}
    AND ${domainReleases.projectId} = ${domains.projectId} AND ${domainReleases.releasedAt} > ${cooldownStart.getTime()}), ${domains.createdAt})`;
  const expired = await db
    .select({ id: domains.id, name: domains.name, projectId: domains.projectId, createdAt: domains.createdAt, verifiedAt: domains.verifiedAt })
    .from(domains)
    .where(
      and(ne(domains.status, "VERIFIED"), isNull(domains.verifiedAt), lt(claimedAt, now.getTime() - Math.max(UNVERIFIED_RELEASE_MS, VERIFICATION_WINDOW_MS))),
    )
    .orderBy(domains.createdAt)
    .limit(RELEASE_BATCH);
  let released = 0;
  for (const domain of expired) {
    try {
      if (usesSes(env)) await deleteDomainFromSes(env, domain.name);
      await runStatements(db, [...releaseStatements(db, domain, now), deleteUnverifiedDomain(db.$client, domain.id)]);
      released++;
    } catch (err) {
      // Tried again on the next tick.
      console.error("releasing an unverified domain failed", domain.name, err);
    }
  }
  await pruneDomainReleases(db.$client, cooldownStart).run();
  return { released, failed: expired.length - released };
}

/**
 * The project's domain named like the address's domain (not yet checked for status), as a query not yet run
 * (for a caller's read batch). `db` may be the project's data shard: domains are read from its control database.
 */
export function findSendingDomain(db: Database, projectId: string, fromAddress: string) {
  const name = domainOfAddress(fromAddress);
  return name
    ? getDb(controlDbOf(db.$client))
        .select()
        .from(domains)
        .where(and(eq(domains.projectId, projectId), eq(domains.name, name)))
        .limit(1)
    : null;
}

/**
 * The sender check of every send path: the from address's domain must be a
 * VERIFIED domain of this project (exactly that name; subdomains are domains
 * of their own), otherwise 403 DOMAIN_NOT_VERIFIED, saying why. Returns the
 * domain's name. `known.cache`, the app's cache, answers for a domain this
 * isolate saw VERIFIED seconds ago and learns from a check that passes;
 * `known.read` is the row a caller already read (findSendingDomain) in its
 * own batch, so nothing is read again.
 */
export async function senderDomain(
  db: Database,
  projectId: string,
  fromAddress: string,
  known: { cache?: VerifiedDomains; read?: { domain: Domain | undefined } } = {},
): Promise<string> {
  const cached = known.cache?.get(projectId, fromAddress);
  if (cached) return cached;
  let domain = known.read?.domain;
  if (!known.read) {
    const query = findSendingDomain(db, projectId, fromAddress);
    [domain] = query ? await query : [];
  }
  if (domain?.status !== "VERIFIED") {
    const shown = domainOfAddress(fromAddress) ?? fromAddress;
    throw new ApiError(
      "DOMAIN_NOT_VERIFIED",
      domain
        ? `The domain ${shown} is ${domain.status === "FAILED" ? "not verified (verification failed)" : "not verified yet"}`
        : `The domain ${shown} is not a verified sending domain of this project`,
      {
        suggestion: domain
          ? "Publish the DNS records from GET /domains/{id}, then POST /domains/{id}/verify."
          : "Add it with POST /domains, publish the DNS records it lists, and wait for status VERIFIED.",
      },
    );
  }
  known.cache?.remember(projectId, domain);
  return domain.name;
}

/**
 * How long an isolate trusts that a domain it saw VERIFIED still is: a domain
 * deleted, or failing its re-check, stops /v1/send within this time (only
 * VERIFIED answers are cached; docs/architecture.md "What a request costs").
 */
export const VERIFIED_DOMAIN_CACHE_TTL_MS = 5_000;

/** (project, domain name) -> the domain's name, for domains seen VERIFIED; bounded LRU with a short TTL. */
export function verifiedDomainCache(now: Clock) {
  const cache = new TtlCache<string, string>({ max: 1_000, ttlMs: VERIFIED_DOMAIN_CACHE_TTL_MS, now });
  const keyOf = (projectId: string, fromAddress: string) => {
    const name = domainOfAddress(fromAddress);
    return name ? `${projectId}\n${name}` : null;
  };
  return {
    /** The verified domain's name when this isolate saw it VERIFIED within the TTL. */
    get(projectId: string, fromAddress: string): string | undefined {
      const key = keyOf(projectId, fromAddress);
      return key ? cache.get(key) : undefined;
    },
    remember(projectId: string, domain: Domain) {
      if (domain.status === "VERIFIED") cache.set(`${projectId}\n${domain.name}`, domain.name);
    },
    forget(projectId: string, name: string) {
      cache.delete(`${projectId}\n${name}`);
    },
  };
}

/** The app's cache of verified sending domains (`caches.get(verifiedDomainCache)`): /v1/send reads it, a deletion forgets at once. */
export type VerifiedDomains = ReturnType<typeof verifiedDomainCache>;
