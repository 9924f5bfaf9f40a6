import { useState } from "preact/hooks";
import { api, call, type Schemas } from "../api/client";
import { ActionForm, FormActions } from "../components/actions";
import { type Column, ListPage } from "../components/data-table";
import { Field, Loading, Page } from "../components/page";
import { useAction, useItem } from "../hooks";
import { navigate } from "../router";

type Topic = Schemas["Topic"];

/** The list's columns: the name links to the topic. */
const COLUMNS: Column<Topic>[] = [
  { header: "Name", cell: (t) => t.name, link: true },
  { header: "Key", cell: (t) => t.key },
  { header: "Default", cell: (t) => (t.defaultSubscription === "OPT_IN" ? "Opted in" : "Opted out") },
  { header: "Visibility", cell: (t) => (t.visibility === "PUBLIC" ? "Public" : "Private") },
  { header: "Double opt-in", cell: (t) => (t.doubleOptIn ? "Yes" : "No") },
];

export const TopicList = () => (
  <ListPage path="/topics" create columns={COLUMNS} empty="No topics yet. A topic lets contacts choose what they receive on their preference page." />
);

export function TopicPage(props: { id: string }) {
  const state = useItem(props.id, (id) => call(api.GET("/topics/{id}", { params: { path: { id } } })));
  return state.ready ? <TopicEditor topic={state.item} /> : <Page title="Topic">{<Loading state={state} />}</Page>;
}

/** Create or edit a topic: its key and default are fixed once it exists (the API refuses a change). */
function TopicEditor(props: { topic?: Topic }) {
  const [topic, setTopic] = useState(props.topic);
  const [key, setKey] = useState(topic?.key ?? "");
  const [name, setName] = useState(topic?.name ?? "");
  const [description, setDescription] = useState(topic?.description ?? "");
  const [defaultSubscription, setDefault] = useState<Topic["defaultSubscription"]>(topic?.defaultSubscription ?? "OPT_IN");
  const [visibility, setVisibility] = useState<Topic["visibility"]>(topic?.visibility ?? "PUBLIC");
  const [doubleOptIn, setDoubleOptIn] = useState(topic?.doubleOptIn ?? false);
  const action = useAction();
  const save = async () => {
    const common = { name, description: description || null, visibility, doubleOptIn };
    if (topic) {
      setTopic(await call(api.PATCH("/topics/{id}", { params: { path: { id: topic.id } }, body: common })));
      return "Topic saved.";
    }
    navigate(`/topics/${(await call(api.POST("/topics", { body: { ...common, key, defaultSubscription } }))).id}`);
  };
  return (
    <Page title={topic ? `Topic: ${topic.name}` : "New topic"}>
      <ActionForm class="stack" action={action} onSubmit={save}>
        <Field label="Key" hint="Lower-case letters, digits, - and _; it cannot be changed later. Sends name the topic by it.">
          {(id) => (
            <input
              id={id}
              required
              pattern="[a-z0-9][a-z0-9_\-]{0,49}"
              maxLength={50}
              value={key}
              disabled={Boolean(topic)}
              onInput={(e) => setKey(e.currentTarget.value)}
            />
          )}
        </Field>
        <Field label="Name">{(id) => <input id={id} required maxLength={50} value={name} onInput={(e) => setName(e.currentTarget.value)} />}</Field>
        <Field label="Description">
          {(id) => <input id={id} maxLength={200} value={description} onInput={(e) => setDescription(e.currentTarget.value)} />}
        </Field>
        <Field
          label="Default subscription"
          hint="Opted in: every subscribed contact gets it until they opt out. Opted out: only contacts who opt in. Fixed once created."
        >
          {(id) => (
            <select
              id={id}
              value={defaultSubscription}
              disabled={Boolean(topic)}
              onChange={(e) => setDefault(e.currentTarget.value as Topic["defaultSubscription"])}
            >
              <option value="OPT_IN">Opted in</option>
              <option value="OPT_OUT">Opted out</option>
            </select>
          )}
        </Field>
        <Field label="Visibility" hint="Public topics are on every contact's preference page; a private one only for contacts in it.">
          {(id) => (
            <select id={id} value={visibility} onChange={(e) => setVisibility(e.currentTarget.value as Topic["visibility"])}>
              <option value="PUBLIC">Public</option>
              <option value="PRIVATE">Private</option>
            </select>
          )}
        </Field>
        <label class="check">
          <input type="checkbox" checked={doubleOptIn} onChange={(e) => setDoubleOptIn(e.currentTarget.checked)} /> Double opt-in: an opt-in through the API
          waits for the contact's confirmation
        </label>
        <FormActions
          action={action}
          submit={topic ? "Save" : "Create"}
          remove={topic && { path: "/topics/{id}", id: topic.id, question: `Delete the topic "${topic.name}" and every contact's choice for it?` }}
        />
      </ActionForm>
    </Page>
  );
}
