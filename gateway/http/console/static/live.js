// The live view: the gateway's own /metrics, read every few seconds while the user watches, turned
// into per-runtime replica counts and charts of calls, errors, latency and cold starts; and the
// last calls the key may see, from /v1/invocations/recent.

import { api, apiText } from "./api.js";
import { h } from "./dom.js";

const PERIOD_MS = 2000;
const WINDOW_MS = 5 * 60 * 1000;
const RECENT_CALLS = 20;
const SVG = "http://www.w3.org/2000/svg";

/** The samples of a Prometheus text exposition: [{name, labels, value}]. */
export function parseMetrics(text) {
  const samples = [];
  for (const line of text.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!match) continue;
    const labels = {};
    for (const pair of (match[2] || "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[pair[1]] = pair[2];
    samples.push({ name: match[1], labels, value: Number(match[3]) });
  }
  return samples;
}

function sum(samples, name, where = () => true) {
  return samples.filter((s) => s.name === name && where(s.labels)).reduce((total, s) => total + s.value, 0);
}

/** Cumulative latency buckets over every function: Map(le -> count). */
function buckets(samples) {
  const found = new Map();
  for (const s of samples) {
    if (s.name !== "toolmesh_invocation_duration_seconds_bucket") continue;
    const le = s.labels.le === "+Inf" ? Infinity : Number(s.labels.le);
    found.set(le, (found.get(le) || 0) + s.value);
  }
  return found;
}

/** The q-quantile of the calls between two bucket snapshots, in ms (linear within a bucket). */
function quantile(q, before, after) {
  const bounds = [...after.keys()].sort((a, b) => a - b);
  const counts = bounds.map((le) => after.get(le) - (before.get(le) || 0));
  const total = counts[counts.length - 1];
  if (!total) return null;
  const rank = q * total;
  for (let i = 0; i < bounds.length; i += 1) {
    if (counts[i] >= rank) {
      const lower = i ? bounds[i - 1] : 0;
      const upper = bounds[i] === Infinity ? lower : bounds[i];
      const below = i ? counts[i - 1] : 0;
      const inside = counts[i] - below;
      return 1000 * (lower + (upper - lower) * (inside ? (rank - below) / inside : 1));
    }
  }
  return null;
}

function chart(title, series, unit) {
  const width = 360;
  const height = 90;
  const points = series.flatMap((line) => line.values.filter((v) => v !== null));
  const top = Math.max(1e-9, ...points);
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.setAttribute("class", "chart");
  const latest = series.map((line) => {
    const last = [...line.values].reverse().find((v) => v !== null);
    return `${line.name} ${last === undefined ? "none" : `${round(last)}${unit}`}`;
  });
  svg.setAttribute("role", "img");
  svg.setAttribute("aria-label", `${title}, up to the last 5 minutes; latest: ${latest.join(", ")}`);
  series.forEach((line, index) => {
    const n = line.values.length;
    const path = line.values
      .map((v, i) => (v === null ? null : `${4 + (i / Math.max(1, n - 1)) * (width - 8)},${height - 4 - (v / top) * (height - 8)}`))
      .filter(Boolean);
    const polyline = document.createElementNS(SVG, "polyline");
    polyline.setAttribute("points", path.join(" "));
    polyline.setAttribute("class", `series-${index}`);
    svg.append(polyline);
    for (const point of path) {
      // Dots too, so a lone sample (one interval with calls) still shows.
      const [x, y] = point.split(",");
      const dot = document.createElementNS(SVG, "circle");
      Object.entries({ cx: x, cy: y, r: 2, class: `series-${index}` }).forEach(([k, v]) => dot.setAttribute(k, v));
      svg.append(dot);
    }
  });
  return h("figure", { class: "chart-box" },
    h("figcaption", {}, title, h("span", { class: "muted" }, ` (top ${round(top)}${unit}) `),
      series.map((line, index) => h("span", { class: `legend series-${index}` }, `■ ${line.name} `))),
    svg,
    h("p", { class: "chart-now" }, `Latest: ${latest.join(", ")}`));
}

function round(value) {
  return value >= 100 ? Math.round(value) : Math.round(value * 100) / 100;
}

/** The last calls, newest first: when, request id, function, outcome, duration and key. */
function recentTable(recent) {
  if (!recent || recent.error) {
    return h("p", { class: "muted" }, `Recent invocations unavailable${recent ? `: ${recent.error.message}` : ""}`);
  }
  const calls = recent.invocations || [];
  return h("table", { class: "recent-invocations" },
    h("caption", {}, `Recent invocations (last ${calls.length})`),
    h("thead", {}, h("tr", {}, ["Time", "Request id", "Function", "Outcome", "Duration", "Key"].map((c) => h("th", { scope: "col" }, c)))),
    h("tbody", {}, calls.map((call) => h("tr", { class: call.outcome === "ok" ? "" : "failed" },
      h("td", {}, h("time", { datetime: call.time }, new Date(call.time).toLocaleTimeString())),
      h("td", {}, h("code", {}, call.request_id)),
      h("th", { scope: "row" }, call.function),
      h("td", { class: "outcome" }, call.outcome),
      h("td", {}, `${round(call.duration_ms)} ms`),
      h("td", {}, call.principal)))));
}

export class LiveView {
  constructor() {
    this.button = document.getElementById("live-toggle");
    this.output = document.getElementById("live-output");
    this.snapshots = [];
    this.timer = null;
    this.button.addEventListener("click", () => (this.timer ? this.stop() : this.start()));
  }

  start() {
    this.button.setAttribute("aria-pressed", "true");
    this.button.textContent = "Pause live view";
    this.tick();
    this.timer = setInterval(() => this.tick(), PERIOD_MS);
  }

  stop(reason = "") {
    clearInterval(this.timer);
    this.timer = null;
    this.button.setAttribute("aria-pressed", "false");
    this.button.textContent = "Watch live";
    if (reason) this.output.replaceChildren(h("p", { role: "alert" }, reason));
  }

  async tick() {
    let text;
    try {
      // Both at once; a failed list of calls is shown in its place, it does not stop the view.
      [text, this.recent] = await Promise.all([
        apiText("metrics"),
        api(`v1/invocations/recent?limit=${RECENT_CALLS}`).catch((error) => ({ error })),
      ]);
    } catch (error) {
      // A key without "@metrics" cannot watch: say so once instead of asking again and again.
      this.stop(`The live view needs the gateway's metrics: ${error.message}`);
      return;
    }
    const now = Date.now();
    this.snapshots.push({ at: now, samples: parseMetrics(text) });
    this.snapshots = this.snapshots.filter((s) => s.at >= now - WINDOW_MS);
    this.render();
  }

  render() {
    const latest = this.snapshots[this.snapshots.length - 1].samples;
    const runtimes = [...new Set(latest.filter((s) => s.name === "toolmesh_replicas").map((s) => s.labels.runtime))].sort();
    const of = (name, runtime, where = () => true) => sum(latest, name, (l) => l.runtime === runtime && where(l));
    const table = h("table", { class: "runtimes" },
      h("caption", {}, "Runtimes now"),
      h("thead", {}, h("tr", {}, ["Runtime", "Starting", "Ready", "Draining", "In flight", "Held", "Cold starts"].map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, runtimes.map((runtime) => h("tr", { "data-runtime": runtime },
        h("th", { scope: "row" }, runtime),
        ["starting", "ready", "draining"].map((state) => h("td", {}, of("toolmesh_replicas", runtime, (l) => l.state === state))),
        h("td", {}, of("toolmesh_inflight_requests", runtime)),
        h("td", {}, of("toolmesh_pending_requests", runtime)),
        h("td", { class: "cold-starts" }, of("toolmesh_cold_starts_total", runtime))))));
    const pairs = this.snapshots.slice(1).map((snapshot, i) => [this.snapshots[i], snapshot]);
    const delta = (name, where) => pairs.map(([a, b]) => Math.max(0, sum(b.samples, name, where) - sum(a.samples, name, where)));
    const calls = delta("toolmesh_invocations_total");
    const errors = delta("toolmesh_invocations_total", (l) => l.outcome !== "ok");
    const p = (q) => pairs.map(([a, b]) => quantile(q, buckets(a.samples), buckets(b.samples)));
    this.output.replaceChildren(
      table,
      recentTable(this.recent),
      h("div", { class: "charts" },
        chart("Calls and errors per 2 s", [{ name: "calls", values: calls }, { name: "errors", values: errors }], ""),
        chart("Call latency", [{ name: "p50", values: p(0.5) }, { name: "p95", values: p(0.95) }], " ms"),
        chart("Cold starts per 2 s", [{ name: "cold starts", values: delta("toolmesh_cold_starts_total") }], "")));
  }
}
