import { useState } from "preact/hooks";
import { api, type Condition, call, type Segment } from "../api/client";
import { useList } from "../api/lists";
import { ConfirmButton } from "../components/buttons";
import { ConditionBuilder, emptyCondition } from "../components/conditions";
import { DataTable, ListBody } from "../components/data-table";
import { Field, Loading, Messages, Page } from "../components/page";
import { useAction, useLoad } from "../hooks";
import { Link, navigate } from "../router";

export function SegmentList() {
  const list = useList("/segments");
  return (
    <Page
      title="Segments"
      actions={
        <Link class="button primary" href="/segments/new">
          New segment
        </Link>
      }
    >
      <DataTable
        list={list}
        empty="No segments yet."
        columns={[
          { header: "Name", cell: (s) => <Link href={`/segments/${s.id}`}>{s.name}</Link> },
          { header: "Members", cell: (s) => s.memberCount },
          { header: "Description", cell: (s) => s.description ?? "" },
        ]}
      />
    </Page>
  );
}

export function SegmentPage(props: { id: string }) {
  const state = useLoad(async () => (props.id === "new" ? null : await call(api.GET("/segments/{id}", { params: { path: { id: props.id } } }))), [props.id]);
  if (props.id !== "new" && !state.data) return <Page title="Segment">{<Loading state={state} />}</Page>;
  return <SegmentEditor key={state.data?.id ?? "new"} segment={state.data ?? undefined} />;
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
  return (
    <Page title={segment ? `Segment: ${segment.name}` : "New segment"}>
      <form
        class="stack"
        onSubmit={(e) => {
          e.preventDefault();
          void action.run(async () => {
            if (segment) {
              setSegment(await call(api.PATCH("/segments/{id}", { params: { path: { id: segment.id } }, body })));
              setSaves((n) => n + 1);
              setDirty(false);
              return "Segment saved.";
            }
            const created = await call(api.POST("/segments", { body }));
            navigate(`/segments/${created.id}`);
          });
        }}
      >
        <Field label="Name">
          {(id) => (
            <input
              id={id}
              required
              value={name}
              onInput={(e) => {
                setName(e.currentTarget.value);
                setDirty(true);
              }}
            />
          )}
        </Field>
        <Field label="Description">
          {(id) => (
            <input
              id={id}
              value={description}
              onInput={(e) => {
                setDescription(e.currentTarget.value);
                setDirty(true);
              }}
            />
          )}
        </Field>
        <ConditionBuilder
          value={condition}
          onChange={(c) => {
            setCondition(c);
            setDirty(true);
          }}
        />
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
        <Messages error={action.error} notice={action.notice} />
        <div class="actions">
          <button type="submit" class="primary" disabled={action.busy}>
            {segment ? "Save and count" : "Create and count"}
          </button>
          {segment && (
            <ConfirmButton
              label="Delete segment"
              question={`Delete the segment "${segment.name}"? Campaigns that target it can no longer be sent.`}
              confirmLabel="Delete"
              onConfirm={() =>
                void action.run(async () => {
                  await call(api.DELETE("/segments/{id}", { params: { path: { id: segment.id } } }));
                  navigate("/segments");
                })
              }
            />
          )}
        </div>
      </form>
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
