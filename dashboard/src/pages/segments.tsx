import { useState } from "preact/hooks";
import { api, type Condition, call, type Segment } from "../api/client";
import { ConditionBuilder, emptyCondition } from "../conditions";
import { Link, navigate } from "../router";
import { ConfirmButton, Field, Loading, Messages, More, Page, useAction, useLoad, usePaged } from "../ui";

export function SegmentList() {
  const list = usePaged(async (cursor) => {
    const page = (await call(api.GET("/segments", { params: { query: { limit: 50, cursor } } }))).data;
    return { items: page.items, next: page.nextCursor, total: page.total };
  }, []);
  return (
    <Page
      title="Segments"
      actions={
        <Link class="button primary" href="/segments/new">
          New segment
        </Link>
      }
    >
      <Loading state={list} />
      {!list.loading && list.items.length === 0 && <p>No segments yet.</p>}
      {list.items.length > 0 && (
        <table>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Members</th>
              <th scope="col">Description</th>
            </tr>
          </thead>
          <tbody>
            {list.items.map((s) => (
              <tr>
                <td>
                  <Link href={`/segments/${s.id}`}>{s.name}</Link>
                </td>
                <td>{s.memberCount}</td>
                <td>{s.description ?? ""}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <More hasMore={list.hasMore} onMore={list.more} busy={list.loading} />
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
  const members = usePaged(
    async (cursor) => {
      if (!segment) return { items: [], next: null };
      const page = (await call(api.GET("/segments/{id}/contacts", { params: { path: { id: segment.id }, query: { limit: 20, cursor } } }))).data;
      return { items: page.items, next: page.nextCursor, total: page.total };
    },
    [segment],
  );
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
          <ul class="plain">
            {members.items.map((c) => (
              <li>
                <Link href={`/contacts/${c.id}`}>{c.email}</Link>
                {c.subscribed ? "" : " (unsubscribed)"}
              </li>
            ))}
          </ul>
          <More hasMore={members.hasMore} onMore={members.more} busy={members.loading} />
        </>
      )}
    </Page>
  );
}
