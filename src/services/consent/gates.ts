import { and, eq, sql, type SQL } from "drizzle-orm";
import { contacts, SUPPRESSION_REASONS, SUPPRESSION_STREAMS } from "../../db/schema";
import { GATES, type Gate, STREAMS, type Stream } from "../../schemas/consent";

export { SUPPRESSION_REASONS, SUPPRESSION_STREAMS };

/** A constant as an SQL string literal (for the claim's fixed SQL). */
export const literal = (text: string) => `'${text.replace(/'/g, "''")}'`;

/**
 * Consent and deliverability: the four gates every mail path passes, in one place and in this
 * order (issue 36; CONTRACT "Suppressions and streams"):
 *
 *   1. SUPPRESSED    the address is on the project's suppression list for the mail's stream
 *                    (BOUNCE, COMPLAINT, MANUAL: every stream; UNSUBSCRIBE: broadcast only);
 *   2. the stream    TRANSACTIONAL mail passes from here on (a password reset still reaches
 *                    someone who unsubscribed from the newsletter);
 *   3. UNSUBSCRIBED  the contact's marketing subscription (`contacts.subscribed`);
 *   4. TOPIC         the topic's opt-in / opt-out default and the contact's choice
 *                    (EXTENSION POINT: see topicRefuses / topicAudienceSql / CLAIM_TOPIC_WHEN below).
 *
 * The gates are written twice from this one module, and nowhere else:
 * - in memory, `refusalOf` (POST /v1/send, a workflow's SEND_EMAIL, a campaign's test send), on
 *   what the caller read (its suppressions, its contact, its topic choice);
 * - as SQL: `audienceGates` for a campaign's audience page (one fragment of the page's one
 *   query, so a page of 500 stays one round trip), and `CLAIM_GATES_SQL` for the send
 *   consumer's claim (bulk mail whose contact left the audience after its page was written).
 * Each refusal names its gate: the answer of /v1/send (`suppressed[].gate`), the email record
 * (`error` starts with the gate's name, `gate` on GET /emails/{id}), a workflow step's outcome,
 * the 400 of a test send.
 */

/** Which mail a suppression stops: ALL (bounce, complaint, manual) or only BROADCAST (an unsubscribe). */
export type SuppressionStream = (typeof SUPPRESSION_STREAMS)[number];

export type SuppressionReason = (typeof SUPPRESSION_REASONS)[number];

/** The stream each reason suppresses: an unsubscribe stops broadcast mail only. */
export const streamOfReason = (reason: SuppressionReason): SuppressionStream => (reason === "UNSUBSCRIBE" ? "BROADCAST" : "ALL");

// The streams and the gates that can refuse, in their order (the API shows them: src/schemas/consent.ts).
export { GATES, type Gate, STREAMS, type Stream };

/** The stream of an email record. */
export const streamOf = (email: { marketing: boolean }): Stream => (email.marketing ? "BROADCAST" : "TRANSACTIONAL");

/** Whether a suppression of `suppression` stream stops mail of `mail` stream. */
export const covers = (suppression: SuppressionStream, mail: Stream) => suppression === "ALL" || mail === "BROADCAST";

/**
 * The reason stored on an email a gate refused (emails.error): each starts with the gate's name,
 * so the record names it (gateOfError reads it back); gate 1's says which entry of the list.
 */
export const SUPPRESSED_REASONS: Record<SuppressionReason, string> = {
  BOUNCE: "SUPPRESSED: not sent, the address bounced permanently (suppression list: BOUNCE)",
  COMPLAINT: "SUPPRESSED: not sent, the recipient complained (suppression list: COMPLAINT)",
  UNSUBSCRIBE: "SUPPRESSED: not sent, the contact unsubscribed from broadcast mail (suppression list: UNSUBSCRIBE)",
  MANUAL: "SUPPRESSED: not sent, the address is on the suppression list (MANUAL)",
};
export const GATE_REASONS: Record<Exclude<Gate, "SUPPRESSED">, string> = {
  UNSUBSCRIBED: "UNSUBSCRIBED: not sent, the contact is not subscribed to marketing mail (unsubscribed or deleted)",
  TOPIC: "TOPIC: not sent, the contact is not subscribed to the email's topic",
};

