import { useEffect, useMemo, useState } from "preact/hooks";
import { api, call, type Template, type Workflow, type WorkflowExecution, type WorkflowStep } from "../api/client";
import { useList } from "../api/lists";
import { type Action, ActionButton, ActionForm, DeleteButton, FormActions } from "../components/actions";
import { ListBody, ListPage } from "../components/data-table";
import { Field, Loading, Messages, Page, Status } from "../components/page";
import { when } from "../format";
import { useAction, useLoad } from "../hooks";
import { Link, navigate } from "../router";
import { StepGraph } from "../workflow-graph";
import { exitTarget, exitsOf, freshId, newStep, STEP_TYPES, StepForm, type StepType, withExit } from "../workflow-steps";

function triggerText(w: Workflow): string {
  const t = w.trigger;
  return t.type === "EVENT" ? `event "${t.eventName}"` : t.type === "CONTACT_CREATED" ? "a contact is created" : "a contact subscribes";
}

export function WorkflowList() {
  return (
    <ListPage
      path="/workflows"
      create
      columns={[
        { header: "Name", cell: (w) => w.name, link: true },
        { header: "Trigger", cell: triggerText },
        { header: "Steps", cell: (w) => w.steps.length },
        { header: "Enabled", cell: (w) => (w.enabled ? "yes" : "no") },
        { header: "Running / completed", cell: (w) => `${w.stats.running + w.stats.waiting} / ${w.stats.completed}` },
      ]}
    />
  );
}

type Trigger = Workflow["trigger"];

/** What the workflow editor edits. */
interface WorkflowDraft {
  name: string;
  trigger: Trigger;
  allowReentry: boolean;
  steps: WorkflowStep[];
}

const TRIGGERS: [Trigger["type"], string][] = [
  ["CONTACT_CREATED", "A contact is created"],
  ["CONTACT_SUBSCRIBED", "A contact subscribes"],
  ["EVENT", "An event is tracked"],
];

export function WorkflowPage(props: { id: string }) {
  const isNew = props.id === "new";
  const state = useLoad(async () => (isNew ? null : await call(api.GET("/workflows/{id}", { params: { path: { id: props.id } } }))), [props.id]);
  const templates = useLoad(async () => (await call(api.GET("/templates", { params: { query: { limit: 100 } } }))).data.items, []);
  const action = useAction();
  // The editor is remounted for each saved version; its outcome ("Workflow saved.") lives here so it outlasts that.
  const editorAction = useAction();
  const w = state.data;
  if (isNew) {
    return <Page title="New workflow">{templates.data ? <WorkflowEditor templates={templates.data} /> : <Loading state={templates} />}</Page>;
  }
  if (!w) return <Page title="Workflow">{<Loading state={state} />}</Page>;
  const toggle = () => call(api.PATCH("/workflows/{id}", { params: { path: { id: w.id } }, body: { enabled: !w.enabled } })).then(() => state.reload());
  return (
    <Page title={w.name}>
      <dl class="facts">
        <dt>Trigger</dt>
        <dd>{triggerText(w)}</dd>
        <dt>Enabled</dt>
        <dd>{w.enabled ? "yes" : "no"}</dd>
        <dt>Version</dt>
        <dd>{w.version}</dd>
        <dt>Executions</dt>
        <dd>
          {Object.entries(w.stats)
            .map(([k, v]) => `${v} ${k}`)
            .join(", ")}
        </dd>
      </dl>
      <Messages error={action.error} notice={action.notice} />
      <div class="actions">
        <ActionButton action={action} onClick={toggle}>
          {w.enabled ? "Disable" : "Enable"}
        </ActionButton>
        <DeleteButton path="/workflows/{id}" id={w.id} action={action} question={`Delete the workflow "${w.name}"? Its running executions are cancelled.`} />
      </div>
      {templates.data ? (
        <WorkflowEditor key={w.version} workflow={w} templates={templates.data} action={editorAction} onSaved={state.reload} />
      ) : (
        <Loading state={templates} />
      )}
      <WorkflowExecutions workflowId={w.id} />
    </Page>
  );
}

function WorkflowExecutions(props: { workflowId: string }) {
  const executions = useList("/workflows/{id}/executions", { path: { id: props.workflowId }, query: { limit: 20 } });
  return (
    <>
      <h2>Executions</h2>
      <ListBody list={executions} empty="No executions yet.">
        {(items) => items.map((x) => <Execution workflowId={props.workflowId} execution={x} />)}
      </ListBody>
    </>
  );
}

/**
 * Build or edit a workflow: its name, trigger (a select) and steps, each a form for its type, their exits
 * chosen from the other steps; the graph follows every change. Saving sends the definition the API takes.
 */
