import type { ComponentChildren, JSX } from "preact";
import { useCallback, useEffect, useId, useRef, useState } from "preact/hooks";

/** Loads `load()` when `deps` change; `reload` runs it again. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]) {
  const [state, setState] = useState<{ data?: T; error?: string; loading: boolean }>({ loading: true });
  const run = useCallback(() => {
    let live = true;
    setState((s) => ({ ...s, loading: true }));
    load().then(
      (data) => live && setState({ data, loading: false }),
      (err: unknown) => live && setState({ error: err instanceof Error ? err.message : String(err), loading: false }),
    );
    return () => {
      live = false;
    };
  }, deps);
  useEffect(run, [run]);
  return { ...state, reload: run };
}

/** Runs an action, keeping its error and busy state for the form that started it. */
export function useAction() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const run = async (action: () => Promise<unknown>) => {
    setBusy(true);
    setError(null);
    setNotice(null);
    try {
      const message = await action();
      if (typeof message === "string") setNotice(message);
    } catch (err) {
      setError(err instanceof Error ? err.message : String(err));
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, notice, run, setError };
}

export function Messages(props: { error?: string | null; notice?: string | null }) {
  return (
    <>
      {props.error && (
        <p class="error" role="alert">
          {props.error}
        </p>
      )}
      {props.notice && (
        <p class="notice" role="status">
          {props.notice}
        </p>
      )}
    </>
  );
}

type FieldProps = { label: string; hint?: string; children: (id: string) => JSX.Element };
/** A labelled input: the label's `for` names the control. */
export function Field({ label, hint, children }: FieldProps) {
  const id = useId();
  return (
    <div class="field">
      <label for={id}>{label}</label>
      {children(id)}
      {hint && <small>{hint}</small>}
    </div>
  );
}

export function Page(props: { title: string; actions?: ComponentChildren; children: ComponentChildren }) {
  useEffect(() => {
    document.title = `${props.title} · Edge Mail`;
  }, [props.title]);
  return (
    <section class="page">
      <header class="page-head">
        <h1>{props.title}</h1>
        {props.actions && <div class="actions">{props.actions}</div>}
      </header>
      {props.children}
    </section>
  );
}

export function Loading(props: { state: { loading: boolean; error?: string } }) {
  if (props.state.error)
    return (
      <p class="error" role="alert">
        {props.state.error}
      </p>
    );
  return props.state.loading ? <p aria-live="polite">Loading…</p> : null;
}

export function Status(props: { value: string }) {
  return <span class={`status status-${props.value.toLowerCase()}`}>{props.value}</span>;
}

export function when(iso: string | null | undefined): string {
  if (!iso) return "—";
  return new Date(iso).toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
}

/** Rendered email HTML, only ever in a frame with every sandbox restriction (no scripts, no same origin, no forms). */
export function MailFrame(props: { html: string; title: string }) {
  return <iframe class="mail-frame" title={props.title} sandbox="" srcdoc={props.html} referrerpolicy="no-referrer" />;
}

/** A button that copies `text`, saying so. */
export function CopyButton(props: { text: string; label: string }) {
  const [done, setDone] = useState(false);
  return (
    <button
      type="button"
      class="small"
      aria-label={`Copy ${props.label}`}
      onClick={async () => {
        await navigator.clipboard?.writeText(props.text).catch(() => {});
        setDone(true);
        setTimeout(() => setDone(false), 1500);
      }}
    >
      {done ? "Copied" : "Copy"}
    </button>
  );
}

/**
 * A destructive action behind a modal confirmation (<dialog>, keyboard and focus handled by the browser).
 * `onConfirm` runs only after the second, explicit click.
 */
export function ConfirmButton(props: { label: string; question: string; confirmLabel?: string; onConfirm: () => void; disabled?: boolean; danger?: boolean }) {
  const dialog = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  return (
    <>
      <button type="button" class={props.danger === false ? "" : "danger"} disabled={props.disabled} onClick={() => dialog.current?.showModal()}>
        {props.label}
      </button>
      <dialog ref={dialog} aria-labelledby={titleId}>
        <p id={titleId}>{props.question}</p>
        <div class="actions">
          <button type="button" onClick={() => dialog.current?.close()}>
            Keep it
          </button>
          <button
            type="button"
            class="danger"
            onClick={() => {
              dialog.current?.close();
              props.onConfirm();
            }}
          >
            {props.confirmLabel ?? props.label}
          </button>
        </div>
      </dialog>
    </>
  );
}

/** "Load more" under a keyset-paginated list. */
export function More(props: { hasMore: boolean; onMore: () => void; busy?: boolean }) {
  if (!props.hasMore) return null;
  return (
    <button type="button" class="more" disabled={props.busy} onClick={props.onMore}>
      Load more
    </button>
  );
}

/** Keyset pagination over a list endpoint: `fetchPage(cursor)` gives items and the next cursor. */
export function usePaged<T>(fetchPage: (cursor?: string) => Promise<{ items: T[]; next: string | null; total?: number }>, deps: unknown[]) {
  const [items, setItems] = useState<T[]>([]);
  const [next, setNext] = useState<string | null>(null);
  const [total, setTotal] = useState<number | undefined>();
  const [error, setError] = useState<string | undefined>();
  const [loading, setLoading] = useState(true);
  const load = async (cursor?: string) => {
    setLoading(true);
    try {
      const page = await fetchPage(cursor);
      setItems((old) => (cursor ? [...old, ...page.items] : page.items));
      setNext(page.next);
      setTotal(page.total);
      setError(undefined);
    } catch (err) {
      setError(err instanceof Error ? err.message : String(err));
    } finally {
      setLoading(false);
    }
  };
  useEffect(() => {
    void load();
  }, deps);
  return { items, total, error, loading, hasMore: next !== null, more: () => load(next ?? undefined), reload: () => load() };
}
