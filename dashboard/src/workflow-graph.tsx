import type { WorkflowStep } from "./api/client";

/** The steps each step leads to, with the edge's label (branches name theirs). */
export function edges(step: WorkflowStep): { to: string; label: string }[] {
  const out: { to: string; label: string }[] = [];
  if ("next" in step && step.next) out.push({ to: step.next, label: "" });
  if ("branches" in step && step.branches) for (const [label, to] of Object.entries(step.branches)) if (to) out.push({ to, label });
  return out;
}

/** Template names by id, for steps that send one. */
export type TemplateNames = Map<string, string>;

/** A step's settings in a few words, the template by name. */
export function summary(step: WorkflowStep, templates: TemplateNames): string {
  const c = step.config as Record<string, unknown>;
  switch (step.type) {
    case "SEND_EMAIL": {
      const id = String(c.templateId ?? "");
      return id ? `“${templates.get(id) ?? "unknown template"}”` : "no template chosen";
    }
    case "DELAY":
      return `wait ${c.amount} ${c.unit}`;
    case "WAIT_FOR_EVENT":
      return `until "${c.eventName}"`;
    case "CONDITION":
      return "yes / no";
    case "UPDATE_CONTACT":
      return "update the contact";
    case "WEBHOOK":
      return String(c.url ?? "");
    default:
      return "";
  }
}

const BOX_W = 220;
const BOX_H = 58;
const GAP_X = 36;
const GAP_Y = 52;

const cut = (text: string, n: number) => (text.length > n ? `${text.slice(0, n - 1)}…` : text);

/**
 * Steps as boxes in layers by distance from the first step (top to bottom), arrows for next and branches.
 * Drawn at its own size (one SVG unit is one CSS pixel, so text is 12-13 px at any page width) inside a box
 * that scrolls when the graph is wider than the page.
 */
export function StepGraph(props: { steps: WorkflowStep[]; templates: TemplateNames; trigger?: string }) {
  const { steps } = props;
  if (steps.length === 0) return <p>No steps yet.</p>;
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
  const top = props.trigger ? 44 : 10;
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
    for (const [i, id] of row.entries()) pos.set(id, { x: (width - rowWidth) / 2 + i * (BOX_W + GAP_X), y: top + r * (BOX_H + GAP_Y) });
  });
  const height = top + rows.length * (BOX_H + GAP_Y) - GAP_Y + 10;
  const first = pos.get(steps[0].id)!;
  return (
    <div class="graph-box">
      <svg
        class="graph"
        width={width}
        height={height}
        viewBox={`0 0 ${width} ${height}`}
        style={{ width: `${width}px`, height: `${height}px` }}
        role="img"
        aria-label={`Workflow graph of ${steps.length} steps`}
      >
        <defs>
          <marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
            <path d="M0,0 L10,5 L0,10 z" fill="#475569" />
          </marker>
        </defs>
        {props.trigger && (
          <g>
            <text x={width / 2} y={18} font-size="13" fill="#1e293b" text-anchor="middle">
              {cut(`Starts when ${props.trigger}`, 48)}
            </text>
            <line x1={first.x + BOX_W / 2} y1={24} x2={first.x + BOX_W / 2} y2={first.y - 2} stroke="#475569" stroke-width="1.5" marker-end="url(#arrow)" />
          </g>
        )}
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
                    <text x={(x1 + x2) / 2 + 6} y={(y1 + y2) / 2 + 4} font-size="12" font-weight="600" fill="#1e293b">
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
              <text x={p.x + 10} y={p.y + 23} font-size="13" font-weight="600" fill="#1e1b4b">
                {cut(`${s.type} · ${s.id}`, 28)}
              </text>
              <text x={p.x + 10} y={p.y + 44} font-size="12" fill="#334155">
                {cut(summary(s, props.templates), 32)}
              </text>
            </g>
          );
        })}
      </svg>
    </div>
  );
}
