// The Dreams tab: Dreaming's state (on/off, schedule, last sweep), what each sweep promoted into
// MEMORY.md with an undo per line and per run, the Light / REM / Deep blocks of DREAMS.md, and
// the Dream Diary. Everything is /v1/dreaming…; nothing here writes a file itself.
import * as api from "./api.js";
import { $, announce, h, plural, timeEl, toast } from "./dom.js";

const PHASES = [["light", "Light Sleep", "what was staged from the recent notes and recalls"],
  ["rem", "REM Sleep", "the themes among the candidates"],
  ["deep", "Deep Sleep", "each candidate's decision and its reason"]];

export function init() {
  $("dreams-toggle").addEventListener("click", toggle);
  $("dreams-sweep").addEventListener("click", sweep);
}

export async function open() {
  const [status, review] = await Promise.all([api.get("/v1/dreaming"), api.get("/v1/dreaming/review")]);
  showStatus(status);
  $("dreams-runs").replaceChildren(...runsEl(review));
  $("dreams-blocks").replaceChildren(...PHASES.map(([key, title, what]) => blockEl(key, title, what, review.blocks?.[key])));
  diaryEl(review);
}

const isoOf = (ms) => (ms ? new Date(ms).toISOString() : null);

// --- state ------------------------------------------------------------------------------------
function showStatus(status) {
  const toggleButton = $("dreams-toggle");
  toggleButton.setAttribute("aria-checked", String(status.enabled));
  toggleButton.querySelector(".switch-state").textContent = status.enabled ? "on" : "off";
  $("dreams-off").hidden = status.enabled;
  const lock = status.lock ? `held by ${status.lock.owner}${status.lock.pid ? ` (pid ${status.lock.pid})` : ""}` : "free";
  const rows = [
    ["schedule", `${status.frequency}${status.timezone ? ` (${status.timezone})` : ""}`],
    ["next sweep", status.enabled ? timeEl(status.nextRun) : "none — Dreaming is off"],
    ["last sweep", status.lastSweepAt ? [timeEl(isoOf(status.lastSweepAt)), status.lastRunId ? ` · ${status.lastRunId}` : ""] : "never"],
    ["model", status.model || "none — REM and the diary are written by rule"],
    ["short-term claims", status.shortTerm], ["staged", status.staged], ["promoted today", status.promotedToday],
    ["recall traces waiting", status.pendingTraces], ["sweep lock", lock], ["review file", status.dreamsFile],
  ];
  $("dreams-state").replaceChildren(h("section", { class: `card ${status.enabled ? "ok" : "warn"}` },
    h("h2", {}, status.enabled ? "Dreaming is on" : "Dreaming is off"),
    h("dl", {}, rows.map(([k, v]) => [h("dt", {}, k), h("dd", {}, v ?? "—")]))));
}

async function toggle() {
  const on = $("dreams-toggle").getAttribute("aria-checked") !== "true";
  await api.put("/v1/dreaming", { enabled: on });
  await open();
  announce(on ? "Dreaming is on" : "Dreaming is off");
}

async function sweep() {
  const button = $("dreams-sweep");
  button.disabled = true;
  button.setAttribute("aria-busy", "true");
  announce("Sweeping…");
  try {
    const report = await api.post("/v1/dreaming/sweep", {});
    if (report.status === "locked") {
      toast(`Another sweep is running (${report.holder?.owner || "someone else"}); nothing was done.`);
      return;
    }
    await open();
    announce(`Sweep ${report.runId} done: ${plural(report.promoted.length, "item")} promoted`);
  } finally {
    button.disabled = false;
    button.removeAttribute("aria-busy");
  }
}

// --- promotions -------------------------------------------------------------------------------
function runsEl(review) {
  if (!review.runs.length) return [h("p", { class: "muted" }, "Nothing promoted yet.")];
  const out = review.runs.map(runEl);
  if (review.omittedRuns) out.push(h("p", { class: "muted" }, `${plural(review.omittedRuns, "older run")} not shown.`));
  return out;
}

