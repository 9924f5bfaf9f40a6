import { useState } from "preact/hooks";
import { api, call } from "../api/client";
import { Link } from "../router";
import { Field, Loading, More, Page, useLoad, usePaged, when } from "../ui";

export function EventList() {
  const [name, setName] = useState("");
  const names = useLoad(async () => (await call(api.GET("/events/names"))).data, []);
  const list = usePaged(
    async (cursor) => {
      const page = (await call(api.GET("/events", { params: { query: { limit: 50, cursor, name: name || undefined } } }))).data;
      return { items: page.items, next: page.nextCursor, total: page.total };
    },
    [name],
  );
  return (
    <Page title="Events">
      <Field label="Event name">
        {(id) => (
          <select id={id} value={name} onChange={(e) => setName(e.currentTarget.value)}>
            <option value="">All events</option>
            {(names.data?.items ?? []).map((n) => (
              <option value={n}>
                {n} ({names.data?.counts?.[n] ?? 0})
              </option>
            ))}
          </select>
        )}
      </Field>
      <Loading state={list} />
      {!list.loading && list.items.length === 0 && <p>No events.</p>}
      {list.items.length > 0 && (
        <table>
          <thead>
            <tr>
              <th scope="col">Event</th>
              <th scope="col">Contact</th>
              <th scope="col">Data</th>
              <th scope="col">When</th>
            </tr>
          </thead>
          <tbody>
            {list.items.map((e) => (
              <tr>
                <td>{e.name}</td>
                <td>{e.contactId ? <Link href={`/contacts/${e.contactId}`}>{e.email ?? e.contactId}</Link> : "—"}</td>
                <td>
                  <code>{Object.keys(e.data ?? {}).length ? JSON.stringify(e.data) : ""}</code>
                </td>
                <td>{when(e.createdAt)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <More hasMore={list.hasMore} onMore={list.more} busy={list.loading} />
    </Page>
  );
}
