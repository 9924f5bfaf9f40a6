import type { ComponentChildren } from "preact";
import { useEffect, useState } from "preact/hooks";

/** The dashboard lives under /app; paths below are relative to it ("/campaigns/123"). */
export const BASE = "/app";

function currentPath(): string {
  const path = location.pathname.startsWith(BASE) ? location.pathname.slice(BASE.length) : location.pathname;
  return path === "" || path === "/" ? "/campaigns" : path.replace(/\/$/, "");
}

const listeners = new Set<() => void>();
window.addEventListener("popstate", () => {
  for (const l of listeners) l();
});

export function navigate(path: string) {
  history.pushState(null, "", BASE + path);
  for (const l of listeners) l();
  window.scrollTo(0, 0);
}

/** Calls `listener` on every navigation; returns its removal. */
export function onNavigate(listener: () => void): () => void {
  listeners.add(listener);
  return () => void listeners.delete(listener);
}

/** The current path (relative to /app), re-rendering on navigation. */
export function usePath(): string {
  const [path, setPath] = useState(currentPath);
  useEffect(() => {
    const update = () => setPath(currentPath());
    listeners.add(update);
    return () => void listeners.delete(update);
  }, []);
  return path;
}

/** `pattern` like "/campaigns/:id": the named parts, or null when the path does not match. */
export function match(pattern: string, path: string): Record<string, string> | null {
  const want = pattern.split("/");
  const got = path.split("/");
  if (want.length !== got.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < want.length; i++) {
    if (want[i].startsWith(":")) params[want[i].slice(1)] = decodeURIComponent(got[i]);
    else if (want[i] !== got[i]) return null;
  }
  return params;
}

/** An ordinary link (open in a new tab works) that navigates in place on a plain click. */
export function Link(props: { href: string; children: ComponentChildren; class?: string; "aria-current"?: "page" | undefined }) {
  const { href, children, ...rest } = props;
  return (
    <a
      {...rest}
      href={BASE + href}
      onClick={(e) => {
        if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
        e.preventDefault();
        navigate(href);
      }}
    >
      {children}
    </a>
  );
}
