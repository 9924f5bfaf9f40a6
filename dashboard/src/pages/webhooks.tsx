import { useState } from "preact/hooks";
import { api, call, type WebhookDelivery } from "../api/client";
import { useList } from "../api/lists";
import { ActionButton } from "../components/actions";
import { DataTable, ListPage } from "../components/data-table";
import { Choice, Loading, Messages, Page, Status } from "../components/page";
import { when } from "../format";
import { useAction, useLoad } from "../hooks";

const enabledText = (w: { enabled: boolean; disabledReason: string | null }) => (w.enabled ? "yes" : `no${w.disabledReason ? `: ${w.disabledReason}` : ""}`);

/** The project's event webhook endpoints (GET /webhooks); the signing secret is shown only by the API, on create and rotation. */
export const WebhookList = () => (
  <ListPage
    path="/webhooks"
    columns={[
      { header: "URL", cell: (w) => w.url, link: true },
      { header: "Events", cell: (w) => w.events.join(", ") || "all" },
      { header: "Enabled", cell: enabledText },
      { header: "Created", cell: (w) => when(w.createdAt) },
    ]}
  >
    <p>
      Endpoints are added through the API (<code>POST /webhooks</code>), which answers the signing secret once. Open an endpoint for its delivery log.
    </p>
  </ListPage>
);

const DELIVERY_STATUSES = ["PENDING", "SUCCEEDED", "FAILED"] as const;

/** An endpoint and its delivery log (GET /webhooks/{id}/deliveries, newest first), filtered by status; a test event on demand. */
export function WebhookPage(props: { id: string }) {
  const state = useLoad(() => call(api.GET("/webhooks/{id}", { params: { path: { id: props.id } } })), [props.id]);
  const [status, setStatus] = useState<WebhookDelivery["status"] | "">("");
  const deliveries = useList("/webhooks/{id}/deliveries", { path: { id: props.id }, query: { status: status || undefined } });
  const action = useAction();
  const webhook = state.data;
  if (!webhook) return <Page title="Webhook">{<Loading state={state} />}</Page>;
  const sendTest = async () => {
    await call(api.POST("/webhooks/{id}/test", { params: { path: { id: webhook.id } } }));
    deliveries.reload();
    return "Test event queued.";
  };
  return (
    <Page title={webhook.url}>
      <dl class="facts">
        <dt>Events</dt>
        <dd>{webhook.events.join(", ") || "all"}</dd>
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
      <Messages error={action.error} notice={action.notice} />
      <div class="actions">
        <ActionButton action={action} disabled={!webhook.enabled} onClick={sendTest}>
          Send test event
        </ActionButton>
      </div>
      <h2>Deliveries</h2>
      <Choice label="Status" any="Any" options={DELIVERY_STATUSES} value={status} onChange={setStatus} />
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
        ]}
      />
    </Page>
  );
}
