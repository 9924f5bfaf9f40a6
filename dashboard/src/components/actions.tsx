import type { ComponentChildren, JSX } from "preact";
import { useId, useRef, useState } from "preact/hooks";
import { api, call } from "../api/client";
import type { useAction } from "../hooks";
import { navigate } from "../router";
import { Messages } from "./page";

export type Action = ReturnType<typeof useAction>;

/** A form whose submit runs `onSubmit` as `action` (busy state, error or notice). */
export function ActionForm(props: { action: Action; onSubmit: () => Promise<unknown>; class: string; children: ComponentChildren }) {
  return (
    <form
      class={props.class}
      onSubmit={(e) => {
        e.preventDefault();
        void props.action.run(props.onSubmit);
      }}
    >
      {props.children}
    </form>
  );
}

/** An editor form's outcome (error or notice), its primary submit button and, for a saved item, its delete button. */
export function FormActions(props: { action: Action; submit: string; remove?: DeleteTarget }) {
  return (
    <>
      <Messages error={props.action.error} notice={props.action.notice} />
      <div class="actions">
        <button type="submit" class="primary" disabled={props.action.busy}>
          {props.submit}
        </button>
        {props.remove && <DeleteButton {...props.remove} action={props.action} />}
      </div>
    </>
  );
}

/** A button that runs `onClick` as `action`, disabled while it runs. */
export function ActionButton(props: { action: Action; onClick: () => Promise<unknown>; class?: string; disabled?: boolean; children: ComponentChildren }) {
  return (
    <button type="button" class={props.class} disabled={props.action.busy || props.disabled} onClick={() => void props.action.run(props.onClick)}>
      {props.children}
    </button>
  );
}

type DeletePath = "/campaigns/{id}" | "/contacts/{id}" | "/domains/{id}" | "/segments/{id}" | "/templates/{id}" | "/workflows/{id}" | "/topics/{id}";

type DeleteTarget = { path: DeletePath; id: string; question: string; verb?: "Delete" | "Remove" };

/** "Delete campaign" (or "Remove domain"): a confirmed DELETE of `path` for `id`, then the list it was in. */
export function DeleteButton(props: DeleteTarget & { action: Action }): JSX.Element {
  const verb = props.verb ?? "Delete";
  const list = props.path.slice(0, -"/{id}".length);
  return (
    <ConfirmButton
      label={`${verb} ${list.slice(1, -1)}`}
      question={props.question}
      confirmLabel={verb}
      onConfirm={() =>
        void props.action.run(async () => {
          await call(api.DELETE(props.path, { params: { path: { id: props.id } } }));
          navigate(list);
        })
      }
    />
  );
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
export function ConfirmButton(props: {
  label: string;
  question: string;
  confirmLabel?: string;
  onConfirm: () => void;
  disabled?: boolean;
  danger?: boolean;
  /** The button's accessible name when `label` alone is not enough (one "Remove" per table row). */
  ariaLabel?: string;
}) {
  const dialog = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  return (
    <>
      <button
        type="button"
        class={props.danger === false ? "" : "danger"}
        disabled={props.disabled}
        aria-label={props.ariaLabel}
        onClick={() => dialog.current?.showModal()}
      >
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