/** The reason a refusal is stored with. */
export const reasonOf = (refusal: Refusal): string =>
  refusal.gate === "SUPPRESSED" ? SUPPRESSED_REASONS[refusal.reason ?? "MANUAL"] : GATE_REASONS[refusal.gate];

/** Every reason a gate stores, by gate (the claim's email.suppressed events match an email's error by its gate's prefix). */
export const ALL_GATE_REASONS: readonly { gate: Gate; reason: string }[] = [
  ...SUPPRESSION_REASONS.map((r) => ({ gate: "SUPPRESSED" as const, reason: SUPPRESSED_REASONS[r] })),
  { gate: "UNSUBSCRIBED", reason: GATE_REASONS.UNSUBSCRIBED },
  { gate: "TOPIC", reason: GATE_REASONS.TOPIC },
];

/** The gate an email's error names, or null (not refused by a gate). */
export function gateOfError(error: string | null | undefined): Gate | null {
  if (!error) return null;
  for (const gate of GATES) if (error.startsWith(`${gate}:`)) return gate;
  return null;
}

// ---- gate 4, the topic: EXTENSION POINT for the topics module -----------------------------------

/**
 * What the caller read of the mail's topic for one recipient (in memory). EXTENSION POINT: the
 * topics module adds the fields it needs (the topic's default subscription, the contact's choice)
 * and fills in `topicRefuses`; callers pass `topic` when the mail names one.
 */
export interface TopicContext {
  topicId: string;
  /** The topic's default: OPT_IN topics reach everyone who did not opt out; OPT_OUT only those who opted in. */
  defaultSubscription?: "OPT_IN" | "OPT_OUT";
  /** The contact's explicit choice (contact_topics.status), null when it made none. */
  choice?: "OPT_IN" | "OPT_OUT" | "PENDING" | null;
}

/** Gate 4 in memory: whether the topic refuses this recipient. EXTENSION POINT (topics module). */
export function topicRefuses(topic: TopicContext | null | undefined): boolean {
  if (!topic) return false;
  // The contact's choice wins (PENDING: a double opt-in not confirmed yet, so no); without one, the topic's default.
  // A topic that is gone (no default read) lets nobody through.
  const subscription = topic.choice ?? topic.defaultSubscription;
  return subscription !== "OPT_IN";
}

/**
 * The topic lets the contact through (as SQL, the contact's id and the topic's id given):
 * its choice is OPT_IN, or it made none and the topic's default is OPT_IN. One probe of
 * contact_topics' primary key and one of topics'; a deleted topic lets nobody through.
 */
const topicLetsThrough = (contactId: string, topicId: string) => `EXISTS (SELECT 1 FROM topics AS tg WHERE tg.id = ${topicId} AND
    coalesce((SELECT ctg.status FROM contact_topics AS ctg WHERE ctg.contact_id = ${contactId} AND ctg.topic_id = tg.id), tg.default_subscription) = 'OPT_IN')`;

/**
 * Gate 4 for a campaign's audience page (contacts as `contacts`): a condition that keeps only
 * the contacts the topic lets through, or undefined (no topic: nothing to add).
 * EXTENSION POINT (topics module): it must stay one fragment of the page's query (an index
 * probe on contact_topics per contact), so the page stays one round trip.
 */
export function topicAudienceSql(topicId: string | null | undefined): SQL | undefined {
  if (!topicId) return undefined;
  return sql`EXISTS (SELECT 1 FROM topics AS tg WHERE tg.id = ${topicId} AND
    coalesce((SELECT ctg.status FROM contact_topics AS ctg WHERE ctg.contact_id = ${contacts.id} AND ctg.topic_id = tg.id), tg.default_subscription) = 'OPT_IN')`;
}

/**
 * Gate 4 at the claim (the email as `e`): a `WHEN <the topic refuses e> THEN ${literal(GATE_REASONS.TOPIC)}`
 * clause of CLAIM_GATES_SQL, or '' (no topic check yet). EXTENSION POINT (topics module; emails.topic_id).
 */
export const CLAIM_TOPIC_WHEN = `WHEN e.topic_id IS NOT NULL AND NOT ${topicLetsThrough("e.contact_id", "e.topic_id")} THEN ${literal(GATE_REASONS.TOPIC)}`;

