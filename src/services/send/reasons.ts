import { MAX_PROVIDER_CALL_MS } from "../../outside/providers/types";

/**
 * What the send consumer, the dead-letter consumer and the cron sweep agree
 * on about an email record's lifecycle (QUEUED -> SENDING -> SENT or FAILED):
 * its leases and the reasons stored on mail that is not sent.
 */

/**
 * A claim (SENDING) older than this belongs to an invocation that died (the sweep settles it). The
 * consumer never holds one longer: it makes no provider call later than CALL_DEADLINE_MS after its
 * claim (each call is bounded by MAX_PROVIDER_CALL_MS) and gives the rest back first.
 */
export const CLAIM_LEASE_MS = 60 * 1000;
/** QUEUED mail untouched for this long has lost its queue message (the sweep queues it again). */
export const QUEUED_LEASE_MS = 60 * 1000;
/** Margin inside the lease for writing a batch's outcomes after its last call. */
const OUTCOME_WRITE_MARGIN_MS = 10 * 1000;
/** The last moment after its claim a consumer may start a provider call: the call then ends inside the lease. */
export const CALL_DEADLINE_MS = CLAIM_LEASE_MS - MAX_PROVIDER_CALL_MS - OUTCOME_WRITE_MARGIN_MS;

/** The reason stored on mail of a disabled project. */
export const PROJECT_DISABLED_REASON = "Not sent: the project is disabled";
/** Mail of a project the reputation breaker paused (src/services/reputation.ts) fails with this error. */
export const SENDING_PAUSED_REASON = "Not sent: sending is paused for the project (bounce or complaint rate too high) until it is resumed";
/**
 * Every unknown outcome's error starts with this (FAILED, no provider message id): the provider call may
 * have reached the provider, so it is never made again; the provider's own events reconcile it
 * (feedback/apply.ts). docs/reliability.md.
 */
export const OUTCOME_UNKNOWN_PREFIX = "Outcome unknown:";
/** The reason stored on an email whose consumer stopped after claiming it (see sweepStuckEmails). */
export const OUTCOME_UNKNOWN_REASON = `${OUTCOME_UNKNOWN_PREFIX} the sending attempt stopped after claiming this email; it may or may not have reached the provider, so it is not sent again`;
/** The reason stored on an email whose provider call got no answer (timeout, connection lost). */
export const outcomeUnknownReason = (detail: string) => `${OUTCOME_UNKNOWN_PREFIX} ${detail}; the provider may have accepted it, so it is not sent again`;
/**
 * A campaign email whose contact left the audience after its page was written is settled with the
 * reason of the consent gate that refuses it now (src/services/consent/gates.ts: SUPPRESSED_REASONS,
 * GATE_REASONS), each naming its gate.
 */
