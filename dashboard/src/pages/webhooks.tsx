import { useState } from "preact/hooks";
import { api, call, type Schemas, type Webhook, type WebhookDelivery } from "../api/client";
import { useList } from "../api/lists";
import { ActionButton, ActionForm, ConfirmButton, CopyButton } from "../components/actions";
import { DataTable, ListPage } from "../components/data-table";
import { Choice, Field, Loading, Messages, Page, Status } from "../components/page";
import { when } from "../format";
import { useAction, useItem } from "../hooks";
import { Link, navigate } from "../router";

const enabledText = (w: { enabled: boolean; disabledReason: string | null }) => (w.enabled ? "yes" : `no${w.disabledReason ? `: ${w.disabledReason}` : ""}`);
const eventsText = (events: string[]) => events.join(", ") || "All events";

type EventType = NonNullable<Schemas["CreateWebhook"]["events"]>[number];
/**
 * The event types an endpoint can subscribe to, as the API accepts them (the generated types check that none
 * is missing); `webhook.test` is left out: a test goes to the endpoint whatever it subscribes to.
 */
const EVENT_TYPES = {
  "email.sent": "Sent",
  "email.delivered": "Delivered",
  "email.delivery_delayed": "Delivery delayed",
  "email.bounced": "Bounced",
  "email.complained": "Marked as spam",
  "email.opened": "Opened",
  "email.clicked": "Clicked",
  "email.failed": "Failed",
  "email.suppressed": "Suppressed",
  "email.received": "Reply or mail received",
  "contact.created": "Created",
  "contact.updated": "Updated",
  "contact.deleted": "Deleted",
  "contact.subscribed": "Subscribed",
  "contact.unsubscribed": "Unsubscribed",
  "contact.topics.updated": "Topics changed",
  "contacts.imported": "Import finished",
  "suppression.created": "Address suppressed",
  "suppression.deleted": "Address removed",
  "campaign.sent": "Sent",
  "domain.verified": "Verified",
  "domain.failed": "Failed",
  "workflow.execution.completed": "Execution completed",
  "workflow.execution.failed": "Execution failed",
} satisfies Record<Exclude<EventType, "webhook.test">, string>;
const GROUPS: [string, string][] = [
  ["Emails", "email."],
  ["Contacts", "contact"],
  ["Campaigns", "campaign."],
  ["Domains", "domain."],
  ["Workflows", "workflow."],
  ["Suppressions", "suppression."],
];

/** The project's event webhook endpoints (GET /webhooks). */
export const WebhookList = () => (
  <ListPage
    path="/webhooks"
    create
    columns={[
      { header: "URL", cell: (w) => w.url, link: true },
      { header: "Events", cell: (w) => eventsText(w.events) },
      { header: "Enabled", cell: enabledText },
      { header: "Created", cell: (w) => when(w.createdAt) },
    ]}
  >
    <p>Each endpoint gets the project's events as signed POST requests. Open one to change it, send a test, or see its delivery log.</p>
  </ListPage>
);

/**
 * The secret of an endpoint just created, handed to its page once (the API shows it only on create and
 * rotation): the page takes it when it opens and nothing keeps it after.
 */
let createdSecret: { id: string; secret: string } | null = null;

export function WebhookPage(props: { id: string }) {
  const state = useItem(props.id, (id) => call(api.GET("/webhooks/{id}", { params: { path: { id } } })));
  const [secret] = useState(() => {
    const handed = createdSecret?.id === props.id ? createdSecret.secret : null;
    createdSecret = null;
    return handed;
  });
  if (props.id === "new")
    return (
      <Page title="New webhook">
        <WebhookForm />
      </Page>
    );
  if (!state.data) return <Page title="Webhook">{<Loading state={state} />}</Page>;
  return <WebhookView webhook={state.data} secret={secret} reload={state.reload} />;
}

