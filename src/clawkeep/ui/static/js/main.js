// The page: hash routes (#/chat/<key>[?m=<messageId>], #/search?q=…, #/memory, #/dreams, #/status),
// the sidebar's buttons, session search, and errors shown instead of thrown away.
import * as api from "./api.js";
import * as chat from "./chat.js";
import { $, announce, h, plural, timeEl, toast } from "./dom.js";
import * as dreams from "./dreams.js";
import * as memory from "./memory.js";
import * as sidebar from "./sidebar.js";
import * as status from "./status.js";

const VIEWS = ["chat", "search", "memory", "dreams", "status"];
const OPERATOR_VIEWS = ["memory", "dreams", "status"]; // their routes answer 403 to a scoped token
let credential = null; // the signed-in scoped token (GET /v1/status), null for the operator

function parseHash() {
  const [path, query] = (location.hash.replace(/^#\/?/, "") || "chat").split("?");
  const [view, ...rest] = path.split("/");
  let arg = null;
  let bad = false;
  try {
    arg = rest.length ? decodeURIComponent(rest.join("/")) : null;
  } catch {
    bad = true; // malformed percent-encoding (URIError): said in the view, not thrown
  }
  const allowed = VIEWS.includes(view) && !(credential && OPERATOR_VIEWS.includes(view));
  return { view: allowed ? view : "chat", arg, bad, params: new URLSearchParams(query || "") };
}

function show(view) {
  for (const name of VIEWS) $(`view-${name}`).hidden = name !== view;
  for (const link of document.querySelectorAll("nav.views a")) {
    if (link.dataset.view === view || (view === "search" && link.dataset.view === "chat")) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  if (view !== "status") status.close();
  closeDrawer();
}

function closeDrawer() {
  document.body.classList.remove("sidebar-open");
  $("menu").setAttribute("aria-expanded", "false");
}

function homeKey() {
  const main = sidebar.sessions.find((s) => s.kind === "main");
  return main ? main.key : null;
}

async function route() {
  const { view, arg, bad, params } = parseHash();
  show(view);
  if (bad && view === "chat") { // the other views take no argument
    return chat.showProblem("Bad address", `The address “${location.hash}” is not valid: its session key is not `
      + "properly percent-encoded. Pick a session from the sidebar.");
  }
  if (view === "chat") {
    const key = arg === sidebar.HOME ? homeKey() : arg || chat.currentKey() || homeKey() || sidebar.sessions[0]?.key || null;
    await chat.open(key, { messageId: params.get("m") });
  } else if (view === "search") {
    await searchSessions(params.get("q") || "");
  } else if (view === "memory") {
    await memory.open();
    $("memory-title").focus();
  } else if (view === "dreams") {
    await dreams.open();
    $("dreams-title").focus();
  } else if (view === "status") {
    await status.open();
    $("status-title").focus();
  }
}

async function searchSessions(query) {
  $("search-q").value = query;
  const list = $("search-hits");
  if (!query.trim()) { // nothing asked: no earlier search's results either
    list.replaceChildren();
    $("search-summary").textContent = "Type what to look for in the search box.";
    return;
  }
  const found = await api.get("/v1/search", { q: query, limit: 25 });
  $("search-summary").textContent = `${plural(found.hits.length, "message")} found for “${query}”`;
  const titles = new Map(sidebar.sessions.map((s) => [s.key, sidebar.sessionTitle(s)]));
  list.replaceChildren(...found.hits.map((hit) => h("li", { class: "hit" },
    h("a", { href: `#/chat/${encodeURIComponent(hit.sessionKey)}?m=${encodeURIComponent(hit.messageId)}`, class: "hit-link" },
      h("span", { class: "hit-session" }, titles.get(hit.sessionKey) || hit.sessionKey),
      h("span", { class: "hit-meta" }, hit.role || "", " · ", timeEl(hit.timestamp)),
      h("span", { class: "snippet" }, hit.snippet)))));
  $("search-title").focus();
  announce($("search-summary").textContent);
}

async function newThread(incognito) {
  const thread = await api.post("/v1/sessions", { incognito });
  await sidebar.refresh();
  location.hash = `#/chat/${encodeURIComponent(thread.key)}`;
  announce(incognito ? "New incognito thread" : "New thread");
}

// agent:<id>:coding:<name>, listed under Coding; the gateway checks the name and says what is allowed
async function newCodingSession() {
  const name = window.prompt("Coding session name (letters, digits, '.', '_' or '-'):");
  if (!name) return;
  const session = await api.post("/v1/sessions", { coding: name.trim() });
  await sidebar.refresh();
  location.hash = `#/chat/${encodeURIComponent(session.key)}`;
  announce(`New coding session ${session.key}`);
}

// A scoped token sees only what its scope may: the operator's views and (for a session or peer
// token, which runs as its one session) the new-thread buttons are not offered.
function showCredential(found) {
  credential = found;
  $("signed-in").hidden = !api.hasToken();
  $("signed-in-as").textContent = found ? `${found.name} · ${found.scope}${found.sandboxed ? " · sandboxed" : ""}`
    : "operator";
  document.body.dataset.scope = found ? found.scope.split(":")[0] : "operator";
  for (const link of document.querySelectorAll("nav.views a")) {
    link.hidden = Boolean(found) && OPERATOR_VIEWS.includes(link.dataset.view);
  }
  const oneSession = Boolean(found) && ["session", "peer"].includes(document.body.dataset.scope);
  $("new-thread").hidden = oneSession;
  $("new-incognito").hidden = oneSession;
  $("new-coding").hidden = oneSession;
}

function guard(work) {
  return (...args) => Promise.resolve(work(...args)).catch((error) => { console.error(error); toast(error.message || String(error)); });
}

async function start() {
  chat.init();
  memory.init();
  dreams.init();
  status.init();
  $("sign-out").addEventListener("click", () => { api.forgetToken(); location.reload(); });
  $("new-thread").addEventListener("click", guard(() => newThread(false)));
  $("new-incognito").addEventListener("click", guard(() => newThread(true)));
  $("new-coding").addEventListener("click", guard(newCodingSession));
  $("session-search").addEventListener("submit", (event) => {
    event.preventDefault();
    location.hash = `#/search?q=${encodeURIComponent($("search-q").value.trim())}`;
  });
  $("menu").addEventListener("click", () => {
    const open = !document.body.classList.contains("sidebar-open");
    document.body.classList.toggle("sidebar-open", open);
    $("menu").setAttribute("aria-expanded", String(open));
    if (open) $("new-thread").focus();
  });
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && document.body.classList.contains("sidebar-open")) {
      closeDrawer();
      $("menu").focus();
    }
  });
  $("session-groups").addEventListener("click", (event) => { if (event.target.closest("a")) closeDrawer(); });
  window.addEventListener("hashchange", guard(route));
  window.addEventListener("unhandledrejection", (event) => toast(event.reason?.message || String(event.reason)));
  const engineStatus = await api.get("/v1/status");
  chat.setStatus(engineStatus);
  showCredential(engineStatus.credential || null);
  await sidebar.refresh();
  setInterval(() => { if (!document.hidden) sidebar.refresh().catch(() => {}); }, 15000);
  await route();
  document.body.dataset.ready = "true"; // for tests and scripts: the first view is drawn
}

guard(start)();
