import { env } from "cloudflare:workers";
import { expect } from "vitest";
import { getDb } from "../../src/db/client";
import { contacts, suppressions } from "../../src/db/schema";
import type { Env } from "../../src/env";
import { newId } from "../../src/lib/ids";
import { call } from "./http";
import { recordingQueue } from "../fakes/queue";
import { runConsumer } from "./queues";
import { sendingSetup } from "./sending";
import { BULK_QUEUE, SEND_QUEUE } from "../../src/messages";
import type { CampaignResponse } from "./api";

export { BULK_QUEUE, SEND_QUEUE };

type Queued = { body: any; delaySeconds?: number };

/**
 * A sending project (verified domain, fake SES) whose Worker has two
 * recording queues, transactional and bulk; `pump` runs the real consumers on
 * whatever is queued, redelivering what they retried, until both are empty.
 */
export async function campaignSetup(overrides: Partial<Env> = {}) {
  const bulk = recordingQueue();
  const s = await sendingSetup({ EMAIL_BULK_QUEUE: bulk as unknown as Queue<unknown>, SEND_RATE_PER_SECOND: "100000", ...overrides });
  const db = getDb(env.DB);

  // Background work (workflow triggers) is left to run on its own, as before the consumer runs.
  const request = <T = unknown>(method: string, path: string, body?: unknown) =>
    call<T>(method, path, { key: s.project.secretKey, body, headers: { "Content-Type": "application/json" }, env: s.env, waitForBackground: false });

  /** Runs one consumer invocation on these messages; returns the bodies it asked to retry. */
  async function runBatch(queue: string, messages: Queued[], attempts = 1): Promise<Queued[]> {
    const { retriedBodies } = await runConsumer(queue, s.env, messages, { attempts });
    return retriedBodies.map((body) => ({ body }));
  }

  /** Delivers everything queued (both queues, `batchSize` per invocation) until nothing is left; bounded. */
  async function pump(batchSize = 50, maxRounds = 400) {
    let attempts = 1;
    for (let round = 0; round < maxRounds; round++) {
      const work: [string, Queued[]][] = [
        [SEND_QUEUE, s.queue.take()],
        [BULK_QUEUE, bulk.take()],
      ];
      if (work.every(([, list]) => list.length === 0)) return round;
      const retried: [string, Queued[]][] = [];
      for (const [queue, list] of work) {
        for (let i = 0; i < list.length; i += batchSize) {
          const again = await runBatch(queue, list.slice(i, i + batchSize), attempts);
          if (again.length > 0) retried.push([queue, again]);
        }
      }
      for (const [queue, list] of retried) (queue === SEND_QUEUE ? s.queue : bulk).messages.push(...list);
      attempts++;
    }
    throw new Error("queues did not drain");
  }

  /** Inserts contacts directly (ids in creation order, as the API makes them). */
  async function addContacts(list: { email: string; subscribed?: boolean; data?: Record<string, unknown> }[]) {
    const rows = list.map((c) => ({
      id: newId(),
      projectId: s.project.id,
      email: c.email,
      subscribed: c.subscribed ?? true,
      data: c.data ?? {},
    }));
    for (let i = 0; i < rows.length; i += 10) await db.insert(contacts).values(rows.slice(i, i + 10));
    return rows;
  }

  async function suppress(email: string) {
    await db.insert(suppressions).values({ projectId: s.project.id, email, reason: "BOUNCE" });
  }

  async function createCampaign(body: Record<string, unknown> = {}) {
    const res = await request<CampaignResponse>("POST", "/campaigns", {
      name: "Spring news",
      subject: "Hello {{firstName ?? friend}}",
      body: "<p>Hi {{data.firstName}}</p>",
      from: s.from,
      audienceType: "ALL",
      ...body,
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body.data;
  }

  /**
   * Runs the campaign's audience pages (the bulk queue's campaign-page messages) until none is left,
   * writing its emails; the emails' own messages are held back and returned, not sent.
   */
  async function writeAudiencePages(): Promise<Queued[]> {
    const held: Queued[] = [];
    for (let round = 0; round < 20; round++) {
      const work = bulk.take();
      if (work.length === 0) break;
      const isPage = (m: Queued) => (m.body as { kind?: string }).kind === "campaign-page";
      held.push(...work.filter((m) => !isPage(m)));
      const pages = work.filter(isPage);
      if (pages.length > 0) await runBatch(BULK_QUEUE, pages);
    }
    return held;
  }

  return { ...s, bulk, db, request, runBatch, pump, addContacts, suppress, createCampaign, writeAudiencePages };
}

/** Provider calls per recipient address. */
export function callsPerAddress(calls: { to: string[] }[]) {
  const counts = new Map<string, number>();
  for (const call of calls) for (const to of call.to) counts.set(to, (counts.get(to) ?? 0) + 1);
  return counts;
}
