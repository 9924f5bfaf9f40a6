import { useEffect, useRef } from "preact/hooks";
import type { Email } from "../api/client";

export interface Series {
  /** Bucket starts, seconds since the epoch (uPlot's x unit). */
  x: number[];
  sent: number[];
  openRate: number[];
  clickRate: number[];
}

/**
 * A campaign's delivery over time from its emails (GET /emails?campaignId=...):
 * in each time bucket, how many had been sent so far, and what share of those
 * had been opened and clicked so far (percent, as /stats computes its rates).
 */
export function campaignSeries(emails: Email[], buckets = 24): Series {
  const times = (e: Email) => ({ sent: ms(e.sentAt), opened: ms(e.openedAt ?? e.clickedAt), clicked: ms(e.clickedAt) });
  const rows = emails.map(times).filter((t) => t.sent !== null) as { sent: number; opened: number | null; clicked: number | null }[];
  if (rows.length === 0) return { x: [], sent: [], openRate: [], clickRate: [] };
  const start = Math.min(...rows.map((r) => r.sent));
  const end = Math.max(Date.now(), start + 60_000);
  const step = Math.max(60_000, Math.ceil((end - start) / buckets / 60_000) * 60_000);
  // A first point before the first send, so the chart shows the rise from zero.
  const series: Series = { x: [Math.floor((start - step) / 1000)], sent: [0], openRate: [0], clickRate: [0] };
  for (let t = start; t <= end + step; t += step) {
    const edge = t + step;
    const sent = rows.filter((r) => r.sent < edge).length;
    const opened = rows.filter((r) => r.sent < edge && r.opened !== null && r.opened < edge).length;
    const clicked = rows.filter((r) => r.sent < edge && r.clicked !== null && r.clicked < edge).length;
    series.x.push(Math.floor(t / 1000));
    series.sent.push(sent);
    series.openRate.push(sent ? Math.round((opened / sent) * 10_000) / 100 : 0);
    series.clickRate.push(sent ? Math.round((clicked / sent) * 10_000) / 100 : 0);
    if (edge > end) break;
  }
  return series;
}

const ms = (iso: string | null | undefined) => (iso ? Date.parse(iso) : null);

/** uPlot (loaded with this page, not the app): Sent on the left axis, the two rates on the right. */
export function CampaignChart(props: { series: Series }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    let plot: { destroy(): void } | undefined;
    let gone = false;
    const el = box.current;
    if (!el) return;
    void Promise.all([import("uplot"), import("uplot/dist/uPlot.min.css")]).then(([{ default: UPlot }]) => {
      if (gone) return;
      const width = Math.max(280, Math.min(el.clientWidth || 800, 1000));
      plot = new UPlot(
        {
          width,
          height: 260,
          scales: { x: { time: true }, n: {}, pct: { range: [0, 100] } },
          axes: [{}, { scale: "n", label: "Sent" }, { scale: "pct", side: 1, label: "%", grid: { show: false } }],
          series: [
            { label: "Time" },
            { label: "Sent", scale: "n", stroke: "#2563eb", width: 2 },
            { label: "Open rate", scale: "pct", stroke: "#16a34a", width: 2, value: (_u, v) => (v == null ? "—" : `${v}%`) },
            { label: "Click rate", scale: "pct", stroke: "#c2410c", width: 2, value: (_u, v) => (v == null ? "—" : `${v}%`) },
          ],
        },
        [props.series.x, props.series.sent, props.series.openRate, props.series.clickRate],
        el,
      );
    });
    return () => {
      gone = true;
      plot?.destroy();
    };
  }, [props.series]);
  return <div ref={box} class="chart" role="img" aria-label="Sent, open rate and click rate over time" />;
}
