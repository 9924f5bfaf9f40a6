import { useState } from "preact/hooks";
import { api, call, type Condition, type Segment } from "../api/client";
import { useList } from "../api/lists";
import { ActionForm, FormActions } from "../components/actions";
import { ConditionBuilder, emptyCondition } from "../components/conditions";
import { type Column, ListBody, ListPage } from "../components/data-table";
import { Field, Loading, Page } from "../components/page";
import { useAction, useItem } from "../hooks";
import { Link, navigate } from "../router";

/** The list's columns: the name links to the segment. */
const COLUMNS: Column<Segment>[] = [
  { header: "Name", cell: (s) => s.name, link: true },
  { header: "Members", cell: (s) => s.memberCount },
  { header: "Description", cell: (s) => s.description ?? "" },
];

export const SegmentList = () => <ListPage path="/segments" create columns={COLUMNS} />;

export function SegmentPage(props: { id: string }) {
  const state = useItem(props.id, (id) => call(api.GET("/segments/{id}", { params: { path: { id } } })));
  return state.ready ? <SegmentEditor segment={state.item} /> : <Page title="Segment">{<Loading state={state} />}</Page>;
}

/**
 * The API counts a segment's members when it is read (memberCount is live), and has no
 * endpoint that counts an unsaved condition: each save (PATCH) answers with the new count.
 */
function SegmentEditor(props: { segment?: Segment }) {
  const [segment, setSegment] = useState(props.segment);
  const [name, setName] = useState(segment?.name ?? "");
  const [description, setDescription] = useState(segment?.description ?? "");
  const [condition, setCondition] = useState<Condition>(segment?.condition ?? emptyCondition());
  const [dirty, setDirty] = useState(false);
  const action = useAction();
  const [saves, setSaves] = useState(0);
  const body = { name, description: description || null, condition };
  const save = async () => {
    if (segment) {
      setSegment(await call(api.PATCH("/segments/{id}", { params: { path: { id: segment.id } }, body })));
      setSaves((n) => n + 1);
      setDirty(false);
      return "Segment saved.";
    }
    navigate(`/segments/${(await call(api.POST("/segments", { body }))).id}`);
  };
  /** An edit of the form: the saved count no longer answers it. */
  const edit =
    <V,>(set: (value: V) => void) =>
    (value: V) => {
      set(value);
      setDirty(true);
    };
  return (
    <Page title={segment ? `Segment: ${segment.name}` : "New segment"}>
      <ActionForm class="stack" action={action} onSubmit={save}>
        <Field label="Name">{(id) => <input id={id} required value={name} onInput={(e) => edit(setName)(e.currentTarget.value)} />}</Field>
        <Field label="Description">{(id) => <input id={id} value={description} onInput={(e) => edit(setDescription)(e.currentTarget.value)} />}</Field>
        <ConditionBuilder value={condition} onChange={edit(setCondition)} />
        <p class="count" aria-live="polite">
          {segment ? (
            <>
              <strong data-testid="member-count">{segment.memberCount}</strong> {segment.memberCount === 1 ? "contact matches" : "contacts match"}
              {dirty ? " the saved condition: save to count the changes." : "."}
            </>
          ) : (
            "Create the segment to count its members."
          )}
        </p>
        <FormActions
          action={action}
          submit={segment ? "Save and count" : "Create and count"}
          remove={
            segment && {
              path: "/segments/{id}",
              id: segment.id,
              question: `Delete the segment "${segment.name}"? Campaigns that target it can no longer be sent.`,
            }
          }
        />
      </ActionForm>
      {segment && (
        <>
          <h2>Members</h2>
          <Members key={saves} segmentId={segment.id} />
        </>
      )}
    </Page>
  );
}

/** A segment's members, 20 at a time; read again after each save (the key changes). */
function Members(props: { segmentId: string }) {
  const members = useList("/segments/{id}/contacts", { path: { id: props.segmentId }, query: { limit: 20 } });
  return (
    <ListBody list={members} empty="No contacts match.">
      {(items) => (
        <ul class="plain">
          {items.map((c) => (
            <li>
              <Link href={`/contacts/${c.id}`}>{c.email}</Link>
              {c.subscribed ? "" : " (unsubscribed)"}
            </li>
          ))}
        </ul>
      )}
    </ListBody>
  );
}
