// Throughput of the request paths against GET /health (the floor), in turns, and
// the latency of a /v1/send with cold isolate caches.
import { performance } from "node:perf_hooks";
import { api, fmt, interleavedThroughput, report, send, settings, sleep, stats, throughputDetail, waitForQueueDrain } from "./lib.mjs";

export const throughputSection = {
  key: "throughput",
  title: "Throughput of the request paths, in turns with GET /health",
  async run(ctx) {
    const { bench } = ctx;
    const from = `hello@${settings.domain}`;
    const template = await createBenchTemplate(ctx.server.base, bench.secretKey);
    const kinds = [
      { label: "GET /health (floor)", makeRequest: () => ({ path: "/health" }), expect: [200] },
      // One D1 round trip and nothing else (development only): what any path with one costs here.
      { label: "GET /dev/d1-round-trip", makeRequest: () => ({ path: "/dev/d1-round-trip" }), expect: [200] },
      ...requestKinds(bench, template.id, ctx.runId),
    ];
    const results = await interleavedThroughput(ctx.server, kinds, settings.throughputRounds, () => waitForQueueDrain(ctx.server.base, bench.secretKey));
    const [health, roundTrip, track, contacts, plainSend, templateSend] = results;
    const warm = "warm isolate caches; capture provider";
    report("GET /health (floor)", `${fmt(health.rps, 0)} req/s`, { shape: "no auth, no D1", detail: throughputDetail(health) });
    const ratio = (figure, r, goal, shape, floor = health) => {
      const value = r.rps / floor.rps;
      report(figure, fmt(value, 2), {
        goal: goal === undefined ? "" : `>= ${goal}`,
        met: goal === undefined ? undefined : value >= goal,
        shape,
        detail: `${fmt(r.rps, 0)} / ${fmt(floor.rps, 0)} req/s; ${throughputDetail(r)}`,
      });
    };
    ratio("one D1 round trip alone / GET /health", roundTrip, undefined, "development-only route: the ceiling for a path with one round trip");
    ratio("POST /v1/track / GET /health", track, 0.6, `new contact + event, pk_ key; ${warm}`);
    ratio("POST /contacts / GET /health", contacts, 0.6, `new contact, sk_ key; ${warm}`);
    ratio("POST /v1/send (1 recipient) / GET /health", plainSend, 0.4, `no template, no Idempotency-Key, variables in data; ${warm}`);
    ratio("POST /v1/send, template + Idempotency-Key / GET /health", templateSend, 0.4, `stored template, a new Idempotency-Key each; ${warm}`);

    // Cold caches: the isolate keeps API keys and sending domains for 5 s, so a project that
    // sends less often than that pays for the lookups. Each sample waits them out.
    const samples = { cold: [], warm: [] };
    const one = async (kind, i) => {
      const t0 = performance.now();
      const res = await send(ctx.server.base, {
        method: "POST",
        path: "/v1/send",
        key: bench.secretKey,
        body: { to: `${kind}${i}@bench.test`, from, subject: "Hi", body: "<p>Hello</p>" },
      });
      samples[kind].push(performance.now() - t0);
      if (res.status !== 200) throw new Error(`${kind} /v1/send answered ${res.status}: ${res.text.slice(0, 200)}`);
    };
    for (let i = 0; i < settings.coldSamples; i++) {
      await sleep(5_500);
      await one("cold", i);
      await one("warm", i); // the same request right after: caches filled
    }
    const cold = stats(samples.cold);
    const warmOne = stats(samples.warm);
    report("POST /v1/send with cold caches, latency", `${fmt(cold.median)} ms`, {
      shape: "one request after 5.5 s idle (API key and sending domain caches expired); capture provider",
      detail: `median of ${settings.coldSamples}, p95 ${fmt(cold.p95)} ms; the same request right after, caches warm: median ${fmt(warmOne.median)} ms`,
    });
  },
};

/** The stored template of the template send. POST /templates answers the template itself (Plunk's shape), not an envelope. */
export function createBenchTemplate(base, key) {
  return api(base, key, "POST", "/templates", {
    name: "Bench welcome",
    subject: "Welcome, {{firstName ?? friend}}",
    body: "<p>Hi {{firstName ?? friend}}, your code is {{code}}.</p>",
    type: "TRANSACTIONAL",
  });
}

/** The request paths with a goal, as `interleavedThroughput` kinds (scripts/bench/compare.mjs runs them too). */
export function requestKinds(bench, templateId, runId) {
  const from = `hello@${settings.domain}`;
  return [
    {
      label: "POST /v1/track",
      makeRequest: (i) => ({ method: "POST", path: "/v1/track", key: bench.publicKey, body: { email: `track${i}@bench.test`, event: "bench" } }),
      expect: [200],
    },
    {
      label: "POST /contacts",
      makeRequest: (i) => ({ method: "POST", path: "/contacts", key: bench.secretKey, body: { email: `c${i}@bench.test`, data: { n: i } } }),
      expect: [201],
    },
    {
      label: "POST /v1/send",
      makeRequest: (i) => ({
        method: "POST",
        path: "/v1/send",
        key: bench.secretKey,
        body: { to: `rp${i}@bench.test`, from, subject: "Hi {{n}}", body: "<p>Hello {{n}}</p>", data: { n: i } },
      }),
      expect: [200],
    },
    {
      label: "POST /v1/send, template + Idempotency-Key",
      makeRequest: (i) => ({
        method: "POST",
        path: "/v1/send",
        key: bench.secretKey,
        headers: { "Idempotency-Key": `bench-${runId}-${i}` },
        body: { to: `tk${i}@bench.test`, from, template: templateId, data: { firstName: "Ada", code: String(i) } },
      }),
      expect: [200],
    },
  ];
}
