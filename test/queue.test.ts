import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { deadLetterQueue, SEND_QUEUE } from "../src/messages";
import { runConsumer } from "./support/queues";
import { d1Outage } from "./fakes/d1-outage";

describe("queue dispatch", () => {
  it("a batch from a queue no consumer is registered for throws, naming the queue, and acks nothing", async () => {
    const result = await runConsumer("edge-mail-sned", env, [{ body: { emailId: "e", projectId: "p" } }], { mayThrow: true });
    expect(String(result.thrown)).toMatch(/No consumer for queue "edge-mail-sned"/);
    expect(result.explicitAcks).toEqual([]);
    expect(result.retryMessages).toEqual([]);
  });

  it("a consumer that throws has its whole batch retried with back-off, not dropped", async () => {
    // The dead-letter consumer writes to D1; a D1 that fails every statement makes it throw.
    const brokenDb = d1Outage({ down: true });
    const result = await runConsumer(
      deadLetterQueue(SEND_QUEUE),
      { ...env, DB: brokenDb },
      [
        { id: "d1", body: { emailId: "e1", projectId: "p" } },
        { id: "d2", body: { emailId: "e2", projectId: "p" } },
      ],
      { attempts: 2 },
    );
    expect(result.explicitAcks).toEqual([]);
    expect(result.retryMessages.map((r) => r.msgId).sort()).toEqual(["d1", "d2"]);
    expect(result.retryDelays).toHaveLength(2);
    expect(result.retryDelays.every((d) => (d ?? 0) >= 5)).toBe(true);
  });

  it("routes a batch's messages with one control read for all their projects, not one per project", async () => {
    // The statements sent to the control database (DB), by their SQL.
    const sent: string[] = [];
    const control = new Proxy(env.DB, {
      get(target, prop) {
        if (prop === "prepare")
          return (sql: string) => {
            sent.push(sql);
            return target.prepare(sql);
          };
        const value = Reflect.get(target, prop, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    // Five projects the isolate has never routed (no project_shards row: shard 0).
    const projects = Array.from({ length: 5 }, () => crypto.randomUUID());
    const result = await runConsumer(
      deadLetterQueue(SEND_QUEUE),
      { ...env, DB: control },
      projects.map((projectId, i) => ({ id: `m${i}`, body: { emailId: crypto.randomUUID(), projectId } })),
    );
    expect(result.retryMessages).toEqual([]);
    expect(sent.filter((sql) => sql.includes("project_shards"))).toHaveLength(1);
  });
});
