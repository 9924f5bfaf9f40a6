import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { createServer as createHttpServer, type Server } from "node:http";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** A free TCP port on 127.0.0.1 (never 8787, which `npm run dev` uses). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export interface DevServer {
  url: string;
  output: () => string;
  stop: () => Promise<void>;
}

/**
 * `wrangler dev --local` on its own port with throwaway local state (or the
 * state in `persistTo`, kept), as a reader runs it: the committed wrangler.toml
 * (or `config`), its [build] step and static assets; `vars` as `--var`.
 * Resolves once the Worker answers /health.
 */
export async function startWranglerDev(
  vars: Record<string, string> = {},
  options: { persistTo?: string; config?: string; timeoutMs?: number } = {},
): Promise<DevServer> {
  const timeoutMs = options.timeoutMs ?? 60_000;
  const port = await freePort();
  const ownState = !options.persistTo;
  const state = options.persistTo ?? mkdtempSync(join(tmpdir(), "edge-mail-dev-"));
  const args = ["wrangler", "dev", "--local", "--ip", "127.0.0.1", "--port", String(port), "--persist-to", state, "--show-interactive-dev-session=false"];
  if (options.config) args.push("--config", options.config);
  for (const [name, value] of Object.entries(vars)) args.push("--var", `${name}:${value}`);
  const child: ChildProcess = spawn("npx", args, {
    env: { ...process.env, CI: "1", WRANGLER_SEND_METRICS: "false", NO_COLOR: "1" },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  let log = "";
  child.stdout!.on("data", (d) => (log += d));
  child.stderr!.on("data", (d) => (log += d));
  const url = `http://127.0.0.1:${port}`;

  const stop = async () => {
    if (child.exitCode === null && child.pid) {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      // The whole process group: npx, wrangler and its workerd.
      try {
        process.kill(-child.pid, "SIGTERM");
      } catch {
        // already gone
      }
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {
        // already gone
      }
    }
    if (ownState && existsSync(state)) rmSync(state, { recursive: true, force: true });
  };

  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) break;
    try {
      const res = await fetch(`${url}/health`);
      if (res.ok) return { url, output: () => log, stop };
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  await stop();
  throw new Error(`wrangler dev did not answer on ${url} within ${timeoutMs} ms:\n${log}`);
}

/** DNS records a fake resolver answers with, by lower-case name. */
export type FakeZone = Map<string, { type: string; data: string }[]>;

/**
 * A DNS-over-HTTPS resolver (the JSON API `DOH_URL` points at: `?name=&type=`)
 * answering from `zone`; names it does not hold are NXDOMAIN.
 */
export function startFakeDoh(port: number, zone: FakeZone): Server {
  const types: Record<string, number> = { TXT: 16, MX: 15 };
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
