import { useCallback, useEffect, useState } from "preact/hooks";

/** Loads `load()` when `deps` change; `reload` runs it again. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]) {
  const [state, setState] = useState<{ data?: T; error?: string; loading: boolean }>({ loading: true });
  const run = useCallback(() => {
    let live = true;
    setState((s) => ({ ...s, loading: true }));
    load().then(
      (data) => live && setState({ data, loading: false }),
      (err: unknown) => live && setState({ error: messageOf(err), loading: false }),
    );
    return () => {
      live = false;
    };
  }, deps);
  useEffect(run, [run]);
  return { ...state, reload: run };
}

/** The item an editor page edits, none for the id "new" (the page creates one); `ready` once nothing is left to load. */
export function useItem<T>(id: string, load: (id: string) => Promise<T>) {
  const state = useLoad(async () => (id === "new" ? undefined : await load(id)), [id]);
  return { ...state, ready: id === "new" || state.data !== undefined, item: state.data };
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
      setError(messageOf(err));
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, notice, run, setError };
}

export const messageOf = (err: unknown) => (err instanceof Error ? err.message : String(err));
