// The chat view: a session's intervals (closed ones as dividers that open on click, compactions
// marked inside), the composer with the reply streaming in, and Active Memory's trace per turn.
import * as api from "./api.js";
import { $, announce, h, plural, timeEl, toast } from "./dom.js";
import * as sidebar from "./sidebar.js";

const TRACE_KEY = "clawkeep.showTrace";
const state = {
  key: null,
  status: null, // GET /v1/status (chatModel null: record mode)
  timeline: null,
  opened: new Map(), // boundaryId -> messages of a closed interval shown open
  traces: new Map(), // user message id -> the turn's activeMemory (kept in this page only, never stored)
  sending: false,
};

export function setStatus(status) {
  state.status = status;
  const record = !status.chatModel;
  $("record-banner").hidden = !record;
  $("role-pick").hidden = !record;
}

export function init() {
  $("composer").addEventListener("submit", (event) => { event.preventDefault(); send(); });
  $("message-text").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      send();
    }
  });
  $("reset-session").addEventListener("click", resetSession);
  $("fork-session").addEventListener("click", forkSession);
  const toggle = $("trace-toggle");
  const apply = (on) => {
    toggle.setAttribute("aria-pressed", String(on));
    $("transcript").classList.toggle("show-trace", on);
    localStorage.setItem(TRACE_KEY, on ? "1" : "");
  };
  toggle.addEventListener("click", () => apply(toggle.getAttribute("aria-pressed") !== "true"));
  apply(Boolean(localStorage.getItem(TRACE_KEY)));
}

// --- opening a session ---------------------------------------------------------------------
export async function open(key, { messageId = null, focus = true } = {}) {
  if (key !== state.key) state.opened.clear();
  state.key = key;
  sidebar.setCurrent(key);
  if (!key) return showEmpty();
  let info, timeline, history;
  try {
    [info, timeline, history] = await Promise.all([
      api.get(api.sessionPath(key)), api.get(api.sessionPath(key, "/timeline")), api.get(api.sessionPath(key, "/history")),
    ]);
  } catch (error) {
    if (state.key !== key) return;
    // Never leave another session's transcript and composer under this address: a message typed
    // there would go to a key that does not exist.
    if (error.status === 404) {
      return showProblem("Session not found", `There is no session “${key}” (it may have been deleted, or the address is wrong).`);
    }
    return showProblem("Could not open this session", `${key}: ${error.message}`); // said in the view, not thrown
  }
  if (state.key !== key) return; // another session was opened meanwhile
  setComposer(true);
  state.timeline = timeline;
  renderHead(info);
  let target = null;
  if (messageId) target = await openAround(messageId);
  renderTranscript(history.messages);
  if (target) return highlight(target);
  scrollToEnd();
  if (focus) $("message-text").focus();
}

function setComposer(enabled) {
  $("message-text").disabled = $("send").disabled = !enabled;
}

// A chat view with nothing to send to (missing session, bad address): title and text say why.
export function showProblem(title, text) {
  state.key = null;
  state.timeline = null;
  sidebar.setCurrent(null);
  $("chat-title").textContent = title;
  $("chat-key").textContent = "";
  $("chat-badges").replaceChildren();
  $("incognito-note").hidden = true;
  $("reset-session").disabled = $("fork-session").disabled = true;
  setComposer(false);
  $("transcript").replaceChildren(h("p", { class: "muted empty problem", role: "status" }, text));
  $("chat-title").focus();
}

function showEmpty() {
  setComposer(true);
  $("chat-title").textContent = "Home";
  $("chat-key").textContent = "";
  $("chat-badges").replaceChildren();
  $("incognito-note").hidden = true;
  $("reset-session").disabled = $("fork-session").disabled = true;
  $("transcript").replaceChildren(h("p", { class: "muted empty" },
    "No main session yet: your first message here starts it. Or open a new thread from the sidebar."));
}

function renderHead(info) {
  const listed = sidebar.sessions.find((row) => row.key === info.key); // the list row has the title
  $("chat-title").textContent = sidebar.sessionTitle({ ...listed, ...info });
  $("chat-key").textContent = info.key;
  $("chat-badges").replaceChildren(...[
    h("span", { class: "badge" }, info.kind),
    info.incognito ? h("span", { class: "badge incognito-badge" }, "incognito") : null,
    h("span", { class: "badge quiet" }, plural(info.messageCount, "message")),
    info.compactionCount ? h("span", { class: "badge quiet" }, plural(info.compactionCount, "compaction")) : null,
  ].filter(Boolean));
  $("incognito-note").hidden = !info.incognito;
  $("reset-session").disabled = $("fork-session").disabled = false;
}

