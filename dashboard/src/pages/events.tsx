import { useState } from "preact/hooks";
import { api, call } from "../api/client";
import { useList } from "../api/lists";
import { DataTable } from "../components/data-table";
import { Field, Page } from "../components/page";
import { when } from "../format";
import { useLoad } from "../hooks";
import { Link } from "../router";

export function EventList() {
  const [name, setName] = useState("");
  const names = useLoad(async () => (await call(api.GET("/events/names"))).data, []);
  const list = useList("/events", { query: { name: name || undefined } });
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
      <DataTable
        list={list}
        empty="No events."
        columns={[
          { header: "Event", cell: (e) => e.name },
          { header: "Contact", cell: (e) => (e.contactId ? <Link href={`/contacts/${e.contactId}`}>{e.email ?? e.contactId}</Link> : "—") },
          { header: "Data", cell: (e) => <code>{Object.keys(e.data ?? {}).length ? JSON.stringify(e.data) : ""}</code> },
          { header: "When", cell: (e) => when(e.createdAt) },
        ]}
      />
    </Page>
  );
}
