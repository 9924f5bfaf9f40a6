import { useEffect, useState } from "preact/hooks";
import { pageOf } from "../api/lists";
import { Link } from "../router";
import { untyped } from "./crm-files";

/**
 * Names instead of ids: a page that shows campaign or template ids reads each kind's names with one
 * list request (100 a page, following the cursor for up to MAX_PAGES pages), never one request per row.
 * The names are kept for NAMES_TTL_MS, so moving between pages does not read them again and again.
 */
export type NameKind = "campaigns" | "templates" | "segments";

const MAX_PAGES = 5;
const NAMES_TTL_MS = 30_000;
const cache = new Map<NameKind, { at: number; names: Promise<Map<string, string>> }>();

async function loadNames(kind: NameKind): Promise<Map<string, string>> {
  const names = new Map<string, string>();
  let cursor: string | undefined;
  for (let i = 0; i < MAX_PAGES; i++) {
    const { data, error, response } = await untyped.GET(`/${kind}`, { params: { query: { limit: "100", cursor } } });
    if (error !== undefined || !response.ok) break;
    const page = pageOf<{ id: string; name: string }>(data);
    for (const item of page.items) names.set(item.id, item.name);
    if (!page.next) break;
    cursor = page.next;
  }
  return names;
}

/** The names of a kind by id; null until they are read (and while `enabled` is false). */
export function useNames(kind: NameKind, enabled = true): Map<string, string> | null {
  const [names, setNames] = useState<Map<string, string> | null>(null);
  useEffect(() => {
    if (!enabled) return;
    let live = true;
    let entry = cache.get(kind);
    if (!entry || Date.now() - entry.at > NAMES_TTL_MS) {
      entry = { at: Date.now(), names: loadNames(kind).catch(() => new Map<string, string>()) };
      cache.set(kind, entry);
    }
    void entry.names.then((n) => live && setNames(n));
    return () => {
      live = false;
    };
  }, [kind, enabled]);
  return names;
}

/** A link to `/kind/id` named by the item's name ("…" while the names load; "Open campaign" for one not among them, deleted or past the first pages). */
export function NamedLink(props: { kind: NameKind; id: string; names: Map<string, string> | null }) {
  const singular = props.kind.slice(0, -1);
  const name = props.names?.get(props.id);
  const text = props.names === null ? "…" : name === undefined ? `Open ${singular}` : name || `(unnamed ${singular})`;
  return <Link href={`/${props.kind}/${props.id}`}>{text}</Link>;
}