// A message of any interval: re-open the interval it lies in (history with messageId).
async function openAround(messageId) {
  const around = await api.get(api.sessionPath(state.key, "/history"), { messageId });
  const ids = new Set(around.messages.map((m) => m.messageId));
  const holder = state.timeline.intervals.find((i) => !i.open && (ids.has(i.firstMessageId) || ids.has(i.lastMessageId)));
  if (holder) state.opened.set(holder.boundaryId, around.messages);
  return messageId;
}

// --- drawing the transcript ----------------------------------------------------------------
function renderTranscript(openMessages) {
  const box = $("transcript");
  const parts = [];
  const intervals = state.timeline.intervals;
  if (state.timeline.omittedIntervals) {
    parts.push(h("p", { class: "muted" }, `${plural(state.timeline.omittedIntervals, "older interval")} not shown`));
  }
  for (const interval of intervals) {
    if (interval.open) parts.push(h("section", { class: "interval open", "aria-label": "Current interval" },
      messageList(openMessages, interval)));
    else parts.push(closedInterval(interval));
  }
  if (!openMessages.length) parts.push(h("p", { class: "muted empty" }, "No messages in this interval yet."));
  box.replaceChildren(...parts);
}

function closedInterval(interval) {
  const shown = state.opened.get(interval.boundaryId);
  const bodyId = `interval-${interval.index}`;
  const when = [timeEl(interval.firstMessageAt || interval.startedAt), " – ", timeEl(interval.endedAt)];
  const toggle = h("button", {
    type: "button", class: "interval-toggle", "aria-expanded": String(Boolean(shown)), "aria-controls": bodyId,
    disabled: interval.messageCount === 0, onclick: () => toggleInterval(interval),
  }, h("span", { class: "chevron", "aria-hidden": "true" }, shown ? "▾" : "▸"),
  h("span", {}, interval.messageCount ? `Earlier interval · ${plural(interval.messageCount, "message")}` : "Empty interval"),
  h("span", { class: "when" }, when),
  interval.preview ? h("span", { class: "preview" }, `“${interval.preview}”`) : null);
  return h("section", { class: "interval closed", dataset: { boundary: interval.boundaryId } },
    toggle,
    h("div", { id: bodyId, class: "interval-body", hidden: !shown }, shown ? messageList(shown, interval) : null),
    h("div", { class: "divider reset-divider", role: "separator" },
      h("span", {}, `Reset (${interval.closedBy || "manual"})`, " · ", timeEl(interval.endedAt))));
}

async function toggleInterval(interval) {
  if (state.opened.has(interval.boundaryId)) {
    state.opened.delete(interval.boundaryId);
  } else {
    const history = await api.get(api.sessionPath(state.key, "/history"), { messageId: interval.firstMessageId });
    state.opened.set(interval.boundaryId, history.messages);
  }
  const section = document.querySelector(`.interval.closed[data-boundary="${CSS.escape(interval.boundaryId)}"]`);
  const fresh = closedInterval(interval);
  section.replaceWith(fresh);
  fresh.querySelector(".interval-toggle").focus();
}

function messageList(messages, interval) {
  const marks = new Map(); // first kept message id -> compactions before it
  const orphans = [];
  const ids = new Set(messages.map((m) => m.messageId));
  for (const c of interval.compactions || []) {
    if (c.firstKeptMessageId && ids.has(c.firstKeptMessageId)) {
      marks.set(c.firstKeptMessageId, [...(marks.get(c.firstKeptMessageId) || []), c]);
    } else if (c.firstKeptMessageId) {
      orphans.push(c); // its kept tail starts before what is shown
    } else {
      marks.set(null, [...(marks.get(null) || []), c]); // everything was compacted: after the last message
    }
  }
  const out = orphans.map(compactionDivider);
  for (const m of messages) {
    for (const c of marks.get(m.messageId) || []) out.push(compactionDivider(c));
    out.push(messageEl(m));
  }
  for (const c of marks.get(null) || []) out.push(compactionDivider(c));
  return h("div", { class: "messages" }, out);
}

