"""`clawkeep mcp`: the agent tools over the Model Context Protocol (SPEC G3, §P MCP).

A thin skin, like the CLI: the tools are `clawkeep.api.AGENT_TOOLS` plus `sessions_create` (a coding
agent opens its coding session), their input schemas
`Operation.tool_schema()`, their results the operations' `to_json()`. Served with the official
`mcp` SDK over stdio (the default) or streamable HTTP.

This package is `clawkeep.mcp`; inside it, `import mcp` is the SDK (absolute imports only).
"""

from .server import build_server, serve_http, serve_stdio, tool_list

__all__ = ["build_server", "serve_http", "serve_stdio", "tool_list"]
