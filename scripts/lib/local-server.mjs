// The one harness that runs the service locally, for the Node-side tests (test/browser, test/e2e,
// test/faults) and the bench (scripts/bench) alike: free ports, `wrangler dev` (or `npm run dev`)
// in its own process group over its own state, the devtools inspector client, a fake
// DNS-over-HTTPS server and a small API client.
import { execFileSync, spawn } from "node:child_process";
import { appendFileSync, cpSync, existsSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { createServer as createHttpServer } from "node:http";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** The checkout this file is in. */
export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

/** The environment wrangler runs with: no metrics, no colours, no interactive session. */
export const wranglerEnv = { ...process.env, CI: "1", WRANGLER_SEND_METRICS: "false", NO_COLOR: "1" };

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Whether `port` (0: any) can be bound on 127.0.0.1; the bound port, or null. */
function tryPort(port) {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(null));
    server.listen(port, "127.0.0.1", () => {
      const bound = server.address().port;
      server.close(() => resolve(bound));
    });
  });
}

const cursors = new Map();

/**
 * A free TCP port on 127.0.0.1. With `range` ("<first>-<last>"; default BENCH_PORTS) only from that
 * range, in turn: a machine shared with other runs hands each its own range. Never 8787 otherwise
 * in practice (the kernel's ephemeral ports).
 */
export async function freePort(range = process.env.BENCH_PORTS) {
  const bounds = /^(\d+)-(\d+)$/.exec(range ?? "");
  if (!bounds) return tryPort(0);
  const [first, last] = [Number(bounds[1]), Number(bounds[2])];
  for (let tries = 0; tries <= last - first; tries++) {
    const port = cursors.get(range) ?? first;
    cursors.set(range, port >= last ? first : port + 1);
    if ((await tryPort(port)) !== null) return port;
  }
  throw new Error(`no free port in ${first}-${last}`);
}

/** A port for wrangler's devtools inspector (from BENCH_INSPECTOR_PORTS when set). */
export const freeInspectorPort = () => freePort(process.env.BENCH_INSPECTOR_PORTS ?? process.env.BENCH_PORTS);

/** `npx args` run to its end (in `cwd`, another checkout, or this one); its stdout. */
export function npx(args, { cwd, env = wranglerEnv } = {}) {
  return execFileSync("npx", args, { cwd, encoding: "utf8", env, stdio: ["ignore", "pipe", "pipe"], maxBuffer: 64 * 1024 * 1024 });
}

/**
 * A throwaway copy of the checkout's working tree (tracked files and untracked ones git does not
 * ignore, as they are now, so uncommitted edits are in it), with node_modules symlinked and the
 * generated static files (public/app, public/docs-assets, public/data) copied: `npm run dev` run
 * in it writes its .dev.vars, .dev/ and .wrangler/ there, never in the checkout. remove() deletes it.
 */
export function repoCopy({ prefix = "edge-mail-copy-" } = {}) {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const files = execFileSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], { cwd: repoRoot, encoding: "utf8" })
    .split("\0")
    .filter((f) => f && existsSync(join(repoRoot, f)));
  for (const file of files) cpSync(join(repoRoot, file), join(dir, file), { recursive: false, force: true });
  symlinkSync(join(repoRoot, "node_modules"), join(dir, "node_modules"), "dir");
  for (const generated of ["public/app", "public/docs-assets", "public/data"]) {
    if (existsSync(join(repoRoot, generated))) cpSync(join(repoRoot, generated), join(dir, generated), { recursive: true, force: true });
  }
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** The migrations applied to the local D1 in `stateDir`. */
export function applyMigrations(stateDir, options = {}) {
  npx(["wrangler", "d1", "migrations", "apply", "DB", "--local", "--persist-to", stateDir], options);
}

/** A project made by `npm run project -- create` in `stateDir`: { id, secretKey, publicKey, ... }. */
export function createProject(name, stateDir, options = {}) {
  const out = npx(["tsx", "scripts/project.ts", "create", name, "--json", "--persist-to", stateDir], options);
  return JSON.parse(out.trim().split("\n").pop());
}

/**
 * A server process started in its own process group (`command`: argv), answering at `url`. Resolves
 * once `url`/health answers or, with `readyLine`, once the output holds wrangler's "Ready on" line.
 * stop(): SIGTERM to the group (npx, wrangler, workerd), then SIGKILL; kill(): SIGKILL at once, nothing
 * shut down cleanly. `logLimit` characters of output are kept (and all of it appended to `logFile`).
 */
