// BENCH_PROFILE=<file.cpuprofile>: a CPU profile of the Worker's isolate over the devtools
// protocol while the sections run (unminified, so names are readable; needs the inspector);
// written to the file (Chrome DevTools or speedscope open it), its top functions printed.
import { writeFileSync } from "node:fs";
import { fmt, log } from "./lib.mjs";

/** Starts the devtools CPU profiler in the Worker's isolate (wrangler dev's inspector on `port`); stop(file) writes the profile and prints its top functions. */
export async function startProfiler(port) {
  // ws comes with miniflare (wrangler's and vitest-pool-workers' local runtime); Node 20 has no WebSocket client of its own.
  const { default: WebSocket } = await import("ws");
  const [target] = await (await fetch(`http://127.0.0.1:${port}/json`)).json();
  const socket = new WebSocket(target.webSocketDebuggerUrl);
  await new Promise((resolve, reject) => {
    socket.once("open", resolve);
    socket.once("error", reject);
  });
  let nextId = 0;
  const pending = new Map();
  socket.on("message", (data) => {
    const message = JSON.parse(String(data));
    pending.get(message.id)?.(message);
    pending.delete(message.id);
  });
  const call = (method, params = {}) =>
    new Promise((resolve, reject) => {
      const id = ++nextId;
      pending.set(id, (message) => (message.error ? reject(new Error(`${method}: ${message.error.message}`)) : resolve(message.result)));
      socket.send(JSON.stringify({ id, method, params }));
    });
  await call("Profiler.enable");
  await call("Profiler.setSamplingInterval", { interval: 200 });
  await call("Profiler.start");
  log(`CPU profile of ${target.title ?? "the Worker"} started`);
  return {
    async stop(file) {
      const { profile } = await call("Profiler.stop");
      socket.close();
      writeFileSync(file, JSON.stringify(profile));
      console.log(`\n## CPU profile of the Worker isolate (${file})`);
      for (const line of profileSummary(profile, 25)) console.log(line);
    },
  };
}

/** The `top` functions of a devtools CPU profile by self time and by total time (a function counted once per stack), as percentages of the sampled time. */
function profileSummary(profile, top) {
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
  const parents = new Map();
  for (const node of profile.nodes) for (const child of node.children ?? []) parents.set(child, node.id);
  const name = (node) => `${node.callFrame.functionName || "(anonymous)"} ${node.callFrame.url.split("/").pop()}:${node.callFrame.lineNumber + 1}`;
  const timeByNode = new Map();
  let total = 0;
  profile.samples.forEach((id, i) => {
    const dt = profile.timeDeltas[i] ?? 0;
    timeByNode.set(id, (timeByNode.get(id) ?? 0) + dt);
    total += dt;
  });
  const self = new Map();
  const inclusive = new Map();
  for (const [id, dt] of timeByNode) {
    const key = name(nodes.get(id));
    self.set(key, (self.get(key) ?? 0) + dt);
    const seen = new Set();
    for (let at = id; at !== undefined; at = parents.get(at)) {
      const frame = name(nodes.get(at));
      if (seen.has(frame)) continue;
      seen.add(frame);
      inclusive.set(frame, (inclusive.get(frame) ?? 0) + dt);
    }
  }
  const rows = (map) =>
    [...map]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([key, dt]) => `${fmt((dt / total) * 100, 1).padStart(6)}%  ${key}`);
  return [`sampled ${fmt(total / 1000, 0)} ms`, "self time:", ...rows(self), "total time:", ...rows(inclusive)];
}
