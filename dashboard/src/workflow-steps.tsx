import type { Template, WorkflowStep } from "./api/client";
import { ConditionBuilder, emptyCondition } from "./components/conditions";
import { Field } from "./components/page";

export type StepType = WorkflowStep["type"];
type Unit = "minutes" | "hours" | "days";
type Config = Record<string, unknown>;

/** The step types of the API's workflow schema (src/schemas/workflows.ts), with what each does. */
export const STEP_TYPES: [StepType, string][] = [
  ["DELAY", "Wait for a time"],
  ["SEND_EMAIL", "Send an email (a template)"],
  ["CONDITION", "Branch on a condition (yes / no)"],
  ["WAIT_FOR_EVENT", "Wait for an event (or a timeout)"],
  ["UPDATE_CONTACT", "Update the contact"],
  ["WEBHOOK", "Call a webhook"],
  ["EXIT", "Exit the workflow"],
];
const UNITS: Unit[] = ["minutes", "hours", "days"];

/** The exits of a step type: `next` for linear steps, named branches for CONDITION and WAIT_FOR_EVENT, none for EXIT. */
export function exitsOf(type: StepType): { key: string; label: string }[] {
  if (type === "CONDITION")
    return [
      { key: "yes", label: "If yes, then" },
      { key: "no", label: "If no, then" },
    ];
  if (type === "WAIT_FOR_EVENT")
    return [
      { key: "event", label: "When the event happens, then" },
      { key: "timeout", label: "On timeout, then" },
    ];
  if (type === "EXIT") return [];
  return [{ key: "next", label: "Then" }];
}

/** Where exit `key` of `step` leads (null: the execution ends there). */
export function exitTarget(step: WorkflowStep, key: string): string | null {
  if (key === "next") return ("next" in step && step.next) || null;
  const branches = ("branches" in step && step.branches) || {};
  return (branches as Record<string, string | null | undefined>)[key] ?? null;
}

/** `step` with exit `key` leading to `to`. */
export function withExit(step: WorkflowStep, key: string, to: string | null): WorkflowStep {
  if (key === "next") return { ...step, next: to } as WorkflowStep;
  const branches = { ...(("branches" in step && step.branches) || {}), [key]: to };
  return { ...step, branches } as WorkflowStep;
}

/** A new step of `type` with usable settings (a DELAY of one day, the first template, a condition on data.plan). */
export function newStep(type: StepType, id: string, templates: Template[]): WorkflowStep {
  const config: Record<StepType, Config> = {
    DELAY: { amount: 1, unit: "days" },
    SEND_EMAIL: { templateId: templates[0]?.id ?? "" },
    CONDITION: { condition: emptyCondition() },
    WAIT_FOR_EVENT: { eventName: "", timeout: { amount: 3, unit: "days" } },
    UPDATE_CONTACT: { subscribed: true },
    WEBHOOK: { url: "https://", method: "POST" },
    EXIT: {},
  };
  const step = { id, type, config: config[type] } as WorkflowStep;
  if (type === "CONDITION") return { ...step, branches: { yes: null, no: null } } as WorkflowStep;
  if (type === "WAIT_FOR_EVENT") return { ...step, branches: { event: null, timeout: null } } as WorkflowStep;
  if (type === "EXIT") return step;
  return { ...step, next: null } as WorkflowStep;
}

/** A free step id from the type: "delay", "delay-2", ... */
export function freshId(type: StepType, steps: WorkflowStep[]): string {
  const base = type.toLowerCase().replace(/_/g, "-");
  const taken = new Set(steps.map((s) => s.id));
  if (!taken.has(base)) return base;
  for (let n = 2; ; n++) if (!taken.has(`${base}-${n}`)) return `${base}-${n}`;
}

function Duration(props: { label: string; value: { amount: number; unit: Unit }; onChange: (v: { amount: number; unit: Unit }) => void }) {
  return (
    <>
      <Field label={props.label}>
        {(id) => (
          <input
            id={id}
            type="number"
            min={1}
            required
            value={props.value.amount}
            onInput={(e) => props.onChange({ ...props.value, amount: Number(e.currentTarget.value) })}
          />
        )}
      </Field>
      <Field label="Unit">
        {(id) => (
          <select id={id} value={props.value.unit} onChange={(e) => props.onChange({ ...props.value, unit: e.currentTarget.value as Unit })}>
            {UNITS.map((u) => (
              <option value={u}>{u}</option>
            ))}
          </select>
        )}
      </Field>
    </>
  );
}

/** The settings of one step, as a form for its type (no JSON anywhere). */
type TopicChoice = { key: string; name: string };

