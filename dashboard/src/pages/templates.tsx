import { useState } from "preact/hooks";
import { api, call, type Template } from "../api/client";
import { SAMPLE_DATA } from "../preview";
import { Link, navigate } from "../router";
import { ConfirmButton, Field, Loading, Messages, More, Page, useAction, useLoad, usePaged, when } from "../ui";
import { PreviewPane } from "./preview-pane";

export function TemplateList() {
  const list = usePaged(async (cursor) => {
    const page = (await call(api.GET("/templates", { params: { query: { limit: 50, cursor } } }))).data;
    return { items: page.items, next: page.nextCursor, total: page.total };
  }, []);
  return (
    <Page
      title="Templates"
      actions={
        <Link class="button primary" href="/templates/new">
          New template
        </Link>
      }
    >
      <Loading state={list} />
      {!list.loading && list.items.length === 0 && <p>No templates yet.</p>}
      {list.items.length > 0 && (
        <table>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Type</th>
              <th scope="col">Subject</th>
              <th scope="col">Updated</th>
            </tr>
          </thead>
          <tbody>
            {list.items.map((t) => (
              <tr>
                <td>
                  <Link href={`/templates/${t.id}`}>{t.name}</Link>
                </td>
                <td>{t.type}</td>
                <td>{t.subject}</td>
                <td>{when(t.updatedAt)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <More hasMore={list.hasMore} onMore={list.more} busy={list.loading} />
    </Page>
  );
}

export function TemplatePage(props: { id: string }) {
  const state = useLoad(async () => (props.id === "new" ? null : await call(api.GET("/templates/{id}", { params: { path: { id: props.id } } }))), [props.id]);
  if (props.id !== "new" && !state.data) return <Page title="Template">{<Loading state={state} />}</Page>;
  return <TemplateEditor key={state.data?.id ?? "new"} template={state.data ?? undefined} />;
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
  const action = useAction();
  const fields = { name, subject, body, type, from: from || null, fromName: fromName || null, replyTo: replyTo || null };
  return (
    <Page title={t ? `Template: ${t.name}` : "New template"}>
      <div class="split">
        <form
          class="stack"
          onSubmit={(e) => {
            e.preventDefault();
            void action.run(async () => {
              if (t) {
                await call(api.PATCH("/templates/{id}", { params: { path: { id: t.id } }, body: fields }));
                return "Template saved.";
              }
              const created = await call(api.POST("/templates", { body: fields }));
              navigate(`/templates/${created.id}`);
            });
          }}
        >
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
          <Field label="Body (HTML)" hint="Liquid: {{firstName}}, {{firstName ?? friend}}, {{email}}, {{unsubscribeUrl}}.">
            {(id) => <textarea id={id} class="mono" rows={14} required value={body} onInput={(e) => setBody(e.currentTarget.value)} />}
          </Field>
          <Messages error={action.error} notice={action.notice} />
          <div class="actions">
            <button type="submit" class="primary" disabled={action.busy}>
              {t ? "Save template" : "Create template"}
            </button>
            {t && (
              <ConfirmButton
                label="Delete template"
                question={`Delete the template "${t.name}"? Sends and workflows that use it will fail.`}
                confirmLabel="Delete"
                onConfirm={() =>
                  void action.run(async () => {
                    await call(api.DELETE("/templates/{id}", { params: { path: { id: t.id } } }));
                    navigate("/templates");
                  })
                }
              />
            )}
          </div>
        </form>
        <PreviewPane subject={subject} body={body} sample={sample} onSample={setSample} />
      </div>
    </Page>
  );
}