function WorkflowEditor(props: { workflow?: Workflow; templates: Template[]; action?: Action; onSaved?: () => void }) {
  const w = props.workflow;
  const [draft, setDraft] = useState<WorkflowDraft>(() => ({
    name: w?.name ?? "",
    trigger: w?.trigger ?? { type: "CONTACT_CREATED" },
    allowReentry: w?.allowReentry ?? false,
    steps: w?.steps ?? [],
  }));
  const [addType, setAddType] = useState<StepType>("DELAY");
  const ownAction = useAction();
  const action = props.action ?? ownAction;
  const names = useMemo(() => new Map(props.templates.map((t) => [t.id, t.name])), [props.templates]);
  // The project's topics (at most 100): a SEND_EMAIL step may aim its mail at one.
  const topics = useLoad(async () => (await call(api.GET("/topics", { params: { query: { limit: 100 } } }))).data.items, []);
  const setSteps = (steps: WorkflowStep[]) => setDraft((d) => ({ ...d, steps }));

  const add = () => {
    const id = freshId(addType, draft.steps);
    const steps = [...draft.steps];
    // The new step follows the last one, on its first exit that leads nowhere yet.
    const last = steps.at(-1);
    if (last) {
      const open = exitsOf(last.type).find((e) => exitTarget(last, e.key) === null);
      if (open) steps[steps.length - 1] = withExit(last, open.key, id);
    }
    setSteps([...steps, newStep(addType, id, props.templates)]);
  };
  const rename = (from: string, to: string) => {
    if (!to || to === from) return;
    setSteps(
      draft.steps.map((s) => {
        let next = s.id === from ? ({ ...s, id: to } as WorkflowStep) : s;
        for (const e of exitsOf(s.type)) if (exitTarget(next, e.key) === from) next = withExit(next, e.key, to);
        return next;
      }),
    );
  };
  const remove = (id: string) => {
    setSteps(
      draft.steps
        .filter((s) => s.id !== id)
        .map((s) => {
          let next = s;
          for (const e of exitsOf(s.type)) if (exitTarget(next, e.key) === id) next = withExit(next, e.key, null);
          return next;
        }),
    );
  };
  const save = async () => {
    const body = { name: draft.name, trigger: draft.trigger, allowReentry: draft.allowReentry, steps: draft.steps };
    if (w) {
      await call(api.PATCH("/workflows/{id}", { params: { path: { id: w.id } }, body }));
      props.onSaved?.();
      return "Workflow saved.";
    }
    navigate(`/workflows/${(await call(api.POST("/workflows", { body }))).id}`);
  };
  const trigger = draft.trigger;
  return (
    <ActionForm class="stack workflow-editor" action={action} onSubmit={save}>
      <div class="row">
        <Field label="Name">{(id) => <input id={id} required value={draft.name} onInput={(e) => setDraft({ ...draft, name: e.currentTarget.value })} />}</Field>
        <Field label="Starts when">
          {(id) => (
            <select
              id={id}
              value={trigger.type}
              onChange={(e) => {
                const type = e.currentTarget.value as Trigger["type"];
                setDraft({ ...draft, trigger: type === "EVENT" ? { type, eventName: "" } : { type } });
              }}
            >
              {TRIGGERS.map(([value, label]) => (
                <option value={value}>{label}</option>
              ))}
            </select>
          )}
        </Field>
        {trigger.type === "EVENT" && (
          <Field label="Event name">
            {(id) => (
              <input
                id={id}
                required
                value={trigger.eventName}
                onInput={(e) => setDraft({ ...draft, trigger: { type: "EVENT", eventName: e.currentTarget.value } })}
              />
            )}
          </Field>
        )}
      </div>
      <label class="check">
        <input type="checkbox" checked={draft.allowReentry} onChange={(e) => setDraft({ ...draft, allowReentry: e.currentTarget.checked })} /> A contact may
        walk it again (never twice at a time)
      </label>
      <h2>Steps</h2>
      <div class="workflow-layout">
        <div class="workflow-graph">
          <StepGraph steps={draft.steps} templates={names} trigger={TRIGGERS.find(([t]) => t === trigger.type)?.[1].toLowerCase()} />
        </div>
        <div class="steps">
          {draft.steps.map((step, i) => (
            <StepForm
              step={step}
              n={i + 1}
              steps={draft.steps}
              templates={props.templates}
              topics={topics.data ?? []}
              onChange={(next) => setSteps(draft.steps.map((s, j) => (j === i ? next : s)))}
              onRename={(to) => rename(step.id, to)}
              onRemove={() => remove(step.id)}
            />
          ))}
        </div>
      </div>
      <div class="inline">
        <Field label="New step">
          {(id) => (
            <select id={id} value={addType} onChange={(e) => setAddType(e.currentTarget.value as StepType)}>
              {STEP_TYPES.map(([type, label]) => (
                <option value={type}>{label}</option>
              ))}
            </select>
          )}
        </Field>
        <button type="button" onClick={add}>
          Add step
        </button>
      </div>
      <FormActions action={action} submit={w ? "Save workflow" : "Create workflow"} />
    </ActionForm>
  );
}

/** Contacts' emails by id, read once per contact while the app runs (executions name their contact by id). */
const contactEmails = new Map<string, Promise<string>>();

/** A contact's email (its id until read, or when it was deleted). */
function ContactEmail(props: { id: string }) {
  const [email, setEmail] = useState<string | null>(null);
  useEffect(() => {
    let live = true;
    let known = contactEmails.get(props.id);
    if (!known) {
      known = call(api.GET("/contacts/{id}", { params: { path: { id: props.id } } })).then(
        (c) => c.email,
        () => props.id,
      );
      contactEmails.set(props.id, known);
    }
    void known.then((e) => live && setEmail(e));
    return () => {
      live = false;
    };
  }, [props.id]);
  return <>{email ?? props.id}</>;
}

function Execution(props: { workflowId: string; execution: WorkflowExecution }) {
  const x = props.execution;
  return (
    <details class="execution">
      <summary>
        <Status value={x.status} /> contact <ContactEmail id={x.contactId} /> · started {when(x.startedAt)}
        {x.currentStepId ? ` · at ${x.currentStepId}` : ""}
      </summary>
      {/* The link is outside <summary>: a control inside the control that opens the details is not reachable (axe nested-interactive). */}
      <p>
        <Link href={`/contacts/${x.contactId}`}>
          The contact <ContactEmail id={x.contactId} />
        </Link>
      </p>
      {x.error && <p class="error">{x.error}</p>}
      <ol class="plain">
        {x.history.map((h) => (
          <li>
            {when(h.startedAt)} <strong>{h.stepId}</strong> {h.type} <Status value={h.status} /> {h.outcome ?? ""}
          </li>
        ))}
      </ol>
    </details>
  );
}
