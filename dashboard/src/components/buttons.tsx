import { useId, useRef, useState } from "preact/hooks";

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
