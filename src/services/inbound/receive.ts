import { routeOf, shardDb, shardEnv, shardIds } from "../../db/shards";
import type { Env } from "../../env";
import { linkVerificationSecrets, readConfig } from "../../lib/config";
import { newId } from "../../lib/ids";
import { enqueueInbound } from "../../queues";
import { WriteBatch } from "../../store/batch";
import { guardError, r2StoredBytesGuard } from "../../store/guards";
import { countReceivedBytes, emailOwner, inboundProjectState, insertReceived } from "../../store/inbound";
import { deleteInboundRaw, inboundKey, putInboundRaw } from "../../store/objects/inbound";
import { readReplyAddress, uuidOf } from "./reply-token";

/**
 * The email() handler (Email Routing -> this Worker): decides from the envelope alone whether
 * the message is taken, stores the raw bytes in R2 without parsing them, writes the
 * inbound_messages row (RECEIVED) and queues it for the consumer (./consume.ts). What is not
 * taken is refused with `setReject` (a permanent SMTP error with our reason): larger than
 * INBOUND_MAX_BYTES, addressed to nothing we know (a forged or unknown reply token, an unknown
 * project), the project over QUOTA_INBOUND_PER_DAY or QUOTA_R2_STORED_BYTES, or the envelope
 * sender over its rate (INBOUND_SENDER_LIMITER, 60 a minute).
 *
 * Recipients on INBOUND_DOMAIN:
 * - `r+<email id><signature>@` (./reply-token.ts): a reply to that email, received for the
 *   email's project (read from the email row, on whichever shard holds it);
 * - `<name>+<project id, 32 hex>@` (name `[a-z0-9][a-z0-9._-]{0,31}`, not `r` or `u`): a named
 *   address of that project, received unthreaded (the consumer may still link it by headers).
 */

export type Recipient = { kind: "reply"; emailId: string } | { kind: "named"; projectId: string; name: string };

const NAMED = /^([a-z0-9][a-z0-9._-]{0,31})\+([0-9a-f]{32})$/;

/** The named address of a project: `<name>+<project id without dashes>@<domain>`. */
export const namedAddress = (name: string, projectId: string, domain: string) => `${name}+${projectId.replaceAll("-", "").toLowerCase()}@${domain}`;

/** What a recipient address stands for, or null (not ours, a forged token, a reserved name). */
export async function recipientOf(env: Env, address: string): Promise<Recipient | null> {
  const domain = readConfig(env).INBOUND_DOMAIN;
  if (!domain) return null;
  const to = address.trim().toLowerCase();
  const at = to.lastIndexOf("@");
  if (at <= 0 || to.slice(at + 1) !== domain) return null;
  const local = to.slice(0, at);
  if (local.startsWith("r+")) {
    const emailId = await readReplyAddress(linkVerificationSecrets(env), domain, to);
    return emailId ? { kind: "reply", emailId } : null;
  }
  const named = NAMED.exec(local);
  if (!named || named[1] === "r" || named[1] === "u") return null;
  return { kind: "named", projectId: uuidOf(named[2]), name: named[1] };
}

/** Where a reply token's email lives: its project and contact, read on the shard its project is on now. */
async function ownerOfEmail(env: Env, emailId: string): Promise<{ projectId: string; contactId: string | null; shard: number } | null> {
  for (const shard of shardIds(env)) {
    const row = await emailOwner(shardDb(env, shard), emailId).first<{ project_id: string; contact_id: string | null }>();
    if (!row) continue;
    // A copy left on a shard the project moved away from is not where it lives.
    if ((await routeOf(env, row.project_id)).shard !== shard) continue;
    return { projectId: row.project_id, contactId: row.contact_id, shard };
  }
  return null;
}

export interface Refusal {
  reason: string;
}

const refuse = (reason: string): Refusal => ({ reason });

/**
 * Takes one message, or answers why not (the caller rejects it with that reason). The raw
 * stream is read only once everything that can be checked up front has passed.
 */
