// memory-clawkeep: clawkeep in OpenClaw's memory slot.
//
// - memory_search / memory_get: memory-core's parameters and result shapes, answered by a clawkeep
//   gateway, run as the clawkeep session of the OpenClaw session that calls them (owner boundary).
// - capture: each finished turn (agent_end) is recorded in the clawkeep session of the same key,
//   without a reply (OpenClaw already answered), so sessions_search, the session-memory hook,
//   compaction's flush and Dreaming see it.
// - `openclaw memory status|index|search`: answered from clawkeep while this plugin holds the slot.
import { createHash } from "node:crypto";
import { definePluginEntry } from "openclaw/plugin-sdk/plugin-entry";
import { defaultRuntime } from "openclaw/plugin-sdk/runtime-env";
import { ClawkeepClient, ClawkeepError, settingsFrom } from "./client.js";

const PLUGIN_ID = "memory-clawkeep";
const MAX_SEARCH_RESULTS = 50; // the gateway's bound for one memory search

const SEARCH_PARAMETERS = {
  type: "object",
  additionalProperties: false,
  required: ["query"],
  properties: {
    query: { type: "string", description: "What to recall, in the user's words or key terms." },
    maxResults: { type: "integer", minimum: 1, description: "At most this many results." },
    minScore: { type: "number", description: "Drop results scoring below this (0-1)." },
    corpus: {
      type: "string",
      enum: ["memory", "wiki", "all", "sessions"],
      description: "memory: the Markdown memory files; sessions: past conversations; all: both.",
    },
  },
};

const GET_PARAMETERS = {
  type: "object",
  additionalProperties: false,
  required: ["path"],
  properties: {
    path: { type: "string", description: "A path exactly as memory_search returned it." },
    from: { type: "integer", minimum: 1, description: "First line to read (1-based)." },
    lines: { type: "integer", minimum: 1, description: "How many lines to read." },
    corpus: { type: "string", enum: ["memory", "wiki", "all"] },
  },
};

function asToolResult(payload) {
  return { content: [{ type: "text", text: JSON.stringify(payload, null, 2) }], details: payload };
}

// memory-core's "unavailable" shape: the turn goes on, the model is told why recall is missing.
function unavailable(error, client) {
  const reason = error instanceof Error ? error.message : String(error);
  const warning = `Memory search is unavailable: ${reason}`;
  const action = `Start the clawkeep gateway (clawkeep gateway) or fix plugins.entries.${PLUGIN_ID}.config.url (${client.url}).`;
  return { results: [], disabled: true, unavailable: true, error: reason, warning, action, debug: { warning, action, error: reason } };
}

export async function searchMemory(client, params, openclawKey) {
  const corpus = params.corpus || "all";
  if (corpus === "wiki") {
    return { results: [], provider: "clawkeep", citations: "auto", warning: "clawkeep keeps no wiki corpus; use memory, sessions or all" };
  }
  const session = await client.session(openclawKey);
  const limit = params.maxResults ? Math.min(params.maxResults, MAX_SEARCH_RESULTS) : undefined;
  const found = await client.request("GET", "/v1/memory/search", {
    query: { q: params.query, limit, minScore: params.minScore, corpus },
    session,
  });
  const results = (found?.results || []).map((hit) => ({
    path: hit.path,
    startLine: hit.startLine,
    endLine: hit.endLine,
    score: hit.score,
    snippet: hit.snippet,
    source: hit.origin === "sessions" ? "sessions" : "memory",
    citation: `${hit.path}#L${hit.startLine}-L${hit.endLine}`,
    ...(hit.sessionKey ? { provenance: { sessionKey: hit.sessionKey } } : {}),
  }));
  return { results, provider: "clawkeep", citations: "auto", mode: "hybrid" };
}

export async function getMemory(client, params, openclawKey) {
  const path = params.path;
  if (params.corpus === "wiki") return { status: "not_found", text: "", path };
  try {
    const session = await client.session(openclawKey);
    const file = await client.request("GET", "/v1/memory/file", {
      query: { path, from: params.from, lines: params.lines },
      session,
    });
    const result = { status: "ok", text: file.text, path: file.path, from: file.from, lines: file.to - file.from + 1 };
    if (file.truncated) result.truncated = true;
    if (file.to < file.totalLines) result.nextFrom = file.to + 1;
    return result;
  } catch (error) {
    if (error instanceof ClawkeepError && error.status === 404) return { status: "not_found", text: "", path };
    const code = error instanceof ClawkeepError ? error.code : "error";
    return { path, text: "", status: "error", code, error: error instanceof Error ? error.message : String(error) };
  }
}

