import { useState } from "preact/hooks";
import { api, call, type Schemas } from "../api/client";
import { useList } from "../api/lists";
import { ActionForm, ConfirmButton } from "../components/actions";
import { DataTable } from "../components/data-table";
import { Choice, Field, Messages, Page } from "../components/page";
import { when } from "../format";
import { useAction } from "../hooks";

type Suppression = Schemas["Suppression"];
type Reason = Suppression["reason"];

const REASONS: readonly Reason[] = ["BOUNCE", "COMPLAINT", "UNSUBSCRIBE", "MANUAL"];
const REASON_TEXT: Record<Reason, string> = {
  BOUNCE: "Bounced",
  COMPLAINT: "Marked as spam",
  UNSUBSCRIBE: "Unsubscribed",
  MANUAL: "Added by hand",
};
const STREAM_TEXT: Record<Suppression["stream"], string> = { ALL: "All mail", BROADCAST: "Broadcast only" };

/** Most addresses one request takes (POST /suppressions). */
const MAX_PER_REQUEST = 1000;

/** The addresses typed or pasted: one per line, or separated by commas, semicolons or spaces. */
const addressesOf = (text: string) => [
  ...new Set(
    text
      .split(/[\s,;]+/)
      .map((a) => a.trim().toLowerCase())
      .filter(Boolean),
  ),
];

/**
 * The project's suppression list (GET /suppressions): filtered by reason and address, addresses added with a
 * note (POST /suppressions, up to 1000 at a time) and removed (DELETE /suppressions/{email}).
 */
export function SuppressionList() {
  const [reason, setReason] = useState<Reason | "">("");
  const [search, setSearch] = useState("");
  const [email, setEmail] = useState("");
  const list = useList("/suppressions", { query: { reason: reason || undefined, email: email || undefined } });
  const remove = useAction();
  return (
    <Page title="Suppressions">
      <p>
        No mail goes to a suppressed address on any path: sends, campaigns, workflows and test sends. Bounces, spam complaints and addresses added here stop all
        mail; an unsubscribe stops broadcast mail only, so receipts and password resets still arrive.
      </p>
      <AddForm onAdded={list.reload} />
      <h2>Suppressed addresses</h2>
      <search class="crm-filters">
        <form
          class="inline"
          onSubmit={(e) => {
            e.preventDefault();
            setEmail(search.trim().toLowerCase());
          }}
        >
          <Field label="Address, or its beginning">
            {(id) => <input id={id} type="search" value={search} onInput={(e) => setSearch(e.currentTarget.value)} />}
          </Field>
          <button type="submit">Search</button>
        </form>
        <Choice label="Reason" any="Any reason" options={REASONS} text={(r) => REASON_TEXT[r]} value={reason} onChange={setReason} />
      </search>
      <Messages error={remove.error} notice={remove.notice} />
      {list.total !== undefined && <p>{list.total === 1 ? "1 address" : `${list.total} addresses`}</p>}
      <DataTable
        list={list}
        empty={email || reason ? "No suppressed address matches." : "No suppressed addresses."}
        columns={[
          { header: "Address", cell: (s) => s.email },
          { header: "Reason", cell: (s) => REASON_TEXT[s.reason] },
          { header: "Stops", cell: (s) => STREAM_TEXT[s.stream] },
          { header: "Note", cell: (s) => s.note ?? "" },
          { header: "Added", cell: (s) => when(s.createdAt) },
          {
            header: "Remove",
            cell: (s) => (
              <ConfirmButton
                label="Remove"
                ariaLabel={`Remove ${s.email}`}
                question={`Remove ${s.email} from the suppression list? ${
                  s.reason === "UNSUBSCRIBE" ? "The contact stays unsubscribed until it subscribes again." : "Mail to it will be sent again."
                }`}
                confirmLabel="Remove"
                disabled={remove.busy}
                onConfirm={() =>
                  void remove.run(async () => {
                    await call(api.DELETE("/suppressions/{email}", { params: { path: { email: s.email } } }));
                    list.reload();
                    return `${s.email} removed.`;
                  })
                }
              />
            ),
          },
        ]}
      />
    </Page>
  );
}

/** Addresses pasted in, with a note: MANUAL entries for every stream. */
function AddForm(props: { onAdded: () => void }) {
  const [text, setText] = useState("");
  const [note, setNote] = useState("");
  const action = useAction();
  const add = async () => {
    const emails = addressesOf(text);
    if (emails.length === 0) throw new Error("Enter at least one address.");
    if (emails.length > MAX_PER_REQUEST) throw new Error(`At most ${MAX_PER_REQUEST} addresses at a time (${emails.length} entered).`);
    const { added } = await call(api.POST("/suppressions", { body: { emails, note: note.trim() || undefined } }));
    setText("");
    setNote("");
    props.onAdded();
    const already = emails.length - added;
    return `${added === 1 ? "1 address" : `${added} addresses`} suppressed${already > 0 ? ` (${already} already on the list)` : ""}.`;
  };
  return (
    <ActionForm class="stack crm-form" action={action} onSubmit={add}>
      <h2>Suppress addresses</h2>
      <Field label="Addresses" hint={`One per line, or separated by commas; up to ${MAX_PER_REQUEST}.`}>
        {(id) => <textarea id={id} rows={3} value={text} onInput={(e) => setText(e.currentTarget.value)} required />}
      </Field>
      <Field label="Note (optional)">{(id) => <input id={id} value={note} maxLength={500} onInput={(e) => setNote(e.currentTarget.value)} />}</Field>
      <Messages error={action.error} notice={action.notice} />
      <div class="actions">
        <button type="submit" class="primary" disabled={action.busy}>
          Suppress
        </button>
      </div>
    </ActionForm>
  );
}