function compactionDivider(c) {
  return h("div", { class: "divider compaction-divider", role: "separator" },
    h("details", {},
      h("summary", {}, `Compacted ${plural(c.compactedMessages, "earlier message")} (${c.reason || "auto"})`, " · ",
        timeEl(c.at)),
      h("p", { class: "summary" }, c.summary || "(empty summary)")));
}

const ROLE_NAMES = { user: "You", assistant: "Assistant", system: "System", tool: "Tool" };

// sessions_send stores another session's message as a user entry: it is not the operator's words.
function speaker(m) {
  if (m.provenance?.kind === "inter_session") return `from ${m.provenance.sourceSessionKey || "another session"}`;
  return ROLE_NAMES[m.role] || m.role;
}

function messageEl(m) {
  const inter = m.provenance?.kind === "inter_session";
  return h("article", { class: `msg ${m.role}${inter ? " inter-session" : ""}`, dataset: { id: m.messageId || "" }, tabindex: "-1" },
    h("header", {}, h("span", { class: "role" }, speaker(m)), " ", timeEl(m.timestamp)),
    h("div", { class: "text" }, m.text),
    traceEl(state.traces.get(m.messageId)));
}

function traceEl(recalled) {
  if (!recalled) return null;
  const facts = [`Active Memory: ${recalled.status}`];
  if (recalled.lane) facts.push(`lane ${recalled.lane}`);
  facts.push(`${recalled.elapsedMs} ms`);
  facts.push(recalled.pastQuestion ? "past question" : "not a past question");
  if (recalled.reason) facts.push(recalled.reason);
  return h("div", { class: "trace" },
    h("div", { class: "trace-line" }, facts.join(" · ")),
    recalled.summary
      ? h("blockquote", { class: "injected" }, h("span", { class: "label" }, "Injected before your message: "), recalled.summary)
      : h("div", { class: "injected none" }, "Nothing injected."));
}

function highlight(messageId) {
  const el = document.querySelector(`#transcript .msg[data-id="${CSS.escape(messageId)}"]`);
  if (!el) return toast("That message is not in the part of the interval shown (it may be cut for size).");
  el.classList.add("highlight");
  el.scrollIntoView({ block: "center" });
  el.focus();
}

function scrollToEnd() {
  const box = $("transcript");
  box.scrollTop = box.scrollHeight;
}

// --- sending -------------------------------------------------------------------------------
async function send() {
  const input = $("message-text");
  const text = input.value;
  if (!text.trim() || state.sending) return;
  const role = $("role-pick").hidden ? "user" : $("message-role").value;
  const body = { text, role };
  if (state.key) body.session = state.key;
  state.sending = true;
  $("send").disabled = true;
  input.value = "";
  const box = $("transcript");
  box.querySelector(".empty")?.remove();
  let openList = box.querySelector(".interval.open .messages");
  if (!openList) {
    openList = h("div", { class: "messages" });
    box.append(h("section", { class: "interval open" }, openList));
  }
  // Shown as pending until the gateway accepts it; removed again if it is refused.
  const pending = messageEl({ role, text, timestamp: new Date().toISOString(), messageId: "" });
  pending.classList.add("pending");
  openList.append(pending);
  const reply = h("article", { class: "msg assistant streaming", "aria-busy": "true" },
    h("header", {}, h("span", { class: "role" }, "Assistant")), h("div", { class: "tools" }), h("div", { class: "text" }));
  if (role === "user") openList.append(reply);
  scrollToEnd();
  try {
    const result = await api.streamMessage(body, {
      token: (data) => { reply.querySelector(".text").append(data.text); scrollToEnd(); },
      discard: () => { reply.querySelector(".text").textContent = ""; },
      tool_call: (data) => reply.querySelector(".tools").append(
        h("span", { class: `tool-chip${data.isError ? " failed" : ""}` }, `tool: ${data.name}`)),
    });
    if (!$("role-pick").hidden) $("message-role").value = "user"; // stored: back to user, so a following /command runs as one
    await finish(result);
  } catch (error) {
    reply.remove();
    if (!error.stored) {
      // Refused, nothing stored: take the bubble back and keep the text (and anything typed since).
      pending.remove();
      input.value = input.value ? `${text}\n${input.value}` : text;
      // a stream cut short may have stored it: its message says so, and the reload shows it
      toast(error.code === "stream_ended" ? error.message : `Not sent: ${error.message}`);
      if (error.code === "stream_ended") await open(state.key, { focus: false });
    } else {
      if (!$("role-pick").hidden) $("message-role").value = "user";
      toast(error.message);
      await open(state.key, { focus: false });
    }
  } finally {
    state.sending = false;
    $("send").disabled = input.disabled; // still off when the view has nothing to send to
    input.focus();
  }
}