// --- capture -------------------------------------------------------------------------------------
const STAMP = /^\[[A-Z][a-z]{2} \d{4}-\d{2}-\d{2} \d{2}:\d{2}(?::\d{2})? [A-Z]{2,5}\] /; // "[Mon 2026-12-07 13:16 UTC] "
const RUNTIME_LINE = /\n\nRuntime: agent=[^\n]*$/;
const INTERNAL = "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>";

function textOf(content) {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .filter((block) => block && block.type === "text" && typeof block.text === "string")
    .map((block) => block.text)
    .join("\n");
}

// What a person wrote or read: OpenClaw's time stamp and runtime line are prompt decoration.
export function spokenText(message) {
  let text = textOf(message?.content).trim();
  if (!text || text.startsWith(INTERNAL)) return "";
  if (message.role === "user") text = text.replace(STAMP, "").replace(RUNTIME_LINE, "").trim();
  return text;
}

const MAX_REPLAYED = 200; // spoken messages sent at most in one capture (turns missed while the gateway was down)

function spokenMessages(messages) {
  return (messages || []).filter((m) => (m?.role === "user" || m?.role === "assistant") && spokenText(m));
}

// The last turn: the last user message and what followed it (user and assistant text only).
export function lastTurn(messages) {
  const spoken = spokenMessages(messages);
  let start = spoken.length;
  while (start > 0 && spoken[start - 1].role !== "user") start -= 1;
  if (start === 0) return [];
  while (start > 1 && spoken[start - 2].role === "user") start -= 1; // several user lines before one reply
  return spoken.slice(start - 1);
}

function messageId(openclawKey, message, text) {
  const digest = createHash("sha256");
  digest.update(`${openclawKey}\n${message.role}\n${message.timestamp ?? ""}\n${text}`);
  return `openclaw:${digest.digest("hex").slice(0, 32)}`;
}

// What to send: every spoken message from the first user message newer than what clawkeep holds
// (turns whose capture failed while the gateway was down come back), else the last turn alone.
export function uncaptured(messages, capturedUntil) {
  const turn = lastTurn(messages);
  if (capturedUntil === null || capturedUntil === undefined || turn.length === 0) return turn;
  const spoken = spokenMessages(messages);
  const first = spoken.findIndex((m) => m.role === "user" && Number.isFinite(m.timestamp) && m.timestamp > capturedUntil);
  if (first < 0) return turn;
  const missed = spoken.slice(first, spoken.length - turn.length);
  return [...missed.slice(-MAX_REPLAYED), ...turn];
}

export async function captureTurn(client, openclawKey, messages) {
  if (!openclawKey || lastTurn(messages).length === 0) return 0;
  const session = await client.session(openclawKey);
  const pending = uncaptured(messages, client.capturedUntil.get(openclawKey));
  for (const message of pending) {
    const text = spokenText(message);
    // the id is derived from the message itself: a message sent twice is stored once
    const body = { text, role: message.role, messageId: messageId(openclawKey, message, text), recordOnly: true };
    if (Number.isInteger(message.timestamp) && message.timestamp <= Date.now() + 60_000) body.at = message.timestamp;
    await client.request("POST", "/v1/messages", { body, session });
    if (message.role === "user" && Number.isFinite(message.timestamp)) {
      client.capturedUntil.set(openclawKey, Math.max(client.capturedUntil.get(openclawKey) ?? -Infinity, message.timestamp));
    }
  }
  return pending.length;
}

// --- CLI -----------------------------------------------------------------------------------------
function cliFailure(error) {
  defaultRuntime.error(`memory-clawkeep: ${error instanceof Error ? error.message : String(error)}`);
  defaultRuntime.exit(1);
}

