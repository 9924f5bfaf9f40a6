import { useState } from "preact/hooks";
import { api, call } from "../api/client";
import { ListPage } from "../components/data-table";
import { Choice } from "../components/page";
import { when } from "../format";
import { useLoad } from "../hooks";
import { Link } from "../router";

export function EventList() {
  const [name, setName] = useState("");
  const names = useLoad(async () => (await call(api.GET("/events/names"))).data, []);
  const text = (n: string) => `${n} (${names.data?.counts?.[n] ?? 0})`;
  return (
    <ListPage
      path="/events"
      params={{ query: { name: name || undefined } }}
      columns={[
        { header: "Event", cell: (e) => e.name },
        { header: "Contact", cell: (e) => (e.contactId ? <Link href={`/contacts/${e.contactId}`}>{e.email ?? "a deleted contact"}</Link> : (e.email ?? "—")) },
        { header: "Email", cell: (e) => (e.emailId ? <Link href={`/emails/${e.emailId}`}>View email</Link> : "—") },
        { header: "Data", cell: (e) => <code>{Object.keys(e.data ?? {}).length ? JSON.stringify(e.data) : ""}</code> },
        { header: "When", cell: (e) => when(e.createdAt) },
      ]}
    >
      <Choice label="Event name" any="All events" options={names.data?.items ?? []} text={text} value={name} onChange={setName} />
    </ListPage>
  );
}