/** URL, description, events (every type, or the ones checked) and enabled: POST /webhooks, or PATCH for `webhook`. */
function WebhookForm(props: { webhook?: Webhook; onSaved?: () => void }) {
  const { webhook } = props;
  const [url, setUrl] = useState(webhook?.url ?? "");
  const [description, setDescription] = useState(webhook?.description ?? "");
  const [all, setAll] = useState((webhook?.events.length ?? 0) === 0);
  const [events, setEvents] = useState<Set<string>>(new Set(webhook?.events ?? []));
  const [enabled, setEnabled] = useState(webhook?.enabled ?? true);
  const action = useAction();
  const save = async () => {
    const chosen = all ? [] : (Object.keys(EVENT_TYPES) as EventType[]).filter((t) => events.has(t));
    if (!all && chosen.length === 0) throw new Error("Check at least one event type, or choose every event.");
    const body = { url: url.trim(), description: description.trim() || null, events: chosen, enabled };
    if (webhook) {
      await call(api.PATCH("/webhooks/{id}", { params: { path: { id: webhook.id } }, body }));
      props.onSaved?.();
      return "Endpoint saved.";
    }
    const created = await call(api.POST("/webhooks", { body }));
    createdSecret = { id: created.id, secret: created.secret };
    navigate(`/webhooks/${created.id}`);
  };
  const toggle = (type: string, on: boolean) =>
    setEvents((old) => {
      const next = new Set(old);
      if (on) next.add(type);
      else next.delete(type);
      return next;
    });
  return (
    <ActionForm class="stack crm-form" action={action} onSubmit={save}>
      <Field label="Endpoint URL" hint="Outside development: https on a public host.">
        {(id) => (
          <input id={id} type="url" required placeholder="https://example.com/hooks/edge-mail" value={url} onInput={(e) => setUrl(e.currentTarget.value)} />
        )}
      </Field>
      <Field label="Description">{(id) => <input id={id} value={description} onInput={(e) => setDescription(e.currentTarget.value)} />}</Field>
      <fieldset>
        <legend>Events</legend>
        <div class="crm-radios">
          <label>
            <input type="radio" name="all-events" checked={all} onChange={() => setAll(true)} /> Every event type (and ones added later)
          </label>
          <label>
            <input type="radio" name="all-events" checked={!all} onChange={() => setAll(false)} /> Only the types checked below
          </label>
        </div>
        {!all && (
          <div class="crm-events">
            {GROUPS.map(([group, prefix]) => (
              <fieldset>
                <legend>{group}</legend>
                {Object.entries(EVENT_TYPES)
                  .filter(([type]) => type.startsWith(prefix))
                  .map(([type, text]) => (
                    <label class="crm-check">
                      <input type="checkbox" checked={events.has(type)} onChange={(e) => toggle(type, e.currentTarget.checked)} /> {text} <code>{type}</code>
                    </label>
                  ))}
              </fieldset>
            ))}
          </div>
        )}
      </fieldset>
      <label class="crm-check">
        <input type="checkbox" checked={enabled} onChange={(e) => setEnabled(e.currentTarget.checked)} /> Enabled
      </label>
      <Messages error={action.error} notice={action.notice} />
      <div class="actions">
        <button type="submit" class="primary" disabled={action.busy}>
          {webhook ? "Save endpoint" : "Create endpoint"}
        </button>
        {!webhook && (
          <Link class="button" href="/webhooks">
            Cancel
          </Link>
        )}
      </div>
    </ActionForm>
  );
}

/** The signing secret, right after create or rotation only, with a copy button. */
function SecretPanel(props: { secret: string }) {
  return (
    <section class="crm-secret" aria-labelledby="signing-secret">
      <h2 id="signing-secret">Signing secret</h2>
      <p>Copy it now: it is shown only this once. Your endpoint verifies each request's webhook-signature with it.</p>
      <div class="copyline">
        <code data-testid="webhook-secret">{props.secret}</code> <CopyButton text={props.secret} label="signing secret" />
      </div>
    </section>
  );
}

const DELIVERY_STATUSES = ["PENDING", "SUCCEEDED", "FAILED"] as const;
/** A delivery whose last attempt failed: FAILED, or PENDING with the error of an attempt made. */
const hasFailed = (d: WebhookDelivery) =>
  d.status === "FAILED" || (d.status === "PENDING" && d.attempts > 0 && (d.lastError !== null || d.lastStatusCode !== null));

