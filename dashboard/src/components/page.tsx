import type { ComponentChildren, JSX } from "preact";
import { useEffect, useId } from "preact/hooks";

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

/** A labelled select of `options` after a first choice, `any`, whose value is "". */
export function Choice<V extends string>(props: {
  label: string;
  value: V | "";
  onChange: (value: V | "") => void;
  any: string;
  options: readonly V[];
  text?: (value: V) => string;
}) {
  return (
    <Field label={props.label}>
      {(id) => (
        <select id={id} value={props.value} onChange={(e) => props.onChange(e.currentTarget.value as V | "")}>
          <option value="">{props.any}</option>
          {props.options.map((o) => (
            <option value={o}>{props.text ? props.text(o) : o}</option>
          ))}
        </select>
      )}
    </Field>
  );
}
