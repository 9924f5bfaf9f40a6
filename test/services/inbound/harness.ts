import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { expect } from "vitest";
import type { Env } from "../../../src/env";
import worker from "../../../src/index";
import { INBOUND_QUEUE_NAME, type InboundQueueMessage } from "../../../src/messages";
import { replyAddress } from "../../../src/services/inbound/reply-token";
import { emailMessage, type FakeEmailMessage } from "../../fakes/email-message";
import { heldQueue } from "../../support/queues";
import { sendingSetup } from "../../support/sending";
import type { InboundMessageDetailView, InboundMessageView } from "../../../src/schemas/inbound";

export const INBOUND_DOMAIN = "in.edge-mail.test";
export const SECRET = "test-link-signing-secret-0123456789abcdef";

/** A fixture with its placeholders filled: the envelope recipient, the sender and the id of the message it answers. */
export const fill = (eml: string, values: { to: string; from: string; parentId?: string }) =>
  eml
    .replaceAll("{{TO}}", values.to)
    .replaceAll("{{FROM}}", values.from)
    .replaceAll("{{PARENT_ID}}", values.parentId ?? "unrelated-0@example.com");

/**
 * A sending project (fake SES) whose Worker also receives mail: `send` an email and deliver it
 * (its SES MessageId is its provider id), `receive` a raw message through worker.email() as
 * Email Routing would, `parse` runs the real inbound consumer on what was queued.
 */
export async function inboundSetup(overrides: Partial<Env> = {}) {
  const s = await sendingSetup(overrides);
  const inbound = heldQueue<InboundQueueMessage>("INBOUND_QUEUE", INBOUND_QUEUE_NAME, s.env);
  const env = inbound.env;

  /** Sends one email to `to` and delivers it; its id, contact and the Message-ID recipients see (SES's id @ amazonses.com). */
  async function sendTo(to: string, subject = "Your order has shipped") {
    const res = await s.send({ to, from: s.from, subject, body: "<p>Your order #1042 has shipped.</p>" });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const before = s.ses.calls.length;
    await s.deliver();
    const messageId = s.ses.calls[before].messageId;
    const [sent] = res.body.data.emails;
    return {
      emailId: sent.email,
      contactId: sent.contact.id,
      headerId: `${messageId}@email.amazonses.com`,
      replyTo: await replyAddress(SECRET, INBOUND_DOMAIN, sent.email),
    };
  }

  /** Delivers a raw message to the email() handler; the message says whether it was rejected. */
  async function receive(input: { from: string; to: string; raw: string | Uint8Array; rawSize?: number }): Promise<FakeEmailMessage> {
    const message = emailMessage(input);
    const ctx = createExecutionContext();
    await worker.email!(message, env, ctx);
    await waitOnExecutionContext(ctx);
    return message;
  }

  /** Runs the inbound consumer on everything queued (and redelivers it `times` times). */
  async function parse(times = 1) {
    const queued = inbound.take();
    for (let i = 0; i < times; i++) await inbound.deliver(queued);
    return queued;
  }

  const list = async (query = "") => {
    const res = await s.get<{ data: { items: InboundMessageView[]; total: number; nextCursor: string | null } }>(`/inbound${query}`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.data;
  };
  const detail = async (id: string) => {
    const res = await s.get<InboundMessageDetailView>(`/inbound/${id}`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body;
  };

  return { ...s, env, inbound, sendTo, receive, parse, list, detail };
}
