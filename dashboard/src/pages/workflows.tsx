import { useState } from "preact/hooks";
import { api, call, type Workflow, type WorkflowExecution, type WorkflowStep } from "../api/client";
import { useList } from "../api/lists";
import { ActionButton, ActionForm, DeleteButton } from "../components/actions";
import { ListBody, ListPage } from "../components/data-table";
import { Field, Loading, Messages, Page, Status } from "../components/page";
import { when } from "../format";
import { useAction, useLoad } from "../hooks";
import { Link, navigate } from "../router";

const EXAMPLE = JSON.stringify(
  {
    name: "Welcome series",
    trigger: { type: "CONTACT_CREATED" },
    steps: [
      { id: "wait", type: "DELAY", config: { amount: 1, unit: "hours" }, next: "welcome" },
      { id: "welcome", type: "SEND_EMAIL", config: { templateId: "<template id>" } },
    ],
  },
  null,
  2,
);

function triggerText(w: Workflow): string {
  const t = w.trigger;
  return t.type === "EVENT" ? `event "${t.eventName}"` : t.type === "CONTACT_CREATED" ? "a contact is created" : "a contact subscribes";
}

export function WorkflowList() {
  const [json, setJson] = useState(EXAMPLE);
  const [open, setOpen] = useState(false);
  const action = useAction();
  const create = async () => {
    let body: unknown;
    try {
      body = JSON.parse(json);
    } catch {
      throw new Error("The workflow is not valid JSON");
    }
    navigate(`/workflows/${(await call(api.POST("/workflows", { body: body as never }))).id}`);
  };
  const toggle = (
    <button type="button" aria-expanded={open} onClick={() => setOpen(!open)}>
      New workflow
    </button>
  );
  return (
    <ListPage
      path="/workflows"
      actions={toggle}
      columns={[
        { header: "Name", cell: (w) => w.name, link: true },
        { header: "Trigger", cell: triggerText },
        { header: "Enabled", cell: (w) => (w.enabled ? "yes" : "no") },
        { header: "Running / completed", cell: (w) => `${w.stats.running + w.stats.waiting} / ${w.stats.completed}` },
      ]}
    >
      {open && (
        <ActionForm class="stack" action={action} onSubmit={create}>
          <Field label="Workflow (JSON, as POST /workflows takes it)">
            {(id) => <textarea id={id} class="mono" rows={14} value={json} onInput={(e) => setJson(e.currentTarget.value)} />}
          </Field>
          <Messages error={action.error} />
          <button type="submit" class="primary" disabled={action.busy}>
            Create workflow
          </button>
        </ActionForm>
      )}
    </ListPage>
  );
}

/** The steps each step leads to, with the edge's label (branches name theirs). */
function edges(step: WorkflowStep): { to: string; label: string }[] {
  const out: { to: string; label: string }[] = [];
  if ("next" in step && step.next) out.push({ to: step.next, label: "" });
  if ("branches" in step && step.branches) for (const [label, to] of Object.entries(step.branches)) if (to) out.push({ to, label });
  return out;
}

function summary(step: WorkflowStep): string {
  const c = step.config as Record<string, unknown>;
  switch (step.type) {
    case "SEND_EMAIL":
      return `template ${c.templateId}`;
    case "DELAY":
      return `${c.amount} ${c.unit}`;
    case "WAIT_FOR_EVENT":
      return `"${c.eventName}"`;
    case "WEBHOOK":
      return String(c.url ?? "");
    default:
      return "";
  }
}

const BOX_W = 200;
const BOX_H = 56;
const GAP_X = 40;
const GAP_Y = 48;

