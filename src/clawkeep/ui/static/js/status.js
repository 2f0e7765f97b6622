// The status page: engine, memory index, embedding provider and gateway as cards; the G5
// metrics as bars; a few figures over time, sampled by this page while it is open.
import * as api from "./api.js";
import * as charts from "./charts.js";
import { $, h } from "./dom.js";

const SAMPLE_MS = 5000;
const MAX_SAMPLES = 120;
const samples = [];
let timer = null;

export function init() {
  $("status-deep").addEventListener("click", () => refresh(true));
}

export async function open() {
  await refresh(false);
  clearInterval(timer);
  timer = setInterval(() => { if (!$("view-status").hidden) sample().catch(() => {}); }, SAMPLE_MS);
}

export function close() {
  clearInterval(timer);
  timer = null;
}

async function refresh(deep) {
  const [status, memory, metricsText] = await Promise.all([
    api.get("/v1/status"), api.get("/v1/memory/status", { deep: deep || undefined }), api.get("/v1/metrics")]);
  const metrics = charts.parseMetrics(metricsText);
  record(status, metrics);
  $("status-cards").replaceChildren(...cards(status, memory));
  $("status-rates").replaceChildren(...rateCharts(status.metrics || { counters: {} }));
  $("status-trends").replaceChildren(...trendCharts());
  $("status-requests").replaceChildren(...requestCharts(metrics));
}

async function sample() {
  const [status, metricsText] = await Promise.all([api.get("/v1/status"), api.get("/v1/metrics")]);
  const metrics = charts.parseMetrics(metricsText);
  record(status, metrics);
  $("status-rates").replaceChildren(...rateCharts(status.metrics || { counters: {} }));
  $("status-trends").replaceChildren(...trendCharts());
  $("status-requests").replaceChildren(...requestCharts(metrics));
}

function record(status, metrics) {
  const m = status.metrics || {};
  const requests = metrics.filter((x) => x.name === "clawkeep_http_requests_total").reduce((sum, x) => sum + x.value, 0);
  samples.push({ t: Date.now(), turns: m.turns ?? 0, messages: status.messages, recall: m.recallHitRate ?? null,
    requests, inFlight: status.gateway?.inFlight ?? 0 });
  if (samples.length > MAX_SAMPLES) samples.shift();
}

function card(title, rows, state = null) {
  return h("section", { class: `card${state ? ` ${state}` : ""}` }, h("h2", {}, title),
    h("dl", {}, rows.filter(([, v]) => v !== undefined).map(([k, v]) => [h("dt", {}, k), h("dd", {}, v ?? "—")])));
}

function cards(status, memory) {
  const index = memory.index || {};
  const provider = memory.provider || {};
  const healthy = !index.lastEmbeddingError && index.exists !== false && index.stale !== true;
  return [
    card("Engine", [["home", status.home], ["agent", status.agentId], ["storage", status.storage],
      ["chat model", status.chatModel || "none — record mode"], ["sessions", status.sessions],
      ["messages", status.messages], ["indexed messages", status.indexedMessages], ["dmScope", status.dmScope],
      ["reset", status.resetMode], ["warnings", status.configWarnings?.length ? status.configWarnings.join("; ") : "none"]]),
    card("Memory index", [["health", healthy ? "ok" : "needs attention"], ["files", memory.files],
      ["indexed files", index.indexedFiles], ["chunks", index.chunks], ["sources", (memory.sources || []).join(", ")],
      ["stale", index.stale === undefined ? undefined : String(index.stale)],
      ["last embedding error", index.lastEmbeddingError || "none"],
      ["last corrupt rebuild", index.lastCorruptRebuild || "never"]], healthy ? "ok" : "warn"),
    card("Embedding provider", [["configured", provider.configured ?? provider.provider],
      ["model", provider.model ?? provider.name], ["health", provider.ok === undefined ? "not checked (Deep check)" : provider.ok ? "ok" : provider.error],
      ["vector store", memory.vectorStore?.backend]], provider.ok === false ? "warn" : null),
    card("Gateway", [["uptime", status.gateway ? `${Math.round(status.gateway.uptimeSeconds)} s` : undefined],
      ["in flight", status.gateway?.inFlight],
      ...(status.gateway?.background || []).map((job) => [job.name, `${job.runs} runs${job.error ? ` · ${job.error}` : ""}`])]),
  ];
}

function rateCharts(metrics) {
  const c = metrics.counters || {};
  const per100 = metrics.compactionsPer100Turns ?? null;
  const toolCalls = metrics.toolCallsPerTurn ?? null;
  return [
    charts.bars("Rates", [
      { label: "recall hit rate", value: metrics.recallHitRate ?? null, max: 1, text: charts.percent(metrics.recallHitRate ?? 0) },
      { label: "adoption rate", value: metrics.adoptionRate ?? null, max: 1, text: charts.percent(metrics.adoptionRate ?? 0) },
      { label: "supersession rate", value: metrics.supersessionRate ?? null, max: 1, text: charts.percent(metrics.supersessionRate ?? 0) },
    ]),
    charts.bars("Per turn", [
      { label: "compactions / 100 turns", value: per100, max: Math.max(10, per100 ?? 0), text: (per100 ?? 0).toFixed(1) },
      { label: "tool calls / turn", value: toolCalls, max: Math.max(2, toolCalls ?? 0), text: (toolCalls ?? 0).toFixed(2) },
    ]),
    charts.bars("Totals", Object.entries(c).sort().map(([name, value]) => ({
      label: name, value, max: Math.max(...Object.values(c), 1), text: String(value) }))),
  ];
}

function trendCharts() {
  const series = (field) => samples.map((x) => ({ t: x.t, v: x[field] }));
  return [
    charts.sparkline("messages", series("messages")),
    charts.sparkline("turns", series("turns")),
    charts.sparkline("recall hit rate", series("recall"), charts.percent),
    charts.sparkline("requests", series("requests")),
  ];
}

function requestCharts(metrics) {
  const byRoute = new Map();
  for (const x of metrics.filter((m) => m.name === "clawkeep_http_requests_total")) {
    byRoute.set(x.labels.route, (byRoute.get(x.labels.route) || 0) + x.value);
  }
  const sums = new Map(metrics.filter((m) => m.name === "clawkeep_http_request_seconds_sum").map((m) => [m.labels.route, m.value]));
  const rows = [...byRoute.entries()].sort((a, b) => b[1] - a[1]).slice(0, 12);
  const most = Math.max(1, ...rows.map(([, n]) => n));
  const latency = rows.map(([route, n]) => ({ route, ms: ((sums.get(route) || 0) / n) * 1000 }));
  const slowest = Math.max(1, ...latency.map((x) => x.ms));
  const turns = metrics.filter((m) => m.name === "clawkeep_turn_seconds_count" && m.value > 0).map((m) => {
    const sum = metrics.find((x) => x.name === "clawkeep_turn_seconds_sum" && x.labels.mode === m.labels.mode);
    return { label: `turn (${m.labels.mode})`, ms: ((sum?.value || 0) / m.value) * 1000 };
  });
  return [
    charts.bars("Requests by route", rows.map(([route, n]) => ({ label: route, value: n, max: most, text: String(n) }))),
    charts.bars("Mean latency", [...latency.map((x) => ({ label: x.route, value: x.ms, max: slowest, text: `${x.ms.toFixed(1)} ms` })),
      ...turns.map((x) => ({ label: x.label, value: x.ms, max: Math.max(slowest, x.ms), text: `${x.ms.toFixed(0)} ms` }))]),
  ];
}