function StepSettings(props: { step: WorkflowStep; templates: Template[]; topics: TopicChoice[]; onConfig: (config: Config) => void }) {
  const c = props.step.config as Config;
  const set = (patch: Config) => props.onConfig({ ...c, ...patch });
  switch (props.step.type) {
    case "DELAY":
      return (
        <div class="row">
          <Duration label="Wait" value={c as { amount: number; unit: Unit }} onChange={(d) => props.onConfig(d)} />
        </div>
      );
    case "SEND_EMAIL":
      return (
        <div class="row">
          <Field label="Template" hint="The template's own sender, subject and body are used.">
            {(id) => (
              <select id={id} required value={String(c.templateId ?? "")} onChange={(e) => set({ templateId: e.currentTarget.value })}>
                <option value="">Choose a template</option>
                {props.templates.map((t) => (
                  <option value={t.id}>{t.name}</option>
                ))}
              </select>
            )}
          </Field>
          {(props.topics.length > 0 || c.topic) && (
            <Field label="Topic" hint="Only contacts opted in to the topic get it; its unsubscribe link opts out of this topic only.">
              {(id) => (
                <select id={id} value={String(c.topic ?? "")} onChange={(e) => set({ topic: e.currentTarget.value || undefined })}>
                  <option value="">No topic</option>
                  {props.topics.map((t) => (
                    <option value={t.key}>{t.name}</option>
                  ))}
                </select>
              )}
            </Field>
          )}
        </div>
      );
    case "CONDITION":
      return <ConditionBuilder label="Condition" value={c.condition as never} onChange={(condition) => set({ condition })} />;
    case "WAIT_FOR_EVENT":
      return (
        <div class="row">
          <Field label="Event name">
            {(id) => <input id={id} required value={String(c.eventName ?? "")} onInput={(e) => set({ eventName: e.currentTarget.value })} />}
          </Field>
          <Duration label="Time out after" value={c.timeout as { amount: number; unit: Unit }} onChange={(timeout) => set({ timeout })} />
        </div>
      );
    case "UPDATE_CONTACT":
      return <UpdateContact config={c} onConfig={props.onConfig} />;
    case "WEBHOOK":
      return (
        <div class="row">
          <Field label="URL">
            {(id) => <input id={id} type="url" required value={String(c.url ?? "")} onInput={(e) => set({ url: e.currentTarget.value })} />}
          </Field>
          <Field label="Method">
            {(id) => (
              <select id={id} value={String(c.method ?? "POST")} onChange={(e) => set({ method: e.currentTarget.value })}>
                {["POST", "PUT", "PATCH"].map((m) => (
                  <option value={m}>{m}</option>
                ))}
              </select>
            )}
          </Field>
        </div>
      );
    default:
      return <p>The execution ends here.</p>;
  }
}

/** UPDATE_CONTACT: the subscription (or unchanged) and data keys set to text values. */
function UpdateContact(props: { config: Config; onConfig: (config: Config) => void }) {
  const data = Object.entries((props.config.data as Record<string, unknown> | undefined) ?? {});
  const subscribed = props.config.subscribed;
  const emit = (nextSubscribed: unknown, nextData: [string, unknown][]) => {
    const config: Config = {};
    if (nextSubscribed !== undefined) config.subscribed = nextSubscribed;
    if (nextData.length > 0) config.data = Object.fromEntries(nextData);
    props.onConfig(config);
  };
  return (
    <>
      <Field label="Subscription">
        {(id) => (
          <select
            id={id}
            value={subscribed === undefined ? "" : String(subscribed)}
            onChange={(e) => emit(e.currentTarget.value === "" ? undefined : e.currentTarget.value === "true", data)}
          >
            <option value="">Unchanged</option>
            <option value="true">Subscribe</option>
            <option value="false">Unsubscribe</option>
          </select>
        )}
      </Field>
      {data.map(([key, value], i) => (
        <div class="row">
          <Field label={`Data key ${i + 1}`}>
            {(id) => (
              <input
                id={id}
                value={key}
                onInput={(e) =>
                  emit(
                    subscribed,
                    data.map((d, j) => (j === i ? [e.currentTarget.value, d[1]] : d)),
                  )
                }
              />
            )}
          </Field>
          <Field label={`Value ${i + 1}`}>
            {(id) => (
              <input
                id={id}
                value={String(value ?? "")}
                onInput={(e) =>
                  emit(
                    subscribed,
                    data.map((d, j) => (j === i ? [d[0], e.currentTarget.value] : d)),
                  )
                }
              />
            )}
          </Field>
          <button
            type="button"
            class="small"
            onClick={() =>
              emit(
                subscribed,
                data.filter((_, j) => j !== i),
              )
            }
          >
            Remove key {i + 1}
          </button>
        </div>
      ))}
      <button type="button" class="small" onClick={() => emit(subscribed, [...data, [`key${data.length + 1}`, ""]])}>
        Add a data key
      </button>
    </>
  );
}

/** One step's form: its id, its type's settings and where each of its exits leads. */
export function StepForm(props: {
  step: WorkflowStep;
  n: number;
  steps: WorkflowStep[];
  templates: Template[];
  topics: TopicChoice[];
  onChange: (step: WorkflowStep) => void;
  onRename: (id: string) => void;
  onRemove: () => void;
}) {
  const { step } = props;
  const others = props.steps.filter((s) => s.id !== step.id);
  const label = STEP_TYPES.find(([t]) => t === step.type)?.[1] ?? step.type;
  return (
    <fieldset class="step" data-step={step.id}>
      <legend>
        Step {props.n}: {label}
        {props.n === 1 ? " (first)" : ""}
      </legend>
      <div class="row">
        <Field label="Step id" hint="Letters, digits, _ and -">
          {(id) => <input id={id} required pattern="[A-Za-z0-9_\-]{1,64}" value={step.id} onChange={(e) => props.onRename(e.currentTarget.value)} />}
        </Field>
      </div>
      <StepSettings step={step} templates={props.templates} topics={props.topics} onConfig={(config) => props.onChange({ ...step, config } as WorkflowStep)} />
      {exitsOf(step.type).length > 0 && (
        <div class="row">
          {exitsOf(step.type).map((exit) => (
            <Field label={exit.label}>
              {(id) => (
                <select
                  id={id}
                  value={exitTarget(step, exit.key) ?? ""}
                  onChange={(e) => props.onChange(withExit(step, exit.key, e.currentTarget.value || null))}
                >
                  <option value="">End the workflow</option>
                  {others.map((s) => (
                    <option value={s.id}>
                      {s.id} ({s.type})
                    </option>
                  ))}
                </select>
              )}
            </Field>
          ))}
        </div>
      )}
      <div class="actions">
        <button type="button" class="small danger" onClick={props.onRemove}>
          Remove step {props.n}
        </button>
      </div>
    </fieldset>
  );
}
