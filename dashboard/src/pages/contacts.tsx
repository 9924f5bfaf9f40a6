import { useState } from "preact/hooks";
import { api, call } from "../api/client";
import { ActionButton, DeleteButton } from "../components/actions";
import { ListPage } from "../components/data-table";
import { Field, Loading, Messages, Page } from "../components/page";
import { when } from "../format";
import { useAction, useLoad } from "../hooks";
import { Link } from "../router";

export function ContactList() {
  const [search, setSearch] = useState(() => new URLSearchParams(location.search).get("search") ?? "");
  const [query, setQuery] = useState(search);
  return (
    <ListPage
      path="/contacts"
      params={{ query: { search: query || undefined } }}
      count="contacts"
      columns={[
        { header: "Email", cell: (c) => c.email, link: true },
        { header: "Subscribed", cell: (c) => (c.subscribed ? "yes" : "no") },
        { header: "Created", cell: (c) => when(c.createdAt) },
      ]}
    >
      <search>
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
      </search>
    </ListPage>
  );
}

type Activity = { at: string; what: string; detail: string; href?: string };

/** A contact: its data, subscription, and a timeline of its events and emails (newest first). */
export function ContactPage(props: { id: string }) {
  const action = useAction();
  const state = useLoad(async () => {
    const path = { path: { id: props.id } };
    const [contact, events, emails] = await Promise.all([
      call(api.GET("/contacts/{id}", { params: path })),
      call(api.GET("/events", { params: { query: { contactId: props.id, limit: 50 } } })),
      call(api.GET("/emails", { params: { query: { contactId: props.id, limit: 50 } } })),
    ]);
    const timeline: Activity[] = [
      ...events.data.items.map((e) => ({ at: e.createdAt, what: `Event ${e.name}`, detail: Object.keys(e.data ?? {}).length ? JSON.stringify(e.data) : "" })),
      ...emails.data.items.map((e) => ({ at: e.createdAt, what: `Email ${e.status.toLowerCase()}`, detail: e.subject, href: `/emails/${e.id}` })),
    ].sort((a, b) => b.at.localeCompare(a.at));
    return { contact, timeline };
  }, [props.id]);
  if (!state.data) return <Page title="Contact">{<Loading state={state} />}</Page>;
  const { contact, timeline } = state.data;
  const toggle = () =>
    call(api.PATCH("/contacts/{id}", { params: { path: { id: contact.id } }, body: { subscribed: !contact.subscribed } })).then(() => state.reload());
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
      <h2>Data</h2>
      <pre class="mono">{JSON.stringify(contact.data, null, 2)}</pre>
      <Messages error={action.error} notice={action.notice} />
      <div class="actions">
        <ActionButton action={action} onClick={toggle}>
          {contact.subscribed ? "Unsubscribe" : "Subscribe"}
        </ActionButton>
        <DeleteButton path="/contacts/{id}" id={contact.id} action={action} question={`Delete ${contact.email} and its events? This cannot be undone.`} />
      </div>
      <h2>Activity</h2>
      {timeline.length === 0 && <p>No activity yet.</p>}
      <ol class="timeline">
        {timeline.map((a) => (
          <li>
            <time dateTime={a.at}>{when(a.at)}</time> <strong>{a.href ? <Link href={a.href}>{a.what}</Link> : a.what}</strong> {a.detail}
          </li>
        ))}
      </ol>
    </Page>
  );
}
