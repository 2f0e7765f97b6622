// The session list, grouped as the operator thinks of it (SPEC G2): Home (the main session),
// Groups (group and channel chats and their threads), Threads (dashboard threads; incognito
// marked), Coding (coding sessions), then Direct messages (per-peer DMs, under a dmScope other
// than main) and System (cron, hooks, heartbeat, sub-agents, anything else).
import * as api from "./api.js";
import { $, ago, h, plural } from "./dom.js";

const GROUPS = [
  { id: "home", title: "Home", kinds: ["main"], always: true, empty: "No main session yet." },
  { id: "groups", title: "Groups", kinds: ["group", "channel", "thread"], always: true, empty: "No group chats." },
  { id: "threads", title: "Threads", kinds: ["dashboard"], always: true, empty: "No threads yet." },
  { id: "coding", title: "Coding", kinds: ["coding"], always: true, empty: "No coding sessions." },
  { id: "direct", title: "Direct messages", kinds: ["direct"] },
  { id: "system", title: "System", kinds: null },
];

export const HOME = "~home"; // the main session before it exists: the first message creates it

export function groupOf(session) {
  return GROUPS.find((g) => g.kinds && g.kinds.includes(session.kind)) || GROUPS[GROUPS.length - 1];
}

export function sessionTitle(session) {
  if (session.label) return session.label;
  if (session.kind === "main") return "Main session";
  if (session.title) return session.title;
  if (session.kind === "dashboard") return session.incognito ? "Incognito thread" : "New thread";
  return session.key.split(":").slice(2).join(":");
}

let current = null;
export let sessions = [];

export function setCurrent(key) {
  current = key;
  for (const link of document.querySelectorAll("#session-groups a[data-key]")) {
    if (link.dataset.key === key) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
}

export async function refresh() {
  sessions = await api.get("/v1/sessions");
  const box = $("session-groups");
  const focused = box.contains(document.activeElement) ? document.activeElement.dataset.key : null;
  const sections = GROUPS.map((group) => {
    const members = sessions.filter((session) => groupOf(session) === group);
    if (!members.length && !group.always) return null;
    const list = members.length
      ? h("ul", { class: "sessions" }, members.map(entry))
      : h("p", { class: "muted empty" }, group.empty,
        group.id === "home" && !oneSessionOnly() ? [" ", h("a", { href: `#/chat/${HOME}` }, "Open Home")] : null);
    return h("section", { class: `group group-${group.id}`, "aria-labelledby": `group-${group.id}` },
      h("h2", { id: `group-${group.id}` }, group.title, members.length ? h("span", { class: "count" }, members.length) : null),
      list);
  });
  box.replaceChildren(...sections.filter(Boolean));
  setCurrent(current);
  if (focused) box.querySelector(`a[data-key="${CSS.escape(focused)}"]`)?.focus(); // a refresh never steals focus
  return sessions;
}

// a session or peer token reaches its one conversation: Home is not its to open
const oneSessionOnly = () => ["session", "peer"].includes(document.body.dataset.scope);

function entry(session) {
  const last = session.lastInteractionAt || session.updatedAt;
  return h("li", {},
    h("a", { href: `#/chat/${encodeURIComponent(session.key)}`, dataset: { key: session.key },
      class: session.incognito ? "session incognito" : "session" },
    h("span", { class: "session-title" }, sessionTitle(session)),
    session.incognito ? h("span", { class: "badge incognito-badge" }, "incognito") : null,
    h("span", { class: "session-meta" }, `${plural(session.messageCount, "message")} · ${ago(last)}`)));
}
