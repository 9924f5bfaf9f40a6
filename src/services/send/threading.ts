import { MAX_REFERENCES } from "../../schemas/send";

/**
 * The threading headers of a send answering an inbound message (/v1/send inReplyTo, RFC 5322 3.6.4):
 * `In-Reply-To` its Message-ID, `References` its references then its Message-ID. The ids come from
 * a message someone else wrote, so each is checked here: `<...>` of printable ASCII without spaces
 * or angle brackets inside, at most MAX_MESSAGE_ID_CHARS; anything else is left out, so CR, LF or a
 * second header never reaches the mail. At most MAX_REFERENCES ids and MAX_REFERENCES_CHARS
 * characters: the first id (the thread's root) is kept, then the newest that fit.
 */

/** Longest Message-ID carried (RFC 5322 sets none; real ones are well under 100 characters). */
export const MAX_MESSAGE_ID_CHARS = 250;
/** Longest References value written (folded at its spaces, so every line stays within 78 octets). */
export const MAX_REFERENCES_CHARS = 8000;

const MESSAGE_ID = /^<[!-;=?-~]+>$/;

/** A Message-ID as it may be written in a header, or null. */
export function messageIdOf(value: unknown): string | null {
  if (typeof value !== "string") return null;
  const id = value.trim();
  return id.length <= MAX_MESSAGE_ID_CHARS && MESSAGE_ID.test(id) ? id : null;
}

/** `In-Reply-To` and `References` for an answer to a message with this Message-ID and References; null without a usable Message-ID. */
export function threadingHeaders(messageId: unknown, references: unknown): { "In-Reply-To": string; References: string } | null {
  const id = messageIdOf(messageId);
  if (!id) return null;
  const seen = new Set<string>([id]);
  const earlier: string[] = [];
  for (const ref of Array.isArray(references) ? references : []) {
    const valid = messageIdOf(ref);
    if (valid && !seen.has(valid)) {
      seen.add(valid);
      earlier.push(valid);
    }
  }
  let chain = [...earlier, id];
  if (chain.length > MAX_REFERENCES) chain = [chain[0]!, ...chain.slice(chain.length - (MAX_REFERENCES - 1))];
  let chars = chain.reduce((sum, ref) => sum + ref.length + 1, -1);
  while (chars > MAX_REFERENCES_CHARS && chain.length > 2) chars -= chain.splice(1, 1)[0]!.length + 1;
  return { "In-Reply-To": id, References: chain.join(" ") };
}
