// Workflows: what starting one adds to /v1/track, and executions started per second.
import { performance } from "node:perf_hooks";
import { fmt, report, send, settings, sleep, throughput, throughputDetail } from "./lib.mjs";

export const workflowsSection = {
  key: "workflows",
  title: "Workflows (Cloudflare Workflows, local engine)",
  async run(ctx) {
    const key = ctx.bench.secretKey;
    const base = ctx.server.base;
    const createWorkflow = async (body) => {
      const res = await send(base, { method: "POST", path: "/workflows", key, body: { enabled: true, steps: [], ...body } });
      if (res.status !== 201) throw new Error(`POST /workflows answered ${res.status}: ${res.text.slice(0, 200)}`);
      return JSON.parse(res.text).id;
    };
    const executionsOf = async (id) => {
      const stats = JSON.parse((await send(base, { path: `/workflows/${id}`, key })).text).stats;
      return Object.values(stats).reduce((a, b) => a + b, 0);
    };
    // The cost of /v1/track: an event no workflow starts on vs one that starts a workflow (a new contact each time).
    await createWorkflow({ name: "bench start", eventName: "wf-start" });
    const track = (event) => (i) => ({ method: "POST", path: "/v1/track", key: ctx.bench.publicKey, body: { email: `${event}${i}@bench.test`, event } });
    const none = await throughput(ctx.server, track("wf-none"), [200]);
    const starts = await throughput(ctx.server, track("wf-start"), [200]);
    report("POST /v1/track: starts no workflow / starts one (throughput)", `${fmt(none.rps / starts.rps, 2)}x`, {
      shape: "new contact + event each",
      detail: `none: ${fmt(none.rps, 0)} req/s (${throughputDetail(none)}); starts: ${fmt(starts.rps, 0)} req/s (${throughputDetail(starts)})`,
    });

    // Executions started per second: tracked events, timed until every execution exists in D1.
    const burst = await createWorkflow({ name: "bench burst", eventName: "wf-burst" });
    const t0 = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: settings.concurrency }, async () => {
        while (next < settings.workflowEvents) {
          const res = await send(base, track("wf-burst")(next++));
          if (res.status !== 200) throw new Error(`/v1/track answered ${res.status}`);
        }
      }),
    );
    const trackedSeconds = (performance.now() - t0) / 1000;
    let started = 0;
    const deadline = performance.now() + 120_000;
    while (performance.now() < deadline) {
      started = await executionsOf(burst);
      if (started >= settings.workflowEvents) break;
      await sleep(250);
    }
    const seconds = (performance.now() - t0) / 1000;
    report(`workflow executions started from ${settings.workflowEvents} tracked events`, `${fmt(started / seconds, 0)} exec/s`, {
      shape: "local Workflows engine",
      detail: `${started} of ${settings.workflowEvents} in ${fmt(seconds)} s; events tracked in ${fmt(trackedSeconds)} s`,
    });
  },
};
