import { env, exports } from "cloudflare:workers";
import { expect } from "vitest";
import { getDb } from "../src/db/client";
import { createProject } from "../src/services/projects";

export const BASE = "http://edge-mail.test";

export interface JsonResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
}

/** Calls the Worker's fetch handler exactly as an HTTP client would. */
export async function call<T = any>(
  method: string,
  path: string,
  options: { key?: string; body?: unknown; rawBody?: BodyInit; headers?: Record<string, string> } = {},
): Promise<JsonResponse<T>> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.key) headers.Authorization = `Bearer ${options.key}`;
  let body: BodyInit | undefined = options.rawBody;
  if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers["Content-Type"] ??= "application/json";
  }
  const response = await exports.default.fetch(new Request(BASE + path, { method, headers, body }));
  const text = await response.text();
  let parsed: any = text;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    // non-JSON bodies (HTML pages, images) stay text
  }
  return { status: response.status, headers: response.headers, body: parsed };
}

/** A project with its keys and a client bound to its secret key. */
export async function newProject(name = "test project") {
  const project = await createProject(getDb(env.DB), name);
  const as = (key: string) => ({
    get: <T = any>(path: string) => call<T>("GET", path, { key }),
    post: <T = any>(path: string, body?: unknown, headers?: Record<string, string>) =>
      call<T>("POST", path, { key, body, headers }),
    patch: <T = any>(path: string, body?: unknown) => call<T>("PATCH", path, { key, body }),
    put: <T = any>(path: string, body?: unknown) => call<T>("PUT", path, { key, body }),
    delete: <T = any>(path: string) => call<T>("DELETE", path, { key }),
  });
  return { ...project, api: as(project.secretKey), publicApi: as(project.publicKey) };
}

export type TestProject = Awaited<ReturnType<typeof newProject>>;

/** Asserts the contract's error envelope and returns its `error`. */
export function expectError(res: JsonResponse, status: number, code?: string) {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(res.body.success).toBe(false);
  expect(res.body.error.statusCode).toBe(status);
  expect(typeof res.body.error.message).toBe("string");
  expect(res.body.error.requestId).toBe(res.headers.get("X-Request-Id"));
  expect(Number.isNaN(Date.parse(res.body.timestamp))).toBe(false);
  if (code) expect(res.body.error.code).toBe(code);
  return res.body.error as { code: string; message: string; errors?: { field: string; message: string; code: string }[] };
}
