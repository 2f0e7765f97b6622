// The memory panel: hybrid search with scores and citations, the remembered items of MEMORY.md
// and the daily notes with their status (edit and delete land in the Markdown and re-index),
// and what the write filters refused lately.
import * as api from "./api.js";
import { $, announce, h, plural, timeEl, toast } from "./dom.js";

export function init() {
  $("memory-search").addEventListener("submit", (event) => { event.preventDefault(); search(); });
  $("items-filter").addEventListener("change", loadItems);
  $("refusals-days").addEventListener("change", loadRefusals);
}

export async function open() {
  await Promise.all([loadItems(), loadRefusals()]);
}

// --- search ----------------------------------------------------------------------------------
async function search() {
  const query = $("memory-q").value.trim();
  if (!query) return;
  const found = await api.get("/v1/memory/search", { q: query, mode: $("memory-mode").value, limit: 10 });
  const list = $("memory-hits");
  list.replaceChildren(...found.results.map(hitEl));
  if (!found.results.length) list.append(h("li", { class: "muted" }, "Nothing found."));
  announce(`${plural(found.results.length, "memory result")}`);
}

function hitEl(hit) {
  const citation = hit.source ? hit.source.replace(/^Source:\s*/, "") : `${hit.path}#L${hit.startLine}-L${hit.endLine}`;
  const bar = h("span", { class: "bar" }, h("span", { class: "fill" }));
  bar.firstChild.style.width = `${Math.round(Math.max(0, Math.min(1, hit.score)) * 100)}%`;
  return h("li", { class: "hit memory-hit" },
    h("div", { class: "hit-head" },
      h("span", { class: "score", title: "relevance score (0-1)" }, hit.score.toFixed(2)), bar,
      h("button", { type: "button", class: "link cite", onclick: () => showFile(hit.path, hit.startLine, hit.endLine) },
        citation),
      hit.sessionKey && hit.messageIds?.length
        ? h("a", { href: `#/chat/${encodeURIComponent(hit.sessionKey)}?m=${encodeURIComponent(hit.messageIds[0])}` },
          "open conversation")
        : null),
    h("p", { class: "snippet" }, hit.snippet));
}

async function showFile(path, from, to) {
  const start = Math.max(1, from - 3);
  const file = await api.get("/v1/memory/file", { path, from: start, lines: to - start + 8 });
  const lines = file.text.split("\n").map((text, i) => {
    const number = start + i;
    return h("span", { class: number >= from && number <= to ? "line hit-line" : "line" },
      h("span", { class: "ln", "aria-hidden": "true" }, number), text, "\n");
  });
  const box = $("memory-file");
  box.replaceChildren(
    h("div", { class: "file-head" }, h("strong", {}, `${file.path}`), ` lines ${file.from}–${file.to} of ${file.totalLines}`,
      h("button", { type: "button", class: "link", onclick: () => { box.hidden = true; } }, "close")),
    h("pre", { tabindex: "0" }, lines));
  box.hidden = false;
  box.querySelector("pre").focus();
}

// --- items -----------------------------------------------------------------------------------
let items = [];

async function loadItems() {
  items = await api.get("/v1/memory/items", { status: $("items-filter").value });
  const byPath = new Map();
  for (const item of items) byPath.set(item.path, [...(byPath.get(item.path) || []), item]);
  const paths = [...byPath.keys()].sort((a, b) => (a === "MEMORY.md" ? -1 : b === "MEMORY.md" ? 1 : b.localeCompare(a)));
  const box = $("memory-items");
  box.replaceChildren(...paths.map((path) => h("section", { class: "file-group" },
    h("h3", {}, path, h("span", { class: "count" }, byPath.get(path).length)),
    h("ul", { class: "items" }, byPath.get(path).map(itemEl)))));
  if (!items.length) box.append(h("p", { class: "muted" }, "No remembered items."));
}

function itemEl(item) {
  const li = h("li", { class: `item status-${item.status}`, id: `item-${item.id}`, tabindex: "-1" },
    h("span", { class: `badge status-badge ${item.status}` }, item.status),
    h("p", { class: "item-text" }, item.text),
    h("p", { class: "item-meta" }, itemFacts(item)),
    h("div", { class: "item-actions" },
      h("button", { type: "button", onclick: () => edit(li, item) }, "Edit"),
      h("button", { type: "button", class: "danger", onclick: () => confirmDelete(li, item) }, "Delete")));
  return li;
}

