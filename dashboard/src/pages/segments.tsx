import { useState } from "preact/hooks";
import { api, call, type Condition, type Segment } from "../api/client";
import { useList } from "../api/lists";
import { type Action, ActionButton, ActionForm, FormActions } from "../components/actions";
import { ConditionBuilder, emptyCondition } from "../components/conditions";
import { type Column, ListBody, ListPage } from "../components/data-table";
import { Field, Loading, Messages, Page } from "../components/page";
import { useAction, useItem } from "../hooks";
import { Link, navigate } from "../router";

/** The list's columns: the name links to the segment. */
const COLUMNS: Column<Segment>[] = [
  { header: "Name", cell: (s) => s.name, link: true },
  { header: "Type", cell: (s) => (s.type === "STATIC" ? "List" : "Condition") },
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
  const [type, setType] = useState<"DYNAMIC" | "STATIC">(segment?.type ?? "DYNAMIC");
  const isStatic = type === "STATIC";
  const [dirty, setDirty] = useState(false);
  const action = useAction();
  // The member list is remounted after each change; the outcome of a removal lives here so it outlasts that.
  const membersAction = useAction();
  const [saves, setSaves] = useState(0);
  const body = { name, description: description || null, ...(isStatic ? {} : { condition }) };
  const save = async () => {
    if (segment) {
      setSegment(await call(api.PATCH("/segments/{id}", { params: { path: { id: segment.id } }, body })));
      setSaves((n) => n + 1);
      setDirty(false);
      return "Segment saved.";
    }
    navigate(`/segments/${(await call(api.POST("/segments", { body: { ...body, type } }))).id}`);
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
        {segment ? null : (
          <fieldset class="segment-type">
            <legend>Members</legend>
            <label>
              <input type="radio" name="segment-type" checked={!isStatic} onChange={() => setType("DYNAMIC")} /> Contacts matching a condition
            </label>
            <label>
              <input type="radio" name="segment-type" checked={isStatic} onChange={() => setType("STATIC")} /> A list: members added by email
            </label>
          </fieldset>
        )}
        {isStatic ? null : <ConditionBuilder value={condition} onChange={edit(setCondition)} />}
        <p class="count" aria-live="polite">
          {segment && isStatic ? (
            <>
              <strong data-testid="member-count">{segment.memberCount}</strong> {segment.memberCount === 1 ? "member" : "members"}.
            </>
          ) : segment ? (
            <>
              <strong data-testid="member-count">{segment.memberCount}</strong> {segment.memberCount === 1 ? "contact matches" : "contacts match"}
              {dirty ? " the saved condition: save to count the changes." : "."}
            </>
          ) : isStatic ? (
            "Create the list, then add its members."
          ) : (
            "Create the segment to count its members."
          )}
        </p>
        <FormActions
          action={action}
          submit={isStatic ? (segment ? "Save" : "Create list") : segment ? "Save and count" : "Create and count"}
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
          {isStatic && (
            <AddMembers
              segmentId={segment.id}
              onChange={async () => {
                setSegment(await call(api.GET("/segments/{id}", { params: { path: { id: segment.id } } })));
                setSaves((n) => n + 1);
              }}
            />
          )}
          <Members
            key={saves}
            segmentId={segment.id}
            action={membersAction}
            onRemove={
              isStatic
                ? async (email) => {
                    const { removed } = await call(api.DELETE("/segments/{id}/members", { params: { path: { id: segment.id } }, body: { emails: [email] } }));
                    setSegment(await call(api.GET("/segments/{id}", { params: { path: { id: segment.id } } })));
                    setSaves((n) => n + 1);
                    return removed === 1 ? `${email} removed.` : `${email} was not a member.`;
                  }
                : undefined
            }
          />
        </>
      )}
    </Page>
  );
}

/** The API takes at most this many addresses per members call. */
const MEMBERS_PER_CALL = 500;

/** Addresses pasted one per line, or separated by commas, semicolons or spaces. */
const addressesOf = (text: string) => [
  ...new Set(
    text
      .split(/[\s,;]+/)
      .map((a) => a.trim())
      .filter(Boolean),
  ),
];

/** A static segment's "add members": pasted addresses, sent 500 per request; what was added and what had no contact. */
function AddMembers(props: { segmentId: string; onChange: () => Promise<void> }) {
  const [text, setText] = useState("");
  const [createMissing, setCreateMissing] = useState(false);
  const action = useAction();
  const add = async () => {
    const emails = addressesOf(text);
    if (emails.length === 0) throw new Error("Paste at least one email address.");
    let added = 0;
    const missing: string[] = [];
    for (let i = 0; i < emails.length; i += MEMBERS_PER_CALL) {
      const result = await call(
        api.POST("/segments/{id}/members", {
          params: { path: { id: props.segmentId } },
          body: { emails: emails.slice(i, i + MEMBERS_PER_CALL), createMissing },
        }),
      );
      added += result.added;
      missing.push(...result.missing);
    }
    setText("");
    await props.onChange();
    return `${added} added.${missing.length > 0 ? ` No contact for: ${missing.join(", ")}.` : ""}`;
  };
  return (
    <ActionForm class="stack add-members" action={action} onSubmit={add}>
      <Field label="Add members (email addresses, one per line or separated by commas)">
        {(id) => <textarea id={id} rows={4} value={text} onInput={(e) => setText(e.currentTarget.value)} />}
      </Field>
      <label class="checkbox">
        <input type="checkbox" checked={createMissing} onChange={(e) => setCreateMissing(e.currentTarget.checked)} /> Create a contact for an address that has
        none
      </label>
      <FormActions action={action} submit="Add members" />
    </ActionForm>
  );
}

/** A segment's members, 20 at a time; read again after each save (the key changes). A list's can be removed one by one. */
function Members(props: { segmentId: string; action: Action; onRemove?: (email: string) => Promise<string> }) {
  const members = useList("/segments/{id}/contacts", { path: { id: props.segmentId }, query: { limit: 20 } });
  const action = props.action;
  return (
    <>
      <Messages error={action.error} notice={action.notice} />
      <ListBody list={members} empty={props.onRemove ? "No members yet." : "No contacts match."}>
        {(items) => (
          <ul class="plain members">
            {items.map((c) => (
              <li>
                <Link href={`/contacts/${c.id}`}>{c.email}</Link>
                {c.subscribed ? "" : " (unsubscribed)"}
                {props.onRemove && (
                  <ActionButton action={action} class="link" onClick={() => props.onRemove!(c.email)}>
                    Remove <span class="visually-hidden">{c.email}</span>
                  </ActionButton>
                )}
              </li>
            ))}
          </ul>
        )}
      </ListBody>
    </>
  );
}
