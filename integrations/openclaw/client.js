// A small client for the clawkeep gateway's HTTP API (/v1/...), shared by the tools, the capture
// hook and the CLI. Every failure is a ClawkeepError whose message names the gateway URL.

export const DEFAULT_URL = "http://127.0.0.1:18790";
export const DEFAULT_TIMEOUT_MS = 10000;

export class ClawkeepError extends Error {
  constructor(message, { status = 0, code = "unavailable" } = {}) {
    super(message);
    this.name = "ClawkeepError";
    this.status = status; // 0: the gateway was not reached at all
    this.code = code;
  }

  get unavailable() {
    return this.status === 0 || this.status >= 500;
  }
}

export function settingsFrom(pluginConfig) {
  const config = pluginConfig && typeof pluginConfig === "object" ? pluginConfig : {};
  const url = String(config.url || process.env.CLAWKEEP_URL || DEFAULT_URL).replace(/\/+$/, "");
  const token = config.token || process.env.CLAWKEEP_TOKEN || undefined;
  const timeoutMs = Number.isInteger(config.timeoutMs) ? config.timeoutMs : DEFAULT_TIMEOUT_MS;
  return { url, token, timeoutMs, capture: config.capture !== false };
}

export class ClawkeepClient {
  constructor(settings) {
    this.settings = settings;
    this.sessionKeys = new Map(); // OpenClaw session key -> clawkeep session key
    // OpenClaw session key -> time (ms) of the newest user message clawkeep holds for it: -Infinity for a
    // session this process created (everything is new), null when unknown (only the last turn is sent)
    this.capturedUntil = new Map();
  }

  get url() {
    return this.settings.url;
  }

  // One request; `session` runs it as that clawkeep session (X-Clawkeep-Session).
  async request(method, path, { query, body, session } = {}) {
    const target = new URL(this.settings.url + path);
    for (const [name, value] of Object.entries(query || {})) {
      if (value !== undefined && value !== null) target.searchParams.set(name, String(value));
    }
    const headers = { accept: "application/json" };
    if (body !== undefined) headers["content-type"] = "application/json";
    if (this.settings.token) headers.authorization = `Bearer ${this.settings.token}`;
    if (session) headers["x-clawkeep-session"] = session;
    let response;
    try {
      response = await fetch(target, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(this.settings.timeoutMs),
      });
    } catch (error) {
      const reason = error?.name === "TimeoutError" ? `no answer within ${this.settings.timeoutMs} ms` : causeOf(error);
      throw new ClawkeepError(`clawkeep gateway at ${this.settings.url} is unreachable: ${reason}`);
    }
    const text = await response.text();
    let data = null;
    try {
      data = text ? JSON.parse(text) : null;
    } catch {
      data = null;
    }
    if (!response.ok) {
      const message = data?.error?.message || text.slice(0, 300) || response.statusText;
      throw new ClawkeepError(`clawkeep gateway at ${this.settings.url} answered ${response.status}: ${message}`, {
        status: response.status,
        code: data?.error?.code || `http_${response.status}`,
      });
    }
    return data;
  }

  // The clawkeep session of an OpenClaw session key, opened (created if missing) once per process.
  async session(openclawKey) {
    if (!openclawKey) return undefined;
    const known = this.sessionKeys.get(openclawKey);
    if (known) return known;
    const opened = await this.request("POST", "/v1/sessions", { body: { key: openclawKey } });
    this.sessionKeys.set(openclawKey, opened.key);
    const last = opened.lastInteractionAt ? Date.parse(opened.lastInteractionAt) : Number.NaN;
    this.capturedUntil.set(openclawKey, opened.created ? -Infinity : Number.isNaN(last) ? null : last);
    return opened.key;
  }
}

function causeOf(error) {
  const cause = error?.cause;
  return cause?.code || cause?.message || error?.message || String(error);
}