function itemFacts(item) {
  const out = [];
  if (item.at) out.push(`remembered ${item.at}`);
  if (item.seen) out.push(`last said ${item.seen}`);
  if (item.from) out.push(`from ${item.from}`);
  if (item.edits) out.push(`corrects ${item.edits}`);
  if (item.status === "superseded" && item.supersededBy) {
    const next = items.find((other) => other.id === item.supersededBy);
    out.push(h("a", { href: "#/memory", class: "successor", onclick: (event) => { event.preventDefault(); goTo(item.supersededBy); } },
      `superseded by “${next ? next.text : item.supersededBy}”`));
  } else if (item.status === "forgotten") {
    out.push(h("span", { class: "forgotten-on" }, `forgotten ${item.forgotten}${item.forgottenBy ? ` by ${item.forgottenBy}` : ""}`));
  } else if (item.status === "expired") {
    out.push(h("span", { class: "expired-on" }, `expired on ${item.expires}`));
  } else if (item.expires) {
    out.push(`expires ${item.expires}`);
  }
  return out.flatMap((part, i) => (i ? [" · ", part] : [part]));
}

function goTo(id) {
  const target = document.getElementById(`item-${id}`);
  if (!target) return toast("The newer item is not in this list (change the filter to see it).");
  target.classList.add("highlight");
  target.scrollIntoView({ block: "center" });
  target.focus();
}

function edit(li, item) {
  const field = h("textarea", { rows: 2, "aria-label": "Item text" });
  field.value = item.text;
  const problem = h("p", { class: "form-error", role: "alert", hidden: true });
  const form = h("form", { class: "item-edit" }, field, problem,
    h("div", { class: "item-actions" },
      h("button", { type: "submit" }, "Save"),
      h("button", { type: "button", onclick: () => li.replaceWith(itemEl(item)) }, "Cancel")));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      await api.put(`/v1/memory/items/${encodeURIComponent(item.id)}`, { text: field.value, baseText: item.text });
      await loadItems();
      announce("Item saved");
      goTo(item.id);
    } catch (error) {
      problem.textContent = error.message;
      problem.hidden = false;
    }
  });
  field.addEventListener("keydown", (event) => {
    if (event.key === "Escape") li.replaceWith(itemEl(item));
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) { event.preventDefault(); form.requestSubmit(); }
  });
  li.replaceChildren(form);
  field.focus();
}

function confirmDelete(li, item) {
  const actions = li.querySelector(".item-actions");
  const keep = h("button", { type: "button", onclick: () => li.replaceWith(itemEl(item)) }, "Keep it");
  actions.replaceChildren(h("span", {}, "Delete this item from ", h("code", {}, item.path), "? "),
    h("button", { type: "button", class: "danger", onclick: async () => {
      try {
        await api.del(`/v1/memory/items/${encodeURIComponent(item.id)}`);
        announce("Item deleted");
      } catch (error) {
        // e.g. another writer removed or changed it first: say so, then show the list as it is now
        toast(`Not deleted: ${error.message}. The list was reloaded.`);
      }
      await loadItems().catch((error) => toast(`Could not reload the items: ${error.message}`));
      $("items-title").focus();
    } }, "Yes, delete"), keep);
  keep.focus();
}

// --- refusals --------------------------------------------------------------------------------
async function loadRefusals() {
  const rows = await api.get("/v1/memory/refusals", { days: $("refusals-days").value });
  const box = $("memory-refusals");
  if (!rows.length) return box.replaceChildren(h("p", { class: "muted" }, "Nothing was refused in that time."));
  box.replaceChildren(h("table", { class: "refusals" },
    h("thead", {}, h("tr", {}, ["When", "Source", "Reason", "What (redacted)", "Session"].map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", {}, rows.map((row) => h("tr", {},
      h("td", {}, timeEl(row.at)), h("td", {}, row.source), h("td", {}, row.reason),
      h("td", { class: "excerpt" }, row.excerpt), h("td", { class: "key" }, row.sessionKey || "—"))))));
}
