import { useState } from "preact/hooks";
import { api, type Contact, call } from "../api/client";
import { useList } from "../api/lists";
import { ActionForm, DeleteButton } from "../components/actions";
import { DataRows, type DataRow, dataOf, rowsOf } from "../components/crm-data-rows";
import { downloadAnswer, today } from "../components/crm-files";
import { NamedLink, useNames } from "../components/crm-names";
import { ListPage } from "../components/data-table";
import { Choice, Field, Loading, Messages, Page } from "../components/page";
import { when } from "../format";
import { useAction, useItem, useLoad } from "../hooks";
import { Link, navigate } from "../router";

const SUBSCRIPTIONS = ["true", "false"] as const;
const subscriptionText = (v: "true" | "false") => (v === "true" ? "Subscribed" : "Unsubscribed");

/** A contact's data in one short line for the list ("firstName: Ada, plan: pro"). */
function dataSummary(data: Record<string, unknown>): string {
  const entries = Object.entries(data);
  const shown = entries.slice(0, 3).map(([k, v]) => `${k}: ${typeof v === "object" ? JSON.stringify(v) : String(v)}`);
  return shown.join(", ") + (entries.length > 3 ? `, +${entries.length - 3}` : "");
}

export function ContactList() {
  const [search, setSearch] = useState(() => new URLSearchParams(location.search).get("search") ?? "");
  const [query, setQuery] = useState(search);
  const [subscribed, setSubscribed] = useState<"true" | "false" | "">("");
  return (
    <ListPage
      path="/contacts"
      params={{ query: { search: query || undefined, subscribed: subscribed === "" ? undefined : subscribed === "true" } }}
      count="contacts"
      actions={
        <>
          <Link class="button" href="/contacts/import">
            Import CSV
          </Link>
          <Link class="button primary" href="/contacts/new">
            New contact
          </Link>
        </>
      }
      columns={[
        { header: "Email", cell: (c) => c.email, link: true },
        { header: "Subscribed", cell: (c) => (c.subscribed ? "yes" : "no") },
        { header: "Data", cell: (c) => dataSummary(c.data) },
        { header: "Created", cell: (c) => when(c.createdAt) },
      ]}
    >
      <search class="crm-filters">
        <form
          class="inline"
          onSubmit={(e) => {
            e.preventDefault();
            setQuery(search.trim());
          }}
        >
          <Field label="Search by email">{(id) => <input id={id} type="search" value={search} onInput={(e) => setSearch(e.currentTarget.value)} />}</Field>
          <button type="submit">Search</button>
        </form>
        <Choice label="Subscription" any="Any" options={SUBSCRIPTIONS} text={subscriptionText} value={subscribed} onChange={setSubscribed} />
      </search>
      <ExportForm />
    </ListPage>
  );
}

/**
 * `GET /contacts/export` as a file: fetched with the key (a plain link could not send it) and saved.
 * "One column per data key" is `format=flat`, "For Excel" `bom=true` (a UTF-8 byte order mark, so Excel reads accents right).
 */
function ExportForm() {
  const [flat, setFlat] = useState(true);
  const [bom, setBom] = useState(false);
  const [subscribed, setSubscribed] = useState<"true" | "false" | "">("");
  const [segmentId, setSegmentId] = useState("");
  const [open, setOpen] = useState(false);
  const segments = useList("/segments", { query: { limit: 100 } });
  const action = useAction();
  const run = async () => {
    const query = {
      format: flat ? ("flat" as const) : undefined,
      bom: bom || undefined,
      subscribed: subscribed === "" ? undefined : subscribed === "true",
      segmentId: segmentId || undefined,
    };
    await downloadAnswer(api.GET("/contacts/export", { params: { query }, parseAs: "blob" }), `contacts-${today()}.csv`);
    return "Export downloaded.";
  };
  return (
    <details class="crm-export" open={open} onToggle={(e) => setOpen(e.currentTarget.open)}>
      <summary>Export contacts (CSV)</summary>
      <ActionForm class="stack" action={action} onSubmit={run}>
        <div class="crm-checks">
          <label>
            <input type="checkbox" checked={flat} onChange={(e) => setFlat(e.currentTarget.checked)} /> One column per data key
          </label>
          <label>
            <input type="checkbox" checked={bom} onChange={(e) => setBom(e.currentTarget.checked)} /> For Excel (UTF-8 BOM)
          </label>
        </div>
        <div class="filter">
          <Choice label="Only" any="Every contact" options={SUBSCRIPTIONS} text={subscriptionText} value={subscribed} onChange={setSubscribed} />
          <Field label="Segment">
            {(id) => (
              <select id={id} value={segmentId} onChange={(e) => setSegmentId(e.currentTarget.value)}>
                <option value="">Any segment</option>
                {segments.items.map((s) => (
                  <option value={s.id}>{s.name}</option>
                ))}
              </select>
            )}
          </Field>
        </div>
        <small class="crm-hint">Without "One column per data key" the data is one JSON column, and the file imports back unchanged.</small>
        <Messages error={action.error} notice={action.notice} />
        <div class="actions">
          <button type="submit" class="primary" disabled={action.busy}>
            Download CSV
          </button>
        </div>
      </ActionForm>
    </details>
  );
}

type Activity = { at: string; what: string; detail: string; href?: string; campaignId?: string | null };

/** `/contacts/new` creates a contact; `/contacts/:id` is one: its data, subscription, delete, and a timeline of its events and emails. */
export function ContactPage(props: { id: string }) {
  const state = useItem(props.id, (id) => call(api.GET("/contacts/{id}", { params: { path: { id } } })));
  if (props.id === "new") return <NewContact />;
  if (!state.data) return <Page title="Contact">{<Loading state={state} />}</Page>;
  return <ContactView contact={state.data} reload={state.reload} />;
}