export async function receiveMessage(env: Env, message: ForwardableEmailMessage, now = new Date()): Promise<{ inboundId: string } | Refusal> {
  const config = readConfig(env);
  if (message.rawSize > config.INBOUND_MAX_BYTES) {
    return refuse(`Message too large: ${message.rawSize} bytes, this address takes at most ${config.INBOUND_MAX_BYTES}`);
  }
  const recipient = await recipientOf(env, message.to);
  if (!recipient) return refuse("No such recipient here");
  let target: { projectId: string; emailId: string | null; contactId: string | null; shard: number };
  if (recipient.kind === "reply") {
    const owner = await ownerOfEmail(env, recipient.emailId);
    if (!owner) return refuse("No such recipient here");
    target = { ...owner, emailId: recipient.emailId };
  } else {
    target = { projectId: recipient.projectId, emailId: null, contactId: null, shard: (await routeOf(env, recipient.projectId)).shard };
  }
  const projectEnv = shardEnv(env, target.shard);
  const d1 = projectEnv.DB;
  const state = await inboundProjectState(d1, target.projectId, now).first<{ disabled: number; r2_stored_bytes: number; inbound_today: number }>();
  if (!state) return refuse("No such recipient here");
  if (state.disabled) return refuse("This recipient does not take mail now");
  if (state.inbound_today >= config.QUOTA_INBOUND_PER_DAY) return refuse("This recipient has reached its daily quota of received mail; try again tomorrow");
  if (state.r2_stored_bytes + message.rawSize > config.QUOTA_R2_STORED_BYTES) return refuse("This recipient's mailbox is full");
  if (env.INBOUND_SENDER_LIMITER) {
    // Delivery reports have no envelope sender: theirs is counted per recipient, so one bounce storm cannot hold up everyone's.
    const sender = message.from.trim().toLowerCase();
    const key = sender ? `inbound:${sender}` : `inbound:<>:${message.to.trim().toLowerCase()}`;
    let allowed = true;
    try {
      allowed = (await env.INBOUND_SENDER_LIMITER.limit({ key })).success;
    } catch (err) {
      console.error("INBOUND_SENDER_LIMITER failed; message let through", err);
    }
    if (!allowed) return refuse("Too many messages from this sender; try again later");
  }

  const id = newId();
  const r2Key = inboundKey(target.projectId, id, now);
  await putInboundRaw(env.STORAGE, r2Key, message.raw, message.rawSize);
  const input = {
    id,
    projectId: target.projectId,
    emailId: target.emailId,
    contactId: target.contactId,
    route: recipient.kind === "reply" ? ("REPLY" as const) : ("NAMED" as const),
    envelopeFrom: message.from.slice(0, 320),
    envelopeTo: message.to.trim().toLowerCase().slice(0, 320),
    size: message.rawSize,
    r2Key,
    createdAt: now,
  };
  const batch = new WriteBatch(d1);
  batch.add(r2StoredBytesGuard(d1, env, target.projectId, message.rawSize));
  const inserted = batch.add(insertReceived(d1, env, input));
  batch.add(countReceivedBytes(d1, input));
  let written: boolean;
  try {
    written = (await batch.run()).rows(inserted).length > 0;
  } catch (err) {
    await deleteInboundRaw(env.STORAGE, r2Key);
    if (guardError(err, env, now)) return refuse("This recipient's mailbox is full");
    throw err;
  }
  if (!written) {
    await deleteInboundRaw(env.STORAGE, r2Key);
    return refuse("This recipient has reached its daily quota of received mail; try again tomorrow");
  }
  try {
    await enqueueInbound(projectEnv, { inboundId: id, projectId: target.projectId });
  } catch (err) {
    // The row is in D1 (RECEIVED): the cron's inbound sweep queues it again.
    console.error(`queueing inbound message ${id} failed; the inbound sweep will queue it`, err);
  }
  return { inboundId: id };
}

/** The Worker's email() entry point: takes the message or rejects it with the reason. */
export async function handleEmail(message: ForwardableEmailMessage, env: Env): Promise<void> {
  const outcome = await receiveMessage(env, message);
  // Awaited: wrangler dev's local handler reads the rejection only if it is set before email() returns.
  if ("reason" in outcome) await message.setReject(outcome.reason);
}