function registerMemoryCli(program, client) {
  const memory = program.command("memory").description("clawkeep memory (memory-clawkeep): status, index, search");
  memory
    .command("status")
    .description("Index health, embedding provider and vector store of the clawkeep gateway")
    .option("--json", "Print JSON")
    .action(async (options) => {
      try {
        const status = await client.request("GET", "/v1/memory/status");
        if (options.json) return defaultRuntime.writeJson({ backend: "clawkeep", url: client.url, ...status });
        defaultRuntime.log(`clawkeep memory at ${client.url}`);
        for (const [name, value] of Object.entries(status || {})) {
          defaultRuntime.log(`  ${name}: ${typeof value === "object" ? JSON.stringify(value) : value}`);
        }
      } catch (error) {
        cliFailure(error);
      }
    });
  memory
    .command("index")
    .description("Bring clawkeep's memory index up to date")
    .option("--force", "Rebuild the whole index")
    .option("--json", "Print JSON")
    .action(async (options) => {
      try {
        const report = await client.request("POST", "/v1/memory/index", { body: { force: Boolean(options.force) } });
        if (options.json) return defaultRuntime.writeJson(report);
        defaultRuntime.log(`indexed ${report.indexed.length} file(s), ${report.chunks} chunk(s) in clawkeep at ${client.url}`);
      } catch (error) {
        cliFailure(error);
      }
    });
  memory
    .command("search")
    .description("Search clawkeep memory (hybrid keyword + vector; Chinese, Japanese and Korean included)")
    .argument("<query>", "What to look for")
    .option("--max-results <n>", "At most this many results", (value) => Number.parseInt(value, 10))
    .option("--min-score <x>", "Drop results below this score", Number.parseFloat)
    .option("--json", "Print JSON")
    .action(async (query, options) => {
      try {
        const found = await searchMemory(client, { query, maxResults: options.maxResults, minScore: options.minScore });
        if (options.json) return defaultRuntime.writeJson(found);
        if (found.results.length === 0) return defaultRuntime.log("No results.");
        for (const hit of found.results) {
          defaultRuntime.log(`${hit.score.toFixed(3)} ${hit.citation}\n  ${hit.snippet.replace(/\s+/g, " ").slice(0, 200)}`);
        }
      } catch (error) {
        cliFailure(error);
      }
    });
}

// --- the entry -----------------------------------------------------------------------------------
export default definePluginEntry({
  id: PLUGIN_ID,
  name: "clawkeep memory",
  description: "Memory search, memory files and conversation capture through a clawkeep gateway.",
  register(api) {
    // register() runs several times per process (cli-metadata, discovery, full): it only registers.
    const client = new ClawkeepClient(settingsFrom(api.pluginConfig));
    api.registerCli(({ program }) => registerMemoryCli(program, client), {
      descriptors: [{ name: "memory", description: "clawkeep memory: status, index, search", hasSubcommands: true }],
    });
    if (api.registrationMode === "cli-metadata") return;

    api.registerMemoryCapability({ deterministicRecallToolName: "memory_search" });
    api.registerTool(
      (ctx) => ({
        name: "memory_search",
        label: "Memory Search",
        description:
          "Recall before answering: search long-term memory (MEMORY.md, daily notes) and past conversations for " +
          "earlier decisions, dates, people, preferences and to-dos. Returns snippets with path and line range; " +
          "open more with memory_get.",
        parameters: SEARCH_PARAMETERS,
        async execute(_toolCallId, params) {
          try {
            return asToolResult(await searchMemory(client, params || {}, ctx?.sessionKey));
          } catch (error) {
            return asToolResult(unavailable(error, client));
          }
        },
      }),
      { names: ["memory_search"] },
    );
    api.registerTool(
      (ctx) => ({
        name: "memory_get",
        label: "Memory Get",
        description: "Read lines of a memory file (or a past conversation) by the path memory_search returned.",
        parameters: GET_PARAMETERS,
        async execute(_toolCallId, params) {
          return asToolResult(await getMemory(client, params || {}, ctx?.sessionKey));
        },
      }),
      { names: ["memory_get"] },
    );

    api.on("agent_end", async (event, ctx) => {
      if (!client.settings.capture || !ctx?.sessionKey) return;
      try {
        await captureTurn(client, ctx.sessionKey, event?.messages);
      } catch (error) {
        api.logger?.warn?.(`memory-clawkeep: this turn was not recorded in clawkeep: ${error.message}`);
      }
    });
  },
});
