import { useEffect, useState } from "preact/hooks";
import { messageOf } from "../hooks";
import { api, call } from "./client";
import type { paths } from "./schema";

/** A GET path's 200 body. */
type Body<P extends keyof paths> = paths[P] extends { get: { responses: { 200: { content: { "application/json": infer B } } } } } ? B : never;

/**
 * The item of a list answer, in either envelope the API has: `{success, data: {items, nextCursor, hasMore, total}}`,
 * or Plunk's top-level `{contacts, cursor, hasMore, total}` and `{campaigns, nextCursor, hasMore, total}`.
 */
export type ItemOf<B> = B extends { data: { items: (infer T)[] } }
  ? T
  : B extends { contacts: (infer T)[] }
    ? T
    : B extends { campaigns: (infer T)[] }
      ? T
      : never;

/** Every GET path that answers a page of items. */
export type ListPath = { [P in keyof paths]: [ItemOf<Body<P>>] extends [never] ? never : P }[keyof paths];
/** A list path's item. */
export type Item<P extends ListPath> = ItemOf<Body<P>>;

type Params<P extends ListPath> = paths[P]["get"] extends { parameters: infer X extends { query?: object; path?: unknown } } ? X : never;

/** A list request's parameters: its path parameters and its query without the cursor, which the hook keeps. */
export type ListParams<P extends ListPath> = Pick<Params<P>, "path"> & { query?: Omit<NonNullable<Params<P>["query"]>, "cursor"> };

interface Page<T> {
  items: T[];
  next: string | null;
  total?: number;
}

const ITEM_KEYS = ["items", "contacts", "campaigns"] as const;
const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** One page out of either envelope; the next cursor only while `hasMore`. */
export function pageOf<T>(body: unknown): Page<T> {
  const outer = isRecord(body) ? body : {};
  const page = isRecord(outer.data) ? outer.data : outer;
  const key = ITEM_KEYS.find((k) => Array.isArray(page[k]));
  const cursor = page.nextCursor ?? page.cursor;
  return {
    items: key ? (page[key] as T[]) : [],
    next: page.hasMore && typeof cursor === "string" ? cursor : null,
    total: typeof page.total === "number" ? page.total : undefined,
  };
}

// openapi-fetch types each literal path; the hook is typed by ListPath/ListParams above and calls through this.
const get = api.GET as unknown as (path: string, init: { params: unknown }) => Promise<{ data?: unknown; error?: unknown; response: Response }>;

export interface List<T> {
  items: T[];
  total?: number;
  error?: string;
  loading: boolean;
  hasMore: boolean;
  more: () => void;
  reload: () => void;
}

/**
 * Keyset pagination over a list endpoint: the first page (50 items unless `query.limit` says otherwise)
 * whenever `params` change (required where the path has parameters), the next one on `more()`.
 */
export function useList<P extends ListPath>(path: P, ...args: Params<P> extends { path: object } ? [ListParams<P>] : [ListParams<P>?]): List<Item<P>> {
  type T = Item<P>;
  const params: ListParams<P> = args[0] ?? ({} as ListParams<P>);
  const [items, setItems] = useState<T[]>([]);
  const [next, setNext] = useState<string | null>(null);
  const [total, setTotal] = useState<number | undefined>();
  const [error, setError] = useState<string | undefined>();
  const [loading, setLoading] = useState(true);
  const key = JSON.stringify([path, params]);
  const load = async (cursor?: string) => {
    setLoading(true);
    try {
      const body = await call(get(path, { params: { ...params, query: { limit: 50, ...params.query, cursor } } }));
      const page = pageOf<T>(body);
      setItems((old) => (cursor ? [...old, ...page.items] : page.items));
      setNext(page.next);
      setTotal(page.total);
      setError(undefined);
    } catch (err) {
      setError(messageOf(err));
    } finally {
      setLoading(false);
    }
  };
  useEffect(() => {
    void load();
  }, [key]);
  return { items, total, error, loading, hasMore: next !== null, more: () => void load(next ?? undefined), reload: () => void load() };
}
