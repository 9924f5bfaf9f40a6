import type { InboundMatch, InboundMessage } from "../../db/inbound-schema";
import { getDb } from "../../db/client";
import type { Env } from "../../env";
import type { AfterCommit } from "../../lib/after-commit";
import { newId } from "../../lib/ids";
import { ACK, backoffSeconds, type QueuedMessage, retryAfter, type Verdict } from "../../lib/queue-consumer";
import type { InboundQueueMessage } from "../../messages";
import { WriteBatch } from "../../store/batch";
import { contactIdByAddress, emailsByProviderIds, inboundOf, insertReceivedEvent, markFailed, markParsed, recordReceivedWebhook } from "../../store/inbound";
import { getInboundRaw } from "../../store/objects/inbound";
import { HEAD_BYTES, PARSE_CAP_BYTES, type ParsedMessage, parseMessage, TOO_LARGE_TO_PARSE } from "./parse";

/**
 * The inbound queue's consumer: each message's row (RECEIVED), its raw message from R2, parsed
 * (./parse.ts) and linked, then one batch: the `email.received` event (a real reply from a known
 * contact only), the `email.received` webhook event and the row's PARSED update, each
 * conditional on the row still being RECEIVED, so a redelivered message writes nothing twice.
 *
 * Linking, in order: the reply token (the row already names the email, match TOKEN); else
 * In-Reply-To, then References (nearest first) against this project's emails'
 * provider_message_id (match HEADERS); never another project's. The contact: the linked
 * email's, else the project's contact with the From address; receiving mail never creates or
 * subscribes a contact.
 */

/** The ids a header id can be stored as: SES keeps its bare MessageId (the local part), Cloudflare the id without brackets. */
export function providerIdCandidates(id: string): string[] {
  const bare = id.replace(/^<|>$/g, "");
  const at = bare.lastIndexOf("@");
  return at > 0 ? [bare, bare.slice(0, at)] : [bare];
}

interface Link {
  emailId: string | null;
  contactId: string | null;
  match: InboundMatch;
}

async function linkOf(d1: D1Database, row: InboundMessage, parsed: ParsedMessage): Promise<Link> {
  let link: Link = { emailId: null, contactId: null, match: "NONE" };
  if (row.match === "TOKEN" && row.emailId) link = { emailId: row.emailId, contactId: row.contactId, match: "TOKEN" };
  else {
    // Nearest first: In-Reply-To, then References from the last (the parent) back.
    const ids = [...(parsed.inReplyTo ? [parsed.inReplyTo] : []), ...[...parsed.references].reverse()];
    const candidates = [...new Set(ids.flatMap(providerIdCandidates))];
    if (candidates.length > 0) {
      const { results } = await emailsByProviderIds(d1, row.projectId, candidates).all<{
        id: string;
        contact_id: string | null;
        provider_message_id: string;
      }>();
      const byProviderId = new Map(results.map((r) => [r.provider_message_id, r]));
      for (const candidate of ids.flatMap(providerIdCandidates)) {
        const hit = byProviderId.get(candidate);
        if (hit) {
          link = { emailId: hit.id, contactId: hit.contact_id, match: "HEADERS" };
          break;
        }
      }
    }
  }
  if (!link.contactId && parsed.fromAddress) {
    const contact = await contactIdByAddress(d1, row.projectId, parsed.fromAddress).first<{ id: string }>();
    if (contact) link = { ...link, contactId: contact.id };
  }
  return link;
}

/** The raw message as far as it is parsed: whole up to PARSE_CAP_BYTES, else its first HEAD_BYTES. */
async function rawOf(bucket: R2Bucket, row: InboundMessage): Promise<{ bytes: ArrayBuffer; partial: boolean } | null> {
  if (row.size <= PARSE_CAP_BYTES) {
    const object = await getInboundRaw(bucket, row.r2Key);
    return object ? { bytes: await object.arrayBuffer(), partial: false } : null;
  }
  const object = await bucket.get(row.r2Key, { range: { offset: 0, length: HEAD_BYTES } });
  return object ? { bytes: await object.arrayBuffer(), partial: true } : null;
}

/** The data of the event and the webhook (CONTRACT "Inbound email"), the webhook's with the attachments too. */
function eventData(row: InboundMessage, parsed: ParsedMessage, link: Link) {
  return {
    inboundId: row.id,
    emailId: link.emailId,
    contactId: link.contactId,
    from: parsed.fromAddress,
    fromName: parsed.fromName,
    to: row.envelopeTo,
    subject: parsed.subject,
    strippedText: parsed.strippedText,
    autoReply: parsed.autoReply,
    match: link.match,
  };
}

async function consumeOne(env: Env, body: InboundQueueMessage, afterCommit: AfterCommit, now: Date): Promise<void> {
  const d1 = env.DB;
  const [row] = await inboundOf(d1, body.projectId, body.inboundId);
  if (row?.status !== "RECEIVED") return;
  const raw = await rawOf(env.STORAGE, row);
  if (!raw) {
    await markFailed(d1, row.id, "The raw message is gone from storage", now).run();
    return;
  }
  let parsed: ParsedMessage;
  try {
    parsed = await parseMessage(raw.bytes, row.envelopeFrom, raw.partial);
  } catch (err) {
    await markFailed(d1, row.id, `The message could not be parsed: ${err instanceof Error ? err.message : String(err)}`, now).run();
    return;
  }
  const link = await linkOf(d1, row, parsed);
  const data = eventData(row, parsed, link);
  const batch = new WriteBatch(d1);
  // No event for an auto-reply or delivery report: it would start workflows and end a wait for a reply.
  if (link.contactId && !parsed.autoReply) {
    batch.add(
      insertReceivedEvent(d1, env, {
        eventId: newId(),
        inboundId: row.id,
        projectId: row.projectId,
        contactId: link.contactId,
        emailId: link.emailId,
        data,
        at: now,
      }),
    );
  }
  batch.add(
    recordReceivedWebhook(d1, {
      eventId: newId(),
      inboundId: row.id,
      projectId: row.projectId,
      data: { ...data, messageId: parsed.messageId, inReplyTo: parsed.inReplyTo, size: row.size, attachments: parsed.attachments },
      at: now,
    }),
    markParsed(d1, { id: row.id, projectId: row.projectId, ...parsed, ...link, error: raw.partial ? TOO_LARGE_TO_PARSE : null, at: now }),
  );
  await batch.run({ afterCommit });
}

/** One batch of the inbound queue (on its shard's env): a verdict per message; a failure retries that message only. */
export async function consumeInbound(messages: readonly QueuedMessage<InboundQueueMessage>[], env: Env, afterCommit: AfterCommit): Promise<Verdict[]> {
  const verdicts: Verdict[] = [];
  // One at a time: a message can be INBOUND_MAX_BYTES, and its parse holds several times that.
  for (const message of messages) {
    try {
      await consumeOne(env, message.body, afterCommit, new Date());
      verdicts.push(ACK);
    } catch (err) {
      console.error(`inbound message ${message.body.inboundId} failed; retrying`, err);
      verdicts.push(retryAfter(backoffSeconds(message.attempts)));
    }
  }
  return verdicts;
}

/** Messages whose retries ran out: their rows FAILED (the raw message stays downloadable). */
export async function settleInboundDeadLetters(messages: readonly QueuedMessage<InboundQueueMessage>[], env: Env): Promise<Verdict[]> {
  const now = new Date();
  const statements = messages.map((m) => markFailed(env.DB, m.body.inboundId, "Parsing failed on every retry", now));
  if (statements.length > 0) await getDb(env.DB).$client.batch(statements);
  return messages.map(() => ACK);
}