async function finish(result) {
  if (result.activeMemory && result.messageId) state.traces.set(result.messageId, result.activeMemory);
  const key = result.sessionKey;
  await sidebar.refresh();
  await open(key, { focus: false });
  if (location.hash !== `#/chat/${encodeURIComponent(key)}`) history.replaceState(null, "", `#/chat/${encodeURIComponent(key)}`);
  const box = $("transcript");
  if (result.command) box.append(commandNote(result));
  else if (result.mode === "record" && result.role === "user") box.append(note("Recorded — record mode, nobody replies."));
  if (result.remembered) box.append(rememberedNote(result.remembered));
  if (result.compaction?.compacted) box.append(note("The conversation was compacted."));
  scrollToEnd();
  announce(result.reply ? `Assistant: ${result.reply.slice(0, 400)}` : "Message recorded");
}

function commandText(result) {
  if (result.reset) return `${result.command}: the interval was closed; a new one begins.`;
  if (result.status && "compacted" in result.status) {
    const c = result.status;
    return c.compacted ? `Compacted ${plural(c.compactedMessages, "earlier message")}; ${c.keptMessages} kept as they were.`
      : `Not compacted: ${String(c.reason).replace(/^not compacted:\s*/i, "")}.`;
  }
  return result.command;
}

// A command's status (/status, /dreaming status …) as a two-column table, nested values flattened
// to dotted names ("usage.totalTokens"), not one run-on line.
function commandNote(result) {
  const status = result.status;
  if (!status || result.reset || "compacted" in status) return note(commandText(result));
  const rows = statusRows(status).map(([name, value]) =>
    h("tr", {}, h("th", { scope: "row" }, name), h("td", {}, value)));
  return h("figure", { class: "turn-note status-table", role: "status" },
    h("table", {}, h("caption", {}, `/${result.command}`), h("tbody", {}, rows)));
}

function statusRows(value, prefix = "") {
  return Object.entries(value).flatMap(([key, v]) => {
    const name = prefix + key;
    if (v && typeof v === "object" && !Array.isArray(v)) return statusRows(v, `${name}.`);
    if (Array.isArray(v)) return [[name, v.map((x) => (typeof x === "object" ? JSON.stringify(x) : String(x))).join(", ") || "—"]];
    return [[name, v === null || v === undefined || v === "" ? "—" : String(v)]];
  });
}

// What a record-mode "remember …" did: the line itself, where it went and what it replaced.
function rememberedNote(r) {
  if (r.status === "refused") return note(`Not remembered (refused): ${r.reason || "a write filter refused it"}`);
  const item = r.item || {};
  const lead = r.status === "duplicate" ? "Already remembered" : "Remembered";
  const replaced = r.superseded?.length ? ` — replaces ${plural(r.superseded.length, "earlier line")}` : "";
  return h("p", { class: "turn-note remembered", role: "status" },
    `${lead}: `, h("q", { class: "remembered-text" }, item.text || ""), ` in ${item.path || "memory"}${replaced} · `,
    h("a", { href: "#/memory" }, "see Memory"));
}

const note = (text) => h("p", { class: "turn-note", role: "status" }, text);

async function resetSession() {
  if (!state.key) return;
  await api.post(api.sessionPath(state.key, "/reset"));
  state.opened.clear();
  await sidebar.refresh();
  await open(state.key);
  announce("Session reset: a new interval begins");
}

async function forkSession() {
  if (!state.key) return;
  const child = await api.post(api.sessionPath(state.key, "/fork"));
  await sidebar.refresh();
  location.hash = `#/chat/${encodeURIComponent(child.key)}`;
  announce("Forked into a new thread");
}

export const currentKey = () => state.key;
