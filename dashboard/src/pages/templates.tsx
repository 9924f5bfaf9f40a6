import { useState } from "preact/hooks";
import { api, type Contact, call, type Template } from "../api/client";
import { ActionForm, FormActions } from "../components/actions";
import { type Column, ListPage } from "../components/data-table";
import { Field, Loading, Page } from "../components/page";
import { PreviewPane } from "../components/preview-pane";
import { ContactPicker } from "../editor-contact-picker";
import { BodyEditor } from "../editor-visual";
import { when } from "../format";
import { useAction, useItem } from "../hooks";
import { SAMPLE_DATA } from "../preview";
import { navigate } from "../router";

/** The list's columns: the name links to the template. */
const COLUMNS: Column<Template>[] = [
  { header: "Name", cell: (t) => t.name, link: true },
  { header: "Type", cell: (t) => t.type },
  { header: "Subject", cell: (t) => t.subject },
  { header: "Updated", cell: (t) => when(t.updatedAt) },
];

export const TemplateList = () => <ListPage path="/templates" create columns={COLUMNS} />;

export function TemplatePage(props: { id: string }) {
  const state = useItem(props.id, (id) => call(api.GET("/templates/{id}", { params: { path: { id } } })));
  return state.ready ? <TemplateEditor template={state.item} /> : <Page title="Template">{<Loading state={state} />}</Page>;
}

function TemplateEditor(props: { template?: Template }) {
  const t = props.template;
  const [name, setName] = useState(t?.name ?? "");
  const [subject, setSubject] = useState(t?.subject ?? "");
  const [body, setBody] = useState(t?.body ?? "<p>Hello {{firstName ?? there}}</p>");
  const [type, setType] = useState<Template["type"]>(t?.type ?? "TRANSACTIONAL");
  const [from, setFrom] = useState(t?.from ?? "");
  const [fromName, setFromName] = useState(t?.fromName ?? "");
  const [replyTo, setReplyTo] = useState(t?.replyTo ?? "");
  const [sample, setSample] = useState(SAMPLE_DATA);
  const [contact, setContact] = useState<Contact | null>(null);
  const action = useAction();
  const fields = { name, subject, body, type, from: from || null, fromName: fromName || null, replyTo: replyTo || null };
  const save = async () => {
    if (t) {
      await call(api.PATCH("/templates/{id}", { params: { path: { id: t.id } }, body: fields }));
      return "Template saved.";
    }
    navigate(`/templates/${(await call(api.POST("/templates", { body: fields }))).id}`);
  };
  return (
    <Page title={t ? `Template: ${t.name}` : "New template"}>
      <ActionForm class="stack" action={action} onSubmit={save}>
        <Field label="Name">{(id) => <input id={id} required value={name} onInput={(e) => setName(e.currentTarget.value)} />}</Field>
        <Field label="Subject">{(id) => <input id={id} required value={subject} onInput={(e) => setSubject(e.currentTarget.value)} />}</Field>
        <Field label="Type" hint="MARKETING templates go only to subscribed contacts.">
          {(id) => (
            <select id={id} value={type} onChange={(e) => setType(e.currentTarget.value as Template["type"])}>
              <option value="TRANSACTIONAL">Transactional</option>
              <option value="MARKETING">Marketing</option>
            </select>
          )}
        </Field>
        <div class="row">
          <Field label="Default from">{(id) => <input id={id} type="email" value={from} onInput={(e) => setFrom(e.currentTarget.value)} />}</Field>
          <Field label="Default from name">{(id) => <input id={id} value={fromName} onInput={(e) => setFromName(e.currentTarget.value)} />}</Field>
          <Field label="Default reply-to">{(id) => <input id={id} type="email" value={replyTo} onInput={(e) => setReplyTo(e.currentTarget.value)} />}</Field>
        </div>
        <BodyEditor value={body} onChange={setBody} rows={14} hint="Liquid: {{firstName}}, {{firstName ?? friend}}, {{email}}, {{unsubscribeUrl}}." />
        <FormActions
          action={action}
          submit={t ? "Save template" : "Create template"}
          remove={t && { path: "/templates/{id}", id: t.id, question: `Delete the template "${t.name}"? Sends and workflows that use it will fail.` }}
        />
      </ActionForm>
      <div class="split">
        <PreviewPane subject={subject} body={body} sample={sample} onSample={setSample} email={contact?.email}>
          <ContactPicker
            chosen={contact}
            onChoose={(c) => {
              setContact(c);
              setSample(c ? JSON.stringify(c.data ?? {}, null, 2) : SAMPLE_DATA);
            }}
          />
        </PreviewPane>
      </div>
    </Page>
  );
}
