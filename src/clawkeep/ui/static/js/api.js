// The page's only way to the gateway: JSON over /v1, the bearer token when the gateway has one
// (asked once, kept in localStorage), and the streamed turn (server-sent events over POST).

const TOKEN_KEY = "clawkeep.token";

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

export function withQuery(path, params) {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(params || {})) {
    if (value !== undefined && value !== null && value !== "") query.set(name, value);
  }
  const text = query.toString();
  return text ? `${path}?${text}` : path;
}

export const sessionPath = (key, tail = "") => `/v1/sessions/${encodeURIComponent(key)}${tail}`;

function headers(extra = {}) {
  const out = { Accept: "application/json", ...extra };
  const token = localStorage.getItem(TOKEN_KEY);
  if (token) out.Authorization = `Bearer ${token}`;
  return out;
}

export const hasToken = () => Boolean(localStorage.getItem(TOKEN_KEY));
export function forgetToken() { localStorage.removeItem(TOKEN_KEY); }

let pendingToken = null; // one prompt for every request that was refused at the same time

function askForToken() {
  if (pendingToken) return pendingToken;
  pendingToken = new Promise((resolve) => {
    const dialog = document.getElementById("token-dialog");
    const input = document.getElementById("token-input");
    dialog.querySelector(".wrong").hidden = !localStorage.getItem(TOKEN_KEY);
    dialog.addEventListener("cancel", (event) => event.preventDefault(), { once: true });
    document.getElementById("token-form").onsubmit = (event) => {
      event.preventDefault();
      const value = input.value.trim();
      if (!value) return;
      localStorage.setItem(TOKEN_KEY, value);
      input.value = "";
      dialog.close();
      pendingToken = null;
      resolve();
    };
    dialog.showModal();
    input.focus();
  });
  return pendingToken;
}

async function authorised(makeRequest) {
  for (;;) {
    const response = await makeRequest();
    if (response.status !== 401) return response;
    await askForToken();
  }
}

async function decode(response) {
  const type = response.headers.get("content-type") || "";
  const data = type.includes("json") ? await response.json() : await response.text();
  if (!response.ok) {
    const error = (data && data.error) || {};
    throw new ApiError(response.status, error.code || `http_${response.status}`,
      error.message || `${response.status} ${response.statusText}`);
  }
  return data;
}

// Every state-changing request says it is JSON, even without a body: the gateway refuses one that
// does not (docs/security.md), since a page on another site can only forge form and text requests.
export async function request(method, path, body) {
  const init = () => ({
    method,
    headers: headers(method === "GET" ? {} : { "Content-Type": "application/json" }),
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return decode(await authorised(() => fetch(path, init())));
}

export const get = (path, params) => request("GET", withQuery(path, params));
export const post = (path, body = {}) => request("POST", path, body);
export const put = (path, body) => request("PUT", path, body);
export const del = (path) => request("DELETE", path);

// --- the streamed turn ---------------------------------------------------------------------
function parseEvent(block) {
  let kind = "message";
  const data = [];
  for (const line of block.split("\n")) {
    if (line.startsWith("event:")) kind = line.slice(6).trim();
    else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
  }
  return data.length ? { kind, data: JSON.parse(data.join("\n")) } : null;
}

// POST /v1/messages?stream=true; calls handlers.token/discard/tool_call as events arrive and
// resolves with the result. A refusal before anything was stored is a 4xx JSON error (thrown);
// an `error` event (the message stays stored) is thrown with `stored = true`.
export async function streamMessage(body, handlers = {}) {
  const response = await authorised(() => fetch("/v1/messages?stream=true", {
    method: "POST",
    headers: headers({ "Content-Type": "application/json", Accept: "text/event-stream" }),
    body: JSON.stringify(body),
  }));
  if (!(response.headers.get("content-type") || "").startsWith("text/event-stream")) return decode(response);
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value.replace(/\r\n/g, "\n");
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const event = parseEvent(buffer.slice(0, cut));
      buffer = buffer.slice(cut + 2);
      if (!event) continue;
      if (event.kind === "result") return event.data;
      if (event.kind === "error") {
        const error = event.data.error || {};
        const failure = new ApiError(500, error.code || "error", error.message || "the turn failed");
        failure.stored = true;
        throw failure;
      }
      handlers[event.kind]?.(event.data);
    }
  }
  throw new ApiError(0, "stream_ended", "the gateway closed the stream before the result (the message may be stored)");
}
