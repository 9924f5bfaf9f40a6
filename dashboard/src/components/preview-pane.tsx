import type { ComponentChildren } from "preact";
import { useEffect, useState } from "preact/hooks";
import { type Preview, renderPreview } from "../preview";
import { Field } from "./page";

/**
 * Sample data and the rendered subject and HTML, updated as the subject, body or data change.
 * `email` is the preview's `{{email}}` (a chosen contact's); `children` go above the sample data (the contact picker).
 */
export function PreviewPane(props: {
  subject: string;
  body: string;
  sample: string;
  onSample: (text: string) => void;
  email?: string;
  children?: ComponentChildren;
}) {
  const [preview, setPreview] = useState<Preview | null>(null);
  useEffect(() => {
    let live = true;
    const timer = setTimeout(() => {
      void renderPreview(props.subject, props.body, props.sample, props.email).then((p) => live && setPreview(p));
    }, 150);
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [props.subject, props.body, props.sample, props.email]);
  return (
    <aside class="preview" aria-label="Preview">
      <h2>Preview</h2>
      {props.children}
      <Field label="Sample data (JSON)" hint="Fills {{variables}} in the preview only.">
        {(id) => <textarea id={id} rows={4} class="mono" value={props.sample} onInput={(e) => props.onSample(e.currentTarget.value)} />}
      </Field>
      {preview?.error && (
        <p class="error" role="alert">
          {preview.error}
        </p>
      )}
      <p class="preview-subject">
        <span>Subject:</span> <strong class="subject-text">{preview?.subject ?? ""}</strong>
      </p>
      <MailFrame title="Rendered email preview" html={preview?.html ?? ""} />
    </aside>
  );
}

/** Rendered email HTML, only ever in a frame with every sandbox restriction (no scripts, no same origin, no forms). */
export function MailFrame(props: { html: string; title: string }) {
  return <iframe class="mail-frame" title={props.title} sandbox="" srcdoc={props.html} referrerpolicy="no-referrer" />;
}