// ---- in memory -----------------------------------------------------------------------------

/** What one recipient of one mail meets at the gates (what the caller read). */
export interface GateInput {
  stream: Stream;
  /** The address's suppression in this project, if any. */
  suppression?: { reason: SuppressionReason; stream: SuppressionStream } | null;
  /**
   * The contact's marketing subscription: true / false, or null when the address is no contact
   * (then `subscribesNew` says whether the send creates it subscribed).
   */
  subscribed?: boolean | null;
  /** A new contact the send creates: whether it is created subscribed (/v1/send `subscribed: true`). */
  subscribesNew?: boolean;
  /** Gate 4: the mail's topic as read for this recipient (EXTENSION POINT). */
  topic?: TopicContext | null;
}

/** A gate's refusal: which gate, and (gate 1) the suppression's reason. */
export interface Refusal {
  gate: Gate;
  reason?: SuppressionReason;
}

/** The gates in their order, for one recipient: the first refusal, or null (the mail may go). */
export function refusalOf(input: GateInput): Refusal | null {
  // 1. Suppressed for this project, on a suppression that covers this stream.
  if (input.suppression && covers(input.suppression.stream, input.stream)) return { gate: "SUPPRESSED", reason: input.suppression.reason };
  // 2. The stream: transactional mail passes.
  if (input.stream === "TRANSACTIONAL") return null;
  // 3. The contact's marketing subscription (a new contact: whether the send subscribes it).
  const subscribed = input.subscribed ?? input.subscribesNew ?? false;
  if (!subscribed) return { gate: "UNSUBSCRIBED" };
  // 4. The topic (EXTENSION POINT).
  if (topicRefuses(input.topic)) return { gate: "TOPIC" };
  return null;
}

/** A refusal in words, for a workflow step's outcome or a test send's 400 (its reason without "not sent"). */
export const describeRefusal = (refusal: Refusal): string => reasonOf(refusal).replace(": not sent, ", ": ");

// ---- as SQL ----------------------------------------------------------------------------------

/**
 * A campaign's audience (broadcast mail), gates 1, 3 and 4 as one condition on `contacts`:
 * not suppressed (every suppression covers broadcast mail), subscribed, and let through by the
 * topic. One fragment of the audience page's query: each gate is an index probe per contact.
 */
export function audienceGates(projectId: string, mail: { topicId?: string | null } = {}): SQL {
  return and(
    eq(contacts.projectId, projectId),
    // 1. Suppressed (for broadcast mail every suppression counts: ALL and BROADCAST).
    sql`NOT EXISTS (SELECT 1 FROM suppressions AS aud_sup WHERE aud_sup.project_id = ${contacts.projectId} AND aud_sup.email = ${contacts.email})`,
    // 2. The stream: broadcast, so on to 3 and 4.
    // 3. The marketing subscription.
    eq(contacts.subscribed, true),
    // 4. The topic (EXTENSION POINT).
    topicAudienceSql(mail.topicId),
  )!;
}

/**
 * The gates at the send consumer's claim, for an email `e` (its project `e.project_id`, its
 * address `e.to_address`, its stream `e.marketing`): the reason of the first gate that refuses it
 * now (SUPPRESSED_REASONS by the entry's reason, GATE_REASONS), or NULL. The claim applies it to
 * bulk mail (campaigns, MARKETING workflow steps), whose contact may have left the audience after
 * its page was written.
 */
export const CLAIM_GATES_SQL = `coalesce(
    (SELECT CASE s.reason ${SUPPRESSION_REASONS.map((r) => `WHEN '${r}' THEN ${literal(SUPPRESSED_REASONS[r])}`).join(" ")}
       ELSE ${literal(SUPPRESSED_REASONS.MANUAL)} END
     FROM suppressions AS s WHERE s.project_id = e.project_id AND s.email = e.to_address AND (s.stream = 'ALL' OR e.marketing = 1)),
    CASE
      WHEN e.marketing = 0 THEN NULL
      WHEN NOT EXISTS (SELECT 1 FROM contacts AS c WHERE c.id = e.contact_id AND c.subscribed = 1) THEN ${literal(GATE_REASONS.UNSUBSCRIBED)}
      ${CLAIM_TOPIC_WHEN}
    END)`;
