// BENCH_PROFILE=<file.cpuprofile>: a CPU profile of the Worker's isolate over the devtools
// protocol while the sections run (unminified, so names are readable; needs the inspector);
// written to the file (Chrome DevTools or speedscope open it), its top functions printed.
import { writeFileSync } from "node:fs";
import { connectInspector } from "../lib/local-server.mjs";
import { fmt, log } from "./lib.mjs";

/** Starts the devtools CPU profiler in the Worker's isolate (wrangler dev's inspector on `port`); stop(file) writes the profile and prints its top functions. */
export async function startProfiler(port) {
  const inspector = await connectInspector(port);
  const { call } = inspector;
  await call("Profiler.enable");
  await call("Profiler.setSamplingInterval", { interval: 200 });
  await call("Profiler.start");
  log(`CPU profile of ${inspector.title ?? "the Worker"} started`);
  return {
    async stop(file) {
      const { profile } = await call("Profiler.stop");
      inspector.close();
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
