import { useState } from "preact/hooks";
import { api, call, type Domain } from "../api/client";
import { ActionButton, ActionForm, CopyButton, DeleteButton } from "../components/actions";
import { ListPage } from "../components/data-table";
import { Field, Loading, Messages, Page, Status } from "../components/page";
import { when } from "../format";
import { useAction, useLoad } from "../hooks";
import { navigate } from "../router";

export function DomainList() {
  const [name, setName] = useState("");
  const action = useAction();
  const add = async () => navigate(`/domains/${(await call(api.POST("/domains", { body: { domain: name } }))).id}`);
  return (
    <ListPage
      path="/domains"
      columns={[
        { header: "Domain", cell: (d) => d.domain, link: true },
        { header: "Status", cell: (d) => <Status value={d.status} /> },
        { header: "Last checked", cell: (d) => when(d.lastCheckedAt) },
      ]}
    >
      <ActionForm class="inline" action={action} onSubmit={add}>
        <Field label="Add a sending domain">
          {(id) => <input id={id} required placeholder="example.com" value={name} onInput={(e) => setName(e.currentTarget.value)} />}
        </Field>
        <button type="submit" disabled={action.busy}>
          Add domain
        </button>
      </ActionForm>
      <Messages error={action.error} />
    </ListPage>
  );
}

export function DomainPage(props: { id: string }) {
  const state = useLoad(async () => await call(api.GET("/domains/{id}", { params: { path: { id: props.id } } })), [props.id]);
  const [checked, setChecked] = useState<Domain | null>(null);
  const action = useAction();
  const domain = checked ?? state.data;
  if (!domain) return <Page title="Domain">{<Loading state={state} />}</Page>;
  const check = async () => {
    const result = await call(api.POST("/domains/{id}/verify", { params: { path: { id: domain.id } } }));
    setChecked(result);
    return `Checked: ${result.status}.`;
  };
  return (
    <Page title={domain.domain} actions={<Status value={domain.status} />}>
      <p>
        Last checked {when(domain.lastCheckedAt)}; next background check {when(domain.nextCheckAt)}.
      </p>
      <div class="actions">
        <ActionButton class="primary" action={action} onClick={check}>
          Check now
        </ActionButton>
        <DeleteButton
          path="/domains/{id}"
          id={domain.id}
          verb="Remove"
          action={action}
          question={`Remove ${domain.domain}? Mail from it can no longer be sent.`}
        />
      </div>
      <Messages error={action.error} notice={action.notice} />
      <DomainTracking domain={domain} onSaved={setChecked} />
      <h2>DNS records</h2>
      <div class="records">
        {domain.records.map((r) => (
          <article class="record">
            <h3>
              {r.purpose} <small>{r.type}</small> <Status value={r.status} /> {r.required ? "" : <small>(recommended)</small>}
            </h3>
            <div class="copyline">
              <span>Name</span> <code>{r.name}</code> <CopyButton text={r.name} label={`${r.purpose} record name`} />
            </div>
            <div class="copyline">
              <span>Value</span> <code>{r.value}</code> <CopyButton text={r.value} label={`${r.purpose} record value`} />
            </div>
            {r.priority !== undefined && (
              <div class="copyline">
                <span>Priority</span> <code>{r.priority}</code>
              </div>
            )}
            {r.detail && <p class="detail">{r.detail}</p>}
          </article>
        ))}
      </div>
    </Page>
  );
}

/** The domain's tracking: opens and clicks on or off, and a custom tracking hostname with the CNAME it needs. */
function DomainTracking(props: { domain: Domain; onSaved: (d: Domain) => void }) {
  const d = props.domain;
  const [draft, setDraft] = useState({ openTracking: d.openTracking, clickTracking: d.clickTracking, trackingHostname: d.trackingHostname ?? "" });
  const action = useAction();
  const save = async () => {
    const saved = await call(
      api.PATCH("/domains/{id}", {
        params: { path: { id: d.id } },
        body: { openTracking: draft.openTracking, clickTracking: draft.clickTracking, trackingHostname: draft.trackingHostname.trim() || null },
      }),
    );
    props.onSaved(saved);
    return "Tracking saved.";
  };
  return (
    <>
      <h2>Tracking</h2>
      <ActionForm class="stack" action={action} onSubmit={save}>
        <p class="detail">The project's tracking mode and a send's own choice still apply; these switches turn tracking off for this domain's mail.</p>
        <label class="check">
          <input type="checkbox" checked={draft.openTracking} onChange={(e) => setDraft({ ...draft, openTracking: e.currentTarget.checked })} /> Track opens (an
          invisible image in each email)
        </label>
        <label class="check">
          <input type="checkbox" checked={draft.clickTracking} onChange={(e) => setDraft({ ...draft, clickTracking: e.currentTarget.checked })} /> Track clicks
          (links go through this service; off: every link exactly as written)
        </label>
        <Field label="Tracking hostname" hint={`A subdomain of ${d.domain}, so tracked links and the pixel use your own name. Leave empty for none.`}>
          {(id) => (
            <input
              id={id}
              placeholder={`track.${d.domain}`}
              value={draft.trackingHostname}
              onInput={(e) => setDraft({ ...draft, trackingHostname: e.currentTarget.value })}
            />
          )}
        </Field>
        {d.trackingHostname && (
          <article class="record">
            <h3>
              Tracking <small>CNAME</small> {d.trackingStatus && <Status value={d.trackingStatus} />}
            </h3>
            <div class="copyline">
              <span>Name</span> <code>{d.trackingHostname}</code> <CopyButton text={d.trackingHostname} label="tracking record name" />
            </div>
            {d.trackingCname && (
              <div class="copyline">
                <span>Value</span> <code>{d.trackingCname}</code> <CopyButton text={d.trackingCname} label="tracking record value" />
              </div>
            )}
          </article>
        )}
        <Messages error={action.error} notice={action.notice} />
        <div class="actions">
          <button type="submit" class="primary" disabled={action.busy}>
            Save tracking
          </button>
        </div>
      </ActionForm>
    </>
  );
}
