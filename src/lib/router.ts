import { OpenAPIHono } from "@hono/zod-openapi";
import type { MiddlewareHandler } from "hono";
import { getPath } from "hono/utils/url";
import type { Env } from "../env";
import type { AppBindings } from "./context";
import { ApiError, fieldErrorsFromZod } from "./errors";

/**
 * A router whose zod validation failures become the contract's 422
 * VALIDATION_ERROR, one `errors[]` item per bad field.
 */
export function createRouter() {
  return new OpenAPIHono<AppBindings>({
    defaultHook: (result) => {
      if (!result.success) {
        const prefix = result.target === "json" ? undefined : result.target;
        throw ApiError.validation(fieldErrorsFromZod(result.error, prefix === "query" || prefix === "param" ? undefined : prefix));
      }
    },
  });
}

/** `load` run on the first call only, its promise kept (and forgotten again if it rejects, so a later call retries). */
export function once<T>(load: () => Promise<T>): () => Promise<T> {
  let loaded: Promise<T> | undefined;
  return () =>
    (loaded ??= load().catch((err) => {
      loaded = undefined;
      throw err;
    }));
}

/** A middleware whose module is imported on its first request (`load` is called once, see `once`). */
export function lazyMiddleware(load: () => Promise<MiddlewareHandler<AppBindings>>): MiddlewareHandler<AppBindings> {
  const handler = once(load);
  return async (c, next) => (await handler())(c, next);
}

type Fetch = (request: Request, env?: Env, ctx?: ExecutionContext) => Response | Promise<Response>;

/**
 * Requests handed to the app of their path's group, each group's app built on
 * that group's first request (once per isolate), so a request builds only what
 * its routes need. `groupOf` names the parts (route modules) a path can reach,
 * `build` builds an app of those parts; paths naming the same parts share one app.
 */
export function lazyGroups<P extends string, A extends { fetch: Fetch }>(groupOf: (path: string) => readonly P[], build: (parts: readonly P[]) => Promise<A>) {
  const apps = new Map<string, () => Promise<A>>();
  /** The app that answers `path` (built on the first call for its group). */
  const appFor = (path: string): Promise<A> => {
    const parts = groupOf(path);
    const group = parts.join(",");
    let app = apps.get(group);
    if (!app) {
      app = once(() => build(parts));
      apps.set(group, app);
    }
    return app();
  };
  const fetch = async (request: Request, env?: Env, ctx?: ExecutionContext) => (await appFor(getPath(request))).fetch(request, env, ctx);
  return {
    appFor,
    fetch,
    /** As Hono's `app.request`: a path (or URL, or Request) and its init, for scripts and tests. */
    request: (input: string | URL | Request, init?: RequestInit, env?: Env, ctx?: ExecutionContext) => {
      if (input instanceof Request) return fetch(init ? new Request(input, init) : input, env, ctx);
      const url = String(input);
      return fetch(new Request(/^https?:\/\//.test(url) ? url : `http://localhost${url.startsWith("/") ? "" : "/"}${url}`, init), env, ctx);
    },
    /** The groups (their parts, comma-separated) whose app was asked for so far, in that order. */
    built: () => [...apps.keys()],
  };
}
