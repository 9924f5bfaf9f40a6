import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { expect } from "vitest";
import { getDb } from "../../src/db/client";
import type { Env } from "../../src/env";
import worker from "../../src/index";
import { createProject } from "../../src/services/projects";
import { shardDb } from "../../src/db/shards";

export const BASE = "http://edge-mail.test";

export interface JsonResponse<T = unknown> {
  status: number;
  headers: Headers;
  body: T;
}

/** What a test may change about how a request reaches the Worker. */
export interface CallOptions {
  key?: string;
  body?: unknown;
  rawBody?: BodyInit;
  headers?: Record<string, string>;
  /** Bindings and settings for this request (the Worker's fetch handler is called with them). */
  env?: Env;
  /** Another fetch handler with the Worker's signature (e.g. an app with an injected clock). */
  handler?: (request: Request, env: Env, ctx: ExecutionContext) => Response | Promise<Response>;
  /** With `env` or `handler`: wait for the request's waitUntil work before answering (default true). */
  waitForBackground?: boolean;
  /** "manual" to see a redirect rather than follow it back into the Worker. */
  redirect?: "follow" | "manual";
  /** Read the body as bytes (images) instead of text or JSON. */
  binary?: boolean;
}

/**
 * The one HTTP helper of the tests: calls the Worker exactly as an HTTP client
 * would (through `exports.default`, or the fetch handler with `env` when a test
 * changes bindings) and reads the body as JSON when it is JSON. The body is
 * `unknown` unless the test names its type (`call<T>`; ./api.ts has the API's).
 */
export async function call<T = unknown>(method: string, path: string, options: CallOptions = {}): Promise<JsonResponse<T>> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.key) headers.Authorization = `Bearer ${options.key}`;
  let body: BodyInit | undefined = options.rawBody;
  if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers["Content-Type"] ??= "application/json";
  }
  const request = new Request(path.startsWith("http") ? path : BASE + path, { method, headers, body, redirect: options.redirect });
  let response: Response;
  if (options.env || options.handler) {
    const ctx = createExecutionContext();
    response = await (options.handler ?? worker.fetch)(request, options.env ?? (env as Env), ctx);
    if (options.waitForBackground ?? true) await waitOnExecutionContext(ctx);
  } else {
    response = await exports.default.fetch(request);
  }
  if (options.binary) return { status: response.status, headers: response.headers, body: new Uint8Array(await response.arrayBuffer()) as T };
  const text = await response.text();
  let parsed: any = text;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    // non-JSON bodies (HTML pages, images) stay text
  }
  return { status: response.status, headers: response.headers, body: parsed };
}

/** A project with its keys and a client bound to its secret key; `shard` places it on that data shard (default 0; the tests also have SHARD_1). */
export async function newProject(name = "test project", options: { shard?: number } = {}) {
  const shard = options.shard ?? 0;
  const project = await createProject(getDb(env.DB), name, shard === 0 ? undefined : { shard, d1: shardDb(env, shard) });
  const as = (key: string) => ({
    get: <T = unknown>(path: string) => call<T>("GET", path, { key }),
    post: <T = unknown>(path: string, body?: unknown, headers?: Record<string, string>) => call<T>("POST", path, { key, body, headers }),
    patch: <T = unknown>(path: string, body?: unknown) => call<T>("PATCH", path, { key, body }),
    put: <T = unknown>(path: string, body?: unknown) => call<T>("PUT", path, { key, body }),
    delete: <T = unknown>(path: string) => call<T>("DELETE", path, { key }),
  });
  return { ...project, api: as(project.secretKey), publicApi: as(project.publicKey) };
}

export type TestProject = Awaited<ReturnType<typeof newProject>>;

/** The contract's error envelope (src/lib/errors.ts). */
export interface ErrorBody {
  success: false;
  error: {
    code: string;
    message: string;
    statusCode: number;
    requestId: string;
    errors?: { field: string; message: string; code: string }[];
    suggestion?: string;
  };
  timestamp: string;
}

/** Asserts the contract's error envelope and returns its `error`. */
export function expectError(res: JsonResponse<unknown>, status: number, code?: string) {
  const body = res.body as ErrorBody;
  expect(res.status, JSON.stringify(body)).toBe(status);
  expect(body.success).toBe(false);
  expect(body.error.statusCode).toBe(status);
  expect(typeof body.error.message).toBe("string");
  expect(body.error.requestId).toBe(res.headers.get("X-Request-Id"));
  expect(Number.isNaN(Date.parse(body.timestamp))).toBe(false);
  if (code) expect(body.error.code).toBe(code);
  return body.error;
}
