import type { Database } from "../../db/client";
import type { Env } from "../../env";
import type { AfterCommit } from "../../lib/after-commit";
import { clientWithinLimit } from "../../middleware/client-limit";
import type { Clock } from "../../lib/caches";
import { TtlCache } from "../../lib/ttl-cache";
import { ENGAGEMENT_DEDUP_WINDOW_MS, type Engagement, recordEngagement } from "../emails/status";

/**
 * Opens and clicks the app counted (`caches.get(countedEngagements)`), by kind
 * and email, for the de-dup window: a repeat inside it would be refused by
 * recordEngagement's own check, so it is answered without a D1 write. Bounded;
 * an entry lives one millisecond less than the window, so nothing the database
 * would count is skipped.
 */
export const countedEngagements = (now: Clock) => new TtlCache<string, true>({ max: 10_000, ttlMs: ENGAGEMENT_DEDUP_WINDOW_MS - 1, now });

/**
 * Records an open or click from a tracking link (signature already checked),
 * unless the app counted the same one inside the de-dup window, or the
 * client is over its per-IP tracking limit (then the link still works and
 * nothing is recorded), or its project is moving between shards. "skipped": nothing was
 * asked of this email's row (a repeat, the limit, a move); "not counted": the write matched
 * nothing (no such email here, tracking off, a repeat the database caught).
 */
export async function recordLinkEngagement(
  db: Database,
  env: Env,
  counted: ReturnType<typeof countedEngagements>,
  headers: Headers,
  emailId: string,
  kind: Engagement,
  details: { url?: string } = {},
  /** Where the webhook event leaves (the request's door). */
  afterCommit?: AfterCommit,
  /** True when the email's project must not be written now (it is moving between shards): not counted. */
  held?: () => Promise<boolean>,
): Promise<"counted" | "skipped" | "not counted"> {
  const key = `${kind}:${emailId}`;
  if (counted.get(key)) return "skipped";
  if (!(await clientWithinLimit(env, "tracking", headers))) return "skipped";
  if (held && (await held())) return "skipped";
  const recorded = await recordEngagement(db, emailId, kind, details, new Date(), env, afterCommit);
  if (recorded) counted.set(key, true);
  return recorded ? "counted" : "not counted";
}