/** Email, subscription (with the consent it stands for) and data rows; POST /contacts, then the contact's page. */
function NewContact() {
  const [email, setEmail] = useState("");
  const [subscribed, setSubscribed] = useState(false);
  const [rows, setRows] = useState<DataRow[]>([{ key: "firstName", value: "", type: "text" }]);
  const action = useAction();
  const create = async () => {
    const data = dataOf(rows) as Record<string, never>;
    const created = await call(api.POST("/contacts", { body: { email: email.trim(), subscribed, data } }));
    navigate(`/contacts/${created.id}`);
  };
  return (
    <Page title="New contact">
      <ActionForm class="stack crm-form" action={action} onSubmit={create}>
        <Field label="Email">{(id) => <input id={id} type="email" required value={email} onInput={(e) => setEmail(e.currentTarget.value)} />}</Field>
        <SubscribedBox checked={subscribed} onChange={setSubscribed} />
        <h2>Data</h2>
        <DataRows rows={rows} onChange={setRows} />
        <Messages error={action.error} />
        <div class="actions">
          <button type="submit" class="primary" disabled={action.busy}>
            Create contact
          </button>
          <Link class="button" href="/contacts">
            Cancel
          </Link>
        </div>
        <small class="crm-hint">An email that is already a contact updates that contact (its data is merged).</small>
      </ActionForm>
    </Page>
  );
}

function SubscribedBox(props: { checked: boolean; onChange: (checked: boolean) => void }) {
  return (
    <label class="crm-check">
      <input type="checkbox" checked={props.checked} onChange={(e) => props.onChange(e.currentTarget.checked)} /> Subscribed — they agreed to receive marketing
      from you
    </label>
  );
}

function ContactView(props: { contact: Contact; reload: () => void }) {
  const { contact } = props;
  const action = useAction();
  const [subscribed, setSubscribed] = useState(contact.subscribed);
  const [rows, setRows] = useState<DataRow[]>(() => rowsOf(contact.data ?? {}));
  const campaigns = useNames("campaigns");
  const activity = useLoad(async () => {
    const [events, emails, received] = await Promise.all([
      call(api.GET("/events", { params: { query: { contactId: contact.id, limit: 50 } } })),
      call(api.GET("/emails", { params: { query: { contactId: contact.id, limit: 50 } } })),
      call(api.GET("/inbound", { params: { query: { contactId: contact.id, limit: 50 } } })),
    ]);
    const timeline: Activity[] = [
      ...events.data.items.map((e) => ({
        at: e.createdAt,
        what: `Event ${e.name}`,
        detail: Object.keys(e.data ?? {}).length ? JSON.stringify(e.data) : "",
        href: e.emailId ? `/emails/${e.emailId}` : undefined,
      })),
      ...emails.data.items.map((e) => ({
        at: e.createdAt,
        what: `Email ${e.status.toLowerCase()}`,
        detail: e.subject,
        href: `/emails/${e.id}`,
        campaignId: e.campaignId,
      })),
      ...received.data.items.map((m) => ({
        at: m.createdAt,
        what: m.autoReply ? "Auto-reply received" : m.emailId ? "Reply received" : "Mail received",
        detail: m.subject ?? "",
        href: `/inbox/${m.id}`,
      })),
    ].sort((a, b) => b.at.localeCompare(a.at));
    return timeline;
  }, [contact.id]);
  /** PATCH merges data: a key that was removed is sent as null. */
  const save = async () => {
    const data: Record<string, unknown> = dataOf(rows);
    for (const key of Object.keys(contact.data ?? {})) if (!(key in data)) data[key] = null;
    await call(api.PATCH("/contacts/{id}", { params: { path: { id: contact.id } }, body: { subscribed, data: data as Record<string, never> } }));
    props.reload();
    return "Contact saved.";
  };
  return (
    <Page title={contact.email}>
      <dl class="facts">
        <dt>Subscribed</dt>
        <dd>{contact.subscribed ? "yes" : "no"}</dd>
        <dt>Created</dt>
        <dd>{when(contact.createdAt)}</dd>
        <dt>Updated</dt>
        <dd>{when(contact.updatedAt)}</dd>
      </dl>
      <ActionForm class="stack crm-form" action={action} onSubmit={save}>
        <h2>Subscription and data</h2>
        <SubscribedBox checked={subscribed} onChange={setSubscribed} />
        <DataRows rows={rows} onChange={setRows} />
        <Messages error={action.error} notice={action.notice} />
        <div class="actions">
          <button type="submit" class="primary" disabled={action.busy}>
            Save contact
          </button>
          <DeleteButton path="/contacts/{id}" id={contact.id} action={action} question={`Delete ${contact.email} and its events? This cannot be undone.`} />
        </div>
      </ActionForm>
      <h2>Activity</h2>
      <Loading state={activity} />
      {activity.data?.length === 0 && <p>No activity yet.</p>}
      <ol class="timeline">
        {activity.data?.map((a) => (
          <li>
            <time dateTime={a.at}>{when(a.at)}</time> <strong>{a.href ? <Link href={a.href}>{a.what}</Link> : a.what}</strong> {a.detail}
            {a.campaignId && (
              <>
                {" "}
                (campaign <NamedLink kind="campaigns" id={a.campaignId} names={campaigns} />)
              </>
            )}
          </li>
        ))}
      </ol>
    </Page>
  );
}
