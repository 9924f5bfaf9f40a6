import { useState } from "preact/hooks";
import { api, call, type Schemas, type Template } from "../api/client";
import { ActionForm, CopyButton, FormActions } from "../components/actions";
import { Field, Loading, Page } from "../components/page";
import { useAction, useLoad } from "../hooks";

type Settings = Schemas["ProjectSettings"];
type Update = Schemas["UpdateProjectSettings"];

const TRACKING_MODES: [Settings["trackingMode"], string][] = [
  ["ENABLED", "Track opens and clicks of all mail"],
  ["MARKETING_ONLY", "Track marketing mail only (campaigns, marketing templates, broadcast sends)"],
  ["DISABLED", "Track nothing: no pixel, every link as written"],
];

/** The project's settings (GET/PATCH /project): tracking, the default sender, double opt-in, the unsubscribe footer, reply tracking. */
export function SettingsPage() {
  const settings = useLoad(async () => (await call(api.GET("/project"))).data, []);
  const templates = useLoad(async () => (await call(api.GET("/templates", { params: { query: { limit: 100 } } }))).data.items, []);
  if (!settings.data || !templates.data) return <Page title="Settings">{<Loading state={settings.data ? templates : settings} />}</Page>;
  return <SettingsForm settings={settings.data} templates={templates.data} />;
}

function SettingsForm(props: { settings: Settings; templates: Template[] }) {
  const [saved, setSaved] = useState(props.settings);
  const initial = (s: Settings) => ({
    trackingMode: s.trackingMode,
    fromEmail: s.defaultFrom?.email ?? "",
    fromName: s.defaultFrom?.name ?? "",
    doubleOptIn: s.doubleOptIn,
    doubleOptInTemplateId: s.doubleOptInTemplateId ?? "",
    unsubscribeFooter: s.unsubscribeFooter ?? "",
    trackReplies: s.inbound.trackReplies,
  });
  const [draft, setDraft] = useState(initial(props.settings));
  const set = (patch: Partial<typeof draft>) => setDraft({ ...draft, ...patch });
  const action = useAction();
  const save = async () => {
    // Only what changed: an unchanged field is not checked again (e.g. a default sender whose domain was removed since).
    const was = initial(saved);
    const body: Update = {};
    if (draft.trackingMode !== was.trackingMode) body.trackingMode = draft.trackingMode;
    if (draft.fromEmail !== was.fromEmail || draft.fromName !== was.fromName) {
      body.defaultFrom = draft.fromEmail.trim() ? { email: draft.fromEmail.trim(), ...(draft.fromName.trim() ? { name: draft.fromName.trim() } : {}) } : null;
    }
    if (draft.doubleOptIn !== was.doubleOptIn) body.doubleOptIn = draft.doubleOptIn;
    if (draft.doubleOptInTemplateId !== was.doubleOptInTemplateId) body.doubleOptInTemplateId = draft.doubleOptInTemplateId || null;
    if (draft.unsubscribeFooter !== was.unsubscribeFooter) body.unsubscribeFooter = draft.unsubscribeFooter.trim() || null;
    if (draft.trackReplies !== was.trackReplies) body.inbound = { trackReplies: draft.trackReplies };
    if (Object.keys(body).length === 0) return "Nothing to save.";
    const next = (await call(api.PATCH("/project", { body }))).data;
    setSaved(next);
    setDraft(initial(next));
    return "Settings saved.";
  };
  const inbound = saved.inbound;
  return (
    <Page title="Settings">
      <ActionForm class="stack settings" action={action} onSubmit={save}>
        <h2>Tracking</h2>
        <Field label="Open and click tracking" hint="A sending domain's switches and a send's own choice still apply (Domains).">
          {(id) => (
            <select id={id} value={draft.trackingMode} onChange={(e) => set({ trackingMode: e.currentTarget.value as Settings["trackingMode"] })}>
              {TRACKING_MODES.map(([value, label]) => (
                <option value={value}>{label}</option>
              ))}
            </select>
          )}
        </Field>

        <h2>Default sender</h2>
        <p class="detail">Used when a send and its template name no sender. On a verified domain.</p>
        <div class="row">
          <Field label="From address">
            {(id) => (
              <input id={id} type="email" placeholder="hello@example.com" value={draft.fromEmail} onInput={(e) => set({ fromEmail: e.currentTarget.value })} />
            )}
          </Field>
          <Field label="From name">{(id) => <input id={id} value={draft.fromName} onInput={(e) => set({ fromName: e.currentTarget.value })} />}</Field>
        </div>

        <h2>Consent</h2>
        <Field label="Confirmation template" hint="Sent for double opt-in: it must use {{confirmUrl}}. Double opt-in topics send it too.">
          {(id) => (
            <select id={id} value={draft.doubleOptInTemplateId} onChange={(e) => set({ doubleOptInTemplateId: e.currentTarget.value })}>
              <option value="">None</option>
              {props.templates.map((t) => (
                <option value={t.id}>{t.name}</option>
              ))}
            </select>
          )}
        </Field>
        <label class="check">
          <input type="checkbox" checked={draft.doubleOptIn} onChange={(e) => set({ doubleOptIn: e.currentTarget.checked })} /> Double opt-in for contacts a
          public key creates (they are subscribed once they confirm)
        </label>
        <Field
          label="Unsubscribe footer"
          hint="HTML added to marketing mail whose body has no {{unsubscribeUrl}}; it must use {{unsubscribeUrl}}. Empty: a small centred “Unsubscribe” link."
        >
          {(id) => (
            <textarea
              id={id}
              rows={3}
              placeholder={'<p>Acme Inc. · <a href="{{unsubscribeUrl}}">Unsubscribe</a></p>'}
              value={draft.unsubscribeFooter}
              onInput={(e) => set({ unsubscribeFooter: e.currentTarget.value })}
            />
          )}
        </Field>

        <h2>Replies</h2>
        {inbound.domain ? (
          <>
            <label class="check">
              <input type="checkbox" checked={draft.trackReplies} onChange={(e) => set({ trackReplies: e.currentTarget.checked })} /> Track replies: mail goes
              out with a reply address on {inbound.domain}, so replies arrive in the Inbox, linked to the email and contact (a Reply-To of your own is kept)
            </label>
            {inbound.namedAddress && (
              <div class="copyline">
                <span>Your address</span> <code>{inbound.namedAddress}</code> <CopyButton text={inbound.namedAddress} label="the project's inbound address" />
              </div>
            )}
            <p class="detail">Any name before the + works (support, sales, ...): mail to it arrives in the Inbox, not linked to an email.</p>
          </>
        ) : (
          <p class="detail">This deployment receives no mail (INBOUND_DOMAIN is not set; see docs/deploy.md, "Receiving mail").</p>
        )}
        <FormActions action={action} submit="Save settings" />
      </ActionForm>
    </Page>
  );
}
