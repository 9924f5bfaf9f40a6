// `npm run bench:webhooks`: only the event webhooks section of `npm run bench`
// (scripts/bench/webhooks.mjs has what it measures and its settings).
process.env.BENCH_ONLY = "webhooks";
await import("./bench/index.mjs");
