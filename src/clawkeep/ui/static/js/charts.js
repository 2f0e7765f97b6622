// Small inline-SVG charts: horizontal bars and sparklines. Each is an image with a text label
// that says the same numbers, for screen readers and for anyone who prefers reading.
import { h, s } from "./dom.js";

const BAR_HEIGHT = 22;
const LABEL_WIDTH = 170;
const WIDTH = 440;

// rows: [{label, value (null: no data), max, text}]
export function bars(title, rows) {
  const height = rows.length * (BAR_HEIGHT + 6) + 4;
  const spoken = rows.map((r) => `${r.label}: ${r.value === null ? "no data" : r.text}`).join("; ");
  const chart = s("svg", { viewBox: `0 0 ${WIDTH} ${height}`, role: "img", "aria-label": `${title}. ${spoken}`, class: "chart bars" },
    rows.map((row, i) => {
      const y = i * (BAR_HEIGHT + 6) + 2;
      const span = WIDTH - LABEL_WIDTH - 70;
      const share = row.value === null || !row.max ? 0 : Math.max(0, Math.min(1, row.value / row.max));
      return s("g", {},
        s("text", { x: 0, y: y + BAR_HEIGHT * 0.7, class: "label" }, row.label),
        s("rect", { x: LABEL_WIDTH, y, width: span, height: BAR_HEIGHT, class: "track", rx: 3 }),
        s("rect", { x: LABEL_WIDTH, y, width: Math.max(share * span, row.value ? 2 : 0), height: BAR_HEIGHT, class: "fill", rx: 3 }),
        s("text", { x: LABEL_WIDTH + span + 6, y: y + BAR_HEIGHT * 0.7, class: "value" }, row.value === null ? "—" : row.text));
    }));
  return h("figure", { class: "chart-box" }, h("figcaption", {}, title), chart);
}

// points: [{t (ms), v}]
export function sparkline(title, points, format = (v) => String(v)) {
  const w = 200;
  const ht = 48;
  const values = points.map((p) => p.v).filter((v) => v !== null && v !== undefined);
  const last = values.length ? values[values.length - 1] : null;
  const low = Math.min(...values, 0);
  const high = Math.max(...values, low + 1e-9);
  const t0 = points.length ? points[0].t : 0;
  const t1 = points.length ? points[points.length - 1].t : 1;
  const xy = points.filter((p) => p.v !== null && p.v !== undefined).map((p) => {
    const x = t1 === t0 ? w : ((p.t - t0) / (t1 - t0)) * w;
    const y = ht - 4 - ((p.v - low) / (high - low)) * (ht - 8);
    return `${x.toFixed(1)},${y.toFixed(1)}`;
  });
  const label = `${title}: ${last === null ? "no data" : format(last)} (${values.length} samples)`;
  const chart = s("svg", { viewBox: `0 0 ${w} ${ht}`, role: "img", "aria-label": label, class: "chart spark" },
    s("rect", { x: 0, y: 0, width: w, height: ht, class: "track", rx: 4 }),
    xy.length > 1 ? s("polyline", { points: xy.join(" "), class: "line" }) : null,
    xy.length ? s("circle", { cx: xy[xy.length - 1].split(",")[0], cy: xy[xy.length - 1].split(",")[1], r: 3, class: "dot" }) : null);
  return h("figure", { class: "chart-box spark-box" },
    h("figcaption", {}, title, h("span", { class: "spark-value" }, last === null ? "—" : format(last))), chart);
}

export const percent = (v) => `${(v * 100).toFixed(0)}%`;

// Prometheus text exposition -> [{name, labels, value}]
export function parseMetrics(text) {
  const out = [];
  for (const line of text.split("\n")) {
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!match || line.startsWith("#")) continue;
    const labels = {};
    for (const pair of (match[2] || "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[pair[1]] = pair[2];
    out.push({ name: match[1], labels, value: Number(match[3]) });
  }
  return out;
}
