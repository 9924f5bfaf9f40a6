import { type ClaimedEmail, type EmailBody, readEmailBodies } from "../../store/emails";

/**
 * The send consumer's body reader: the claim returns the bodies of small
 * mail; the others are read a group at a time as the send lanes reach them,
 * so an invocation never holds the whole batch's bodies.
 */

/**
 * Characters of HTML and headers one statement reads, at most (an email larger
 * than that is read alone; the claim itself returns the bodies of small mail). Bodies
 * are read a group at a time as the lanes reach it (and the next group ahead
 * of them), so an invocation holds the bodies of the groups its lanes are in
 * plus one, never the whole batch's (up to 100 emails of up to 1 MB of HTML
 * each). The claim tells each body's size.
 */
export const BODY_CHARS_PER_READ = 1_048_576;

/** The emails in groups, in order: at most `maxEmails` and `maxChars` of bodies each (one larger email alone). */
function bodyGroups(emails: readonly ClaimedEmail[], maxEmails: number, maxChars: number): ClaimedEmail[][] {
  const groups: ClaimedEmail[][] = [];
  let chars = 0;
  for (const email of emails) {
    const last = groups.at(-1);
    if (last && last.length < maxEmails && chars + email.bodyChars <= maxChars) {
      last.push(email);
      chars += email.bodyChars;
    } else {
      groups.push([email]);
      chars = email.bodyChars;
    }
  }
  return groups;
}

/** Hands out each email's body once: the first lane to reach a group reads it in one statement and starts reading the next group. */
export function bodyReader(d1: D1Database, emails: readonly ClaimedEmail[], maxEmails: number, maxChars = BODY_CHARS_PER_READ) {
  // Small bodies came with the claim; only the others are read.
  const members = bodyGroups(
    emails.filter((email) => !email.body),
    maxEmails,
    maxChars,
  );
  const groupOf = new Map(members.flatMap((group, g) => group.map((email) => [email.id, g] as const)));
  const groups = new Map<number, Promise<Map<string, EmailBody>>>();
  const group = (g: number) => {
    let read = groups.get(g);
    if (!read) {
      read = readEmailBodies(
        d1,
        members[g].map((email) => email.id),
      );
      // Read ahead of the lanes: nobody may await it yet, so a failure is handled where it is awaited.
      read.catch(() => {});
      groups.set(g, read);
    }
    return read;
  };
  return async (email: ClaimedEmail): Promise<EmailBody | undefined> => {
    if (email.body) {
      const body = email.body;
      email.body = undefined; // held only until composed
      return body;
    }
    const g = groupOf.get(email.id) ?? 0;
    if (g + 1 < members.length) void group(g + 1);
    const bodies = await group(g);
    const body = bodies.get(email.id);
    bodies.delete(email.id);
    return body;
  };
}

export type BodyOf = (email: ClaimedEmail) => Promise<EmailBody | undefined>;
