import type { Database } from "../db/client";

/**
 * What `npm run dev` adds to the local dev project besides its keys (run only
 * by `npm run project -- ensure-dev`, never reachable through the API).
 * Later parts add to it: a verified sending domain, for instance.
 */
export async function buildDevSeed(_db: Database, _projectId: string) {
  return { queries: [] as { toSQL(): { sql: string; params: unknown[] } }[], info: {} as Record<string, unknown> };
}