export async function startLocalServer(
  command,
  { url, cwd, env = wranglerEnv, timeoutMs = 90_000, pollMs = 250, readyLine = false, logLimit = 40_000, logFile, onStop } = {},
) {
  const child = spawn(command[0], command.slice(1), { cwd, env, stdio: ["ignore", "pipe", "pipe"], detached: true });
  let log = "";
  const keep = (d) => {
    log = (log + d).slice(-logLimit);
    if (logFile) appendFileSync(logFile, d);
  };
  child.stdout.on("data", keep);
  child.stderr.on("data", keep);
  const exited = new Promise((resolve) => child.once("exit", resolve));
  const gone = () => child.exitCode !== null || child.signalCode !== null;
  const signal = async (sig) => {
    if (gone()) return;
    try {
      process.kill(-child.pid, sig);
    } catch {
      // already gone
    }
    await Promise.race([exited, sleep(10_000)]);
  };
  const server = {
    url,
    child,
    output: () => log,
    async stop() {
      await signal("SIGTERM");
      await signal("SIGKILL");
      onStop?.();
    },
    async kill() {
      await signal("SIGKILL");
    },
  };
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (gone()) {
      await server.stop();
      throw new Error(`${command.join(" ")} exited with ${child.exitCode ?? child.signalCode}:\n${log.slice(-4000)}`);
    }
    if (readyLine) {
      if (log.includes("Ready on")) return server;
    } else {
      try {
        if ((await fetch(`${url}/health`)).ok) return server;
      } catch {
        // not listening yet
      }
    }
    if (Date.now() > deadline) {
      await server.stop();
      throw new Error(`${command.join(" ")} did not answer on ${url} within ${timeoutMs} ms:\n${log.slice(-4000)}`);
    }
    await sleep(readyLine ? 20 : pollMs);
  }
}

/**
 * `wrangler dev --local` as a reader runs it (the committed wrangler.toml, or `config`, its [build] step
 * and static assets) on `port` (default: a free one) over `persistTo` (default: throwaway state, removed
 * on stop), with `vars` as `--var` and `args` added. The devtools inspector listens on `inspectorPort`
 * only with `inspector: true`: wrangler relays a devtools event for every subrequest through it, a cost
 * of the dev tool no deployment has, so it is turned off otherwise (wrangler's VS Code debug-terminal switch).
 */
export async function startWranglerDev(vars = {}, options = {}) {
  const port = options.port ?? (await freePort());
  const inspectorPort = options.inspectorPort ?? (await freeInspectorPort());
  const ownState = !options.persistTo;
  const state = options.persistTo ?? mkdtempSync(join(tmpdir(), "edge-mail-dev-"));
  const command = [
    "npx",
    "wrangler",
    "dev",
    ...(options.config ? ["--config", options.config] : []),
    "--local",
    "--ip",
    "127.0.0.1",
    "--port",
    String(port),
    "--inspector-port",
    String(inspectorPort),
    "--persist-to",
    state,
    "--show-interactive-dev-session=false",
    ...(options.args ?? []),
    ...Object.entries(vars).flatMap(([name, value]) => ["--var", `${name}:${value}`]),
  ];
  const env = options.env ?? wranglerEnv;
  const server = await startLocalServer(command, {
    ...options,
    url: `http://127.0.0.1:${port}`,
    env: options.inspector ? env : { ...env, VSCODE_INSPECTOR_OPTIONS: "{}" },
    onStop: () => {
      if (ownState && existsSync(state)) rmSync(state, { recursive: true, force: true });
    },
  });
  return { ...server, port, inspectorPort, state };
}

/**
 * A devtools protocol client of wrangler dev's inspector on `port` (the Worker's isolate):
 * call(method, params) answers the method's result; with `timeoutMs` an unanswered call gives up.
 */
export async function connectInspector(port, { timeoutMs } = {}) {
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
      const timer =
        timeoutMs === undefined
          ? undefined
          : setTimeout(() => {
              pending.delete(id);
              reject(new Error(`${method}: no answer`));
            }, timeoutMs);
      pending.set(id, (message) => {
        clearTimeout(timer);
        if (message.error) reject(new Error(`${method}: ${message.error.message}`));
        else resolve(message.result);
      });
      socket.send(JSON.stringify({ id, method, params }));
    });
  return { title: target.title, call, close: () => socket.close() };
}

/**
 * A DNS-over-HTTPS resolver on `port` (the JSON API `DOH_URL` points at: `?name=&type=`) answering from
 * `zone` (records by lower-case name); names it does not hold are NXDOMAIN.
 */
export function startFakeDoh(port, zone) {
  const types = { TXT: 16, MX: 15 };
  return createHttpServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://localhost");
    const name = (url.searchParams.get("name") ?? "").toLowerCase().replace(/\.$/, "");
    const type = url.searchParams.get("type") ?? "A";
    const records = zone.get(name);
    const answer = (records ?? []).filter((r) => r.type === type).map((r) => ({ name: `${name}.`, type: types[type], TTL: 300, data: r.data }));
    res.setHeader("content-type", "application/dns-json");
    res.end(
      JSON.stringify({ Status: records ? 0 : 3, Question: [{ name: `${name}.`, type: types[type] ?? 1 }], ...(answer.length ? { Answer: answer } : {}) }),
    );
  }).listen(port, "127.0.0.1");
}

/** Puts the DNS records the API asked for (POST /domains) into `zone`, as a DNS provider would serve them. */
export function publishRecords(zone, records) {
  for (const r of records) {
    const data = r.type === "MX" ? `${r.priority ?? 10} ${r.value}.` : (r.value.match(/.{1,255}/g) ?? [""]).map((c) => `"${c}"`).join(" ");
    zone.set(r.name, [...(zone.get(r.name) ?? []), { type: r.type, data }]);
  }
}

/** A JSON client of the API at `url()` with the secret key `key()`: { status, body } of each call. */
export function apiClient(url, key) {
  return async (method, path, body) => {
    const res = await fetch(url() + path, {
      method,
      headers: { Authorization: `Bearer ${key()}`, "Content-Type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: await res.json() };
  };
}
