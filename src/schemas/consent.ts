/**
 * The consent vocabulary the API shows (src/services/consent/gates.ts decides with it): the two
 * streams of mail and the gates that can refuse a recipient, in their order.
 */

/** Every email is one or the other (`emails.marketing`: 1 = BROADCAST). */
export const STREAMS = ["TRANSACTIONAL", "BROADCAST"] as const;
export type Stream = (typeof STREAMS)[number];

/**
 * The gates that can refuse, in their order. (The stream gate refuses nothing: it lets
 * transactional mail through the two that follow.) "TOPIC" is gate 4.
 */
export const GATES = ["SUPPRESSED", "UNSUBSCRIBED", "TOPIC"] as const;
export type Gate = (typeof GATES)[number];