function runEl(run) {
  const open = run.items.filter((item) => !item.undone);
  const title = h("h3", { id: `run-${run.runId}`, tabindex: "-1" }, run.runId,
    h("span", { class: "count" }, timeEl(isoOf(run.at))));
  const head = h("div", { class: "run-head" }, title,
    run.status === "undone" ? h("span", { class: "badge quiet" }, "undone") : null,
    open.length > 1 ? h("button", { type: "button", class: "undo-run", "aria-label": `Undo all of run ${run.runId}`,
      onclick: (event) => confirmUndo(event.target.closest(".run-head"), run.runId,
        `Remove the ${open.length} lines of this run from MEMORY.md? `, `run-${run.runId}`) }, "Undo run") : null);
  return h("section", { class: "run" }, head, h("ul", { class: "items promoted" }, run.items.map((item) => itemEl(run, item))));
}

function itemEl(run, item) {
  const state = item.undone ? ["undone", "undone"] : item.inMemory ? ["active", "in MEMORY.md"] : ["expired", "gone from MEMORY.md"];
  const facts = [item.src ? h("span", {}, "from ", h("code", {}, item.src)) : null,
    item.owner ? h("span", {}, "stated in ", h("code", {}, item.owner)) : null,
    item.supersedes.length ? h("span", {}, "replaced ", h("code", {}, item.supersedes.join(", "))) : null,
    h("code", {}, item.id)].filter(Boolean);
  const li = h("li", { class: `item promoted-item${item.undone ? " status-superseded" : ""}`, id: `promoted-${item.id}`,
    tabindex: "-1", dataset: { itemId: item.id } },
    h("span", { class: `badge status-badge ${state[0]}` }, state[1]),
    h("p", { class: "item-text" }, item.text),
    h("p", { class: "item-meta" }, facts.flatMap((part, i) => (i ? [" · ", part] : [part]))),
    h("div", { class: "item-actions" }, item.undone ? null : h("button", { type: "button", class: "danger",
      "aria-label": `Undo: ${item.text}`,
      onclick: () => confirmUndo(li.querySelector(".item-actions"), item.id, "Remove this line from MEMORY.md? ",
        `promoted-${item.id}`) }, "Undo")));
  return li;
}

function confirmUndo(box, target, question, focusId) {
  const before = [...box.childNodes];
  const keep = h("button", { type: "button", onclick: () => { box.replaceChildren(...before); box.querySelector("button")?.focus(); } },
    "Keep it");
  box.replaceChildren(...before.filter((node) => node.tagName !== "BUTTON"), h("span", { class: "confirm" }, question),
    h("button", { type: "button", class: "danger", onclick: async () => {
      const undone = await api.post("/v1/dreaming/undo", { target });
      await open();
      announce(`Undone: ${plural(undone.items.length, "line")} removed from MEMORY.md (${undone.restored})`);
      (document.getElementById(focusId) || $("promoted-title")).focus();
    } }, "Yes, undo"), keep);
  keep.focus();
}

// --- DREAMS.md ---------------------------------------------------------------------------------
function blockEl(key, title, what, body) {
  return h("section", { class: `phase phase-${key}`, "aria-labelledby": `phase-${key}-title` },
    h("h3", { id: `phase-${key}-title` }, title, h("span", { class: "count" }, what)),
    body ? markdown(body) : h("p", { class: "muted" }, "Not run yet."));
}

// The blocks are short generated Markdown: an italic summary line, bullet lines, inline code.
function markdown(body) {
  const out = [];
  let list = null;
  for (const line of body.split("\n")) {
    if (line.startsWith("- ")) {
      if (!list) out.push(list = h("ul", { class: "phase-lines" }));
      list.append(h("li", {}, inline(line.slice(2))));
      continue;
    }
    list = null;
    if (!line.trim()) continue;
    const summary = /^_(.*)_$/.exec(line.trim());
    out.push(summary ? h("p", { class: "phase-summary muted" }, inline(summary[1])) : h("p", {}, inline(line)));
  }
  return out;
}

function inline(text) {
  return text.split(/(`[^`]*`)/).filter(Boolean)
    .map((part) => (part.length > 1 && part.startsWith("`") && part.endsWith("`") ? h("code", {}, part.slice(1, -1)) : part));
}

function diaryEl(review) {
  const list = $("dreams-diary");
  const entries = review.diary || [];
  list.replaceChildren(...entries.map((entry) => h("li", { class: "diary-entry" },
    h("h3", {}, inline(entry.heading), entry.backfill ? h("span", { class: "badge quiet" }, "backfill") : null),
    markdown(entry.text))));
  if (!entries.length) list.append(h("li", { class: "muted" }, "No diary entry yet: the first sweep writes one."));
  if (review.omittedDiary) list.append(h("li", { class: "muted" }, `Older entries not shown: ${review.omittedDiary}.`));
}