/** Steps as boxes in layers by distance from the first step, arrows for next and branches. */
export function StepGraph(props: { steps: WorkflowStep[] }) {
  const { steps } = props;
  if (steps.length === 0) return <p>No steps.</p>;
  const byId = new Map(steps.map((s) => [s.id, s]));
  const layer = new Map<string, number>([[steps[0].id, 0]]);
  const queue = [steps[0].id];
  while (queue.length) {
    const id = queue.shift()!;
    for (const e of edges(byId.get(id)!)) {
      if (byId.has(e.to) && !layer.has(e.to)) {
        layer.set(e.to, layer.get(id)! + 1);
        queue.push(e.to);
      }
    }
  }
  let last = Math.max(...layer.values());
  for (const s of steps) if (!layer.has(s.id)) layer.set(s.id, ++last); // unreachable steps go below
  const rows: string[][] = [];
  for (const s of steps) {
    const r = layer.get(s.id)!;
    rows[r] = [...(rows[r] ?? []), s.id];
  }
  const widest = Math.max(...rows.map((r) => r?.length ?? 0));
  const width = widest * BOX_W + (widest - 1) * GAP_X + 20;
  const pos = new Map<string, { x: number; y: number }>();
  rows.forEach((row, r) => {
    const rowWidth = row.length * BOX_W + (row.length - 1) * GAP_X;
    for (const [i, id] of row.entries()) pos.set(id, { x: (width - rowWidth) / 2 + i * (BOX_W + GAP_X), y: 10 + r * (BOX_H + GAP_Y) });
  });
  const height = rows.length * (BOX_H + GAP_Y) - GAP_Y + 20;
  return (
    <svg class="graph" viewBox={`0 0 ${width} ${height}`} role="img" aria-label={`Workflow graph of ${steps.length} steps`}>
      <defs>
        <marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
          <path d="M0,0 L10,5 L0,10 z" fill="#475569" />
        </marker>
      </defs>
      {steps.flatMap((s) =>
        edges(s)
          .filter((e) => pos.has(e.to))
          .map((e) => {
            const a = pos.get(s.id)!;
            const b = pos.get(e.to)!;
            const x1 = a.x + BOX_W / 2;
            const y1 = a.y + BOX_H;
            const x2 = b.x + BOX_W / 2;
            const y2 = b.y;
            return (
              <g>
                <line x1={x1} y1={y1} x2={x2} y2={y2 - 2} stroke="#475569" stroke-width="1.5" marker-end="url(#arrow)" />
                {e.label && (
                  <text x={(x1 + x2) / 2 + 6} y={(y1 + y2) / 2} font-size="12" fill="#1e293b">
                    {e.label}
                  </text>
                )}
              </g>
            );
          }),
      )}
      {steps.map((s) => {
        const p = pos.get(s.id)!;
        return (
          <g>
            <rect x={p.x} y={p.y} width={BOX_W} height={BOX_H} rx="8" fill="#eef2ff" stroke="#4338ca" />
            <text x={p.x + 10} y={p.y + 22} font-size="13" font-weight="600" fill="#1e1b4b">
              {s.type} · {s.id}
            </text>
            <text x={p.x + 10} y={p.y + 42} font-size="12" fill="#334155">
              {summary(s).slice(0, 28)}
            </text>
          </g>
        );
      })}
    </svg>
  );
}

export function WorkflowPage(props: { id: string }) {
  const state = useLoad(async () => await call(api.GET("/workflows/{id}", { params: { path: { id: props.id } } })), [props.id]);
  const action = useAction();
  const executions = useList("/workflows/{id}/executions", { path: { id: props.id }, query: { limit: 20 } });
  const w = state.data;
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
      <h2>Steps</h2>
      <StepGraph steps={w.steps} />
      <ol class="plain">
        {w.steps.map((s) => (
          <li>
            <strong>{s.id}</strong> {s.type} {summary(s)}{" "}
            {edges(s).length > 0 &&
              `→ ${edges(s)
                .map((e) => (e.label ? `${e.label}: ${e.to}` : e.to))
                .join(", ")}`}
          </li>
        ))}
      </ol>
      <h2>Executions</h2>
      <ListBody list={executions} empty="No executions yet.">
        {(items) => items.map((x) => <Execution workflowId={w.id} execution={x} />)}
      </ListBody>
    </Page>
  );
}

function Execution(props: { workflowId: string; execution: WorkflowExecution }) {
  const x = props.execution;
  return (
    <details class="execution">
      <summary>
        <Status value={x.status} /> contact <Link href={`/contacts/${x.contactId}`}>{x.contactId}</Link> · started {when(x.startedAt)}
        {x.currentStepId ? ` · at ${x.currentStepId}` : ""}
      </summary>
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
