import { useEffect, useRef, useState } from "preact/hooks";
import { Field } from "./components/page";
import type { MountedEditor } from "./editor-grapes";

type Mode = "visual" | "html";
/** The tab last chosen, kept while the app runs: saving a new item opens its page in the same tab. */
let lastMode: Mode = "visual";

/**
 * An email body edited in the visual editor (GrapesJS, loaded on the first use, see editor-grapes.ts)
 * or as HTML ("HTML" tab: the textarea "Body (HTML)"). Both edit the same value: the visual editor's
 * output is its HTML with the CSS inlined, and switching tabs carries the text over.
 */
export function BodyEditor(props: { value: string; onChange: (html: string) => void; hint: string; rows?: number }) {
  const [mode, setModeState] = useState<Mode>(lastMode);
  const setMode = (m: Mode) => {
    lastMode = m;
    setModeState(m);
  };
  return (
    <div class="editor-body">
      <fieldset class="editor-tabs">
        <legend>Body</legend>
        <button type="button" class="small" aria-pressed={mode === "visual"} onClick={() => setMode("visual")}>
          Visual
        </button>
        <button type="button" class="small" aria-pressed={mode === "html"} onClick={() => setMode("html")}>
          HTML
        </button>
      </fieldset>
      {mode === "visual" ? (
        <VisualEditor value={props.value} onChange={props.onChange} />
      ) : (
        <Field label="Body (HTML)" hint={props.hint}>
          {(id) => (
            <textarea id={id} class="mono" rows={props.rows ?? 12} required value={props.value} onInput={(e) => props.onChange(e.currentTarget.value)} />
          )}
        </Field>
      )}
      {mode === "visual" && <small class="editor-hint">{props.hint} Drag blocks from the panel; double-click text to edit it.</small>}
    </div>
  );
}

function VisualEditor(props: { value: string; onChange: (html: string) => void }) {
  const box = useRef<HTMLDivElement>(null);
  const [state, setState] = useState<"loading" | "ready" | string>("loading");
  const onChange = useRef(props.onChange);
  onChange.current = props.onChange;
  const initial = useRef(props.value);
  useEffect(() => {
    let mounted: MountedEditor | undefined;
    let gone = false;
    import("./editor-grapes").then(
      ({ mountEditor }) => {
        if (gone || !box.current) return;
        mounted = mountEditor(box.current, initial.current, (html) => onChange.current(html));
        setState("ready");
      },
      (err: unknown) => !gone && setState(`The visual editor did not load (${err instanceof Error ? err.message : err}); use the HTML tab.`),
    );
    return () => {
      gone = true;
      mounted?.destroy();
    };
  }, []);
  return (
    <div class="editor-visual">
      {state === "loading" && <p aria-live="polite">Loading the editor…</p>}
      {state !== "loading" && state !== "ready" && (
        <p class="error" role="alert">
          {state}
        </p>
      )}
      <div ref={box} class="editor-canvas" />
    </div>
  );
}