/**
 * An endpoint: its settings (edit), a test event, secret rotation (the new secret shown once), delete, and its
 * delivery log (GET /webhooks/{id}/deliveries, newest first) filtered by status, with a retry per failed delivery.
 */
function WebhookView(props: { webhook: Webhook; secret: string | null; reload: () => void }) {
  const { webhook } = props;
  const [secret, setSecret] = useState(props.secret);
  const [status, setStatus] = useState<WebhookDelivery["status"] | "">("");
  const deliveries = useList("/webhooks/{id}/deliveries", { path: { id: webhook.id }, query: { status: status || undefined } });
  const action = useAction();
  const path = { params: { path: { id: webhook.id } } };
  const sendTest = async () => {
    await call(api.POST("/webhooks/{id}/test", path));
    deliveries.reload();
    return "Test event queued.";
  };
  const rotate = () =>
    void action.run(async () => {
      setSecret((await call(api.POST("/webhooks/{id}/rotate-secret", path))).secret);
      return "Secret rotated: the old one keeps signing beside the new one for 24 hours.";
    });
  const remove = () =>
    void action.run(async () => {
      await call(api.DELETE("/webhooks/{id}", path));
      navigate("/webhooks");
    });
  const retry = (d: WebhookDelivery) =>
    action.run(async () => {
      await call(api.POST("/webhooks/{id}/deliveries/{deliveryId}/retry", { params: { path: { id: webhook.id, deliveryId: d.id } } }));
      deliveries.reload();
      return `Retry of the ${d.type} delivery queued.`;
    });
  return (
    <Page title={webhook.url}>
      <dl class="facts">
        <dt>Events</dt>
        <dd>{eventsText(webhook.events)}</dd>
        <dt>Enabled</dt>
        <dd>{enabledText(webhook)}</dd>
        {webhook.description && (
          <>
            <dt>Description</dt>
            <dd>{webhook.description}</dd>
          </>
        )}
        <dt>Created</dt>
        <dd>{when(webhook.createdAt)}</dd>
      </dl>
      {secret && <SecretPanel secret={secret} />}
      <Messages error={action.error} notice={action.notice} />
      <div class="actions">
        <ActionButton action={action} disabled={!webhook.enabled} onClick={sendTest}>
          Send test event
        </ActionButton>
        <ConfirmButton
          label="Rotate secret"
          danger={false}
          disabled={action.busy}
          question="Rotate the signing secret? The new one is shown once; the old one keeps signing beside it for 24 hours."
          confirmLabel="Rotate"
          onConfirm={rotate}
        />
        <ConfirmButton
          label="Delete webhook"
          disabled={action.busy}
          question={`Delete the endpoint ${webhook.url}? Nothing more is sent to it.`}
          confirmLabel="Delete"
          onConfirm={remove}
        />
      </div>
      <details class="crm-edit">
        <summary>Edit endpoint</summary>
        <WebhookForm webhook={webhook} onSaved={props.reload} />
      </details>
      <h2>Deliveries</h2>
      <div class="crm-filters">
        <Choice label="Status" any="Any" options={DELIVERY_STATUSES} value={status} onChange={setStatus} />
        <button type="button" disabled={deliveries.loading} onClick={deliveries.reload}>
          Refresh
        </button>
      </div>
      <DataTable
        list={deliveries}
        empty="No deliveries."
        columns={[
          { header: "Event", cell: (d) => d.type },
          { header: "Status", cell: (d) => <Status value={d.status} /> },
          { header: "Attempts", cell: (d) => d.attempts },
          { header: "Last answer", cell: (d) => [d.lastStatusCode, d.lastError].filter((x) => x !== null).join(" ") || "—" },
          { header: "Next attempt", cell: (d) => when(d.nextAttemptAt) },
          { header: "Created", cell: (d) => when(d.createdAt) },
          {
            header: "Retry",
            cell: (d) =>
              hasFailed(d) ? (
                <button
                  type="button"
                  class="small"
                  disabled={action.busy || !webhook.enabled}
                  aria-label={`Retry the ${d.type} delivery of ${when(d.createdAt)}`}
                  onClick={() => void retry(d)}
                >
                  Retry
                </button>
              ) : (
                "—"
              ),
          },
        ]}
      />
    </Page>
  );
}
