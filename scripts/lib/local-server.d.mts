import type { ChildProcess } from "node:child_process";
import type { Server } from "node:http";

export const wranglerEnv: NodeJS.ProcessEnv;
/** The checkout scripts/lib/ is in. */
export const repoRoot: string;
/** A throwaway copy of the working tree (node_modules symlinked); remove() deletes it. */
export function repoCopy(options?: { prefix?: string }): { dir: string; remove(): void };
export function sleep(ms: number): Promise<void>;
export function freePort(range?: string): Promise<number>;
export function freeInspectorPort(): Promise<number>;
export function npx(args: string[], options?: { cwd?: string; env?: NodeJS.ProcessEnv }): string;
export function applyMigrations(stateDir: string, options?: { cwd?: string; env?: NodeJS.ProcessEnv }): void;
export function createProject(
  name: string,
  stateDir: string,
  options?: { cwd?: string; env?: NodeJS.ProcessEnv },
): { id: string; secretKey: string; publicKey: string };

export interface LocalServerOptions {
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  timeoutMs?: number;
  pollMs?: number;
  readyLine?: boolean;
  logLimit?: number;
  logFile?: string;
}

export interface LocalServer {
  url: string;
  child: ChildProcess;
  output(): string;
  /** SIGTERM to the process group, then SIGKILL. */
  stop(): Promise<void>;
  /** SIGKILL to the process group at once. */
  kill(): Promise<void>;
}

export function startLocalServer(command: string[], options: LocalServerOptions & { url: string; onStop?: () => void }): Promise<LocalServer>;

export interface DevServer extends LocalServer {
  port: number;
  inspectorPort: number;
  state: string;
}

export function startWranglerDev(
  vars?: Record<string, string>,
  options?: LocalServerOptions & {
    port?: number;
    inspectorPort?: number;
    inspector?: boolean;
    persistTo?: string;
    config?: string;
    args?: string[];
  },
): Promise<DevServer>;

export function connectInspector(
  port: number,
  options?: { timeoutMs?: number },
): Promise<{ title?: string; call(method: string, params?: Record<string, unknown>): Promise<unknown>; close(): void }>;

/** DNS records a fake resolver answers with, by lower-case name. */
export type FakeZone = Map<string, { type: string; data: string }[]>;
export function startFakeDoh(port: number, zone: FakeZone): Server;
export function publishRecords(zone: FakeZone, records: { type: string; name: string; value: string; priority?: number }[]): void;
// biome-ignore lint/suspicious/noExplicitAny: JSON bodies, read freely by the tests
export function apiClient(url: () => string, key: () => string): (method: string, path: string, body?: unknown) => Promise<{ status: number; body: any }>;
