"""Structured logs: one JSON object a line on stderr, with the session key and turn id when
there is one (`extra={...}` fields of a log call become keys)."""

from __future__ import annotations

import json
import logging
import sys
import time

from ..engine import Engine
from ..events import TurnCompleted

_STANDARD = set(vars(logging.makeLogRecord({}))) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out = {"ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
               "level": record.levelname.lower(), "logger": record.name, "message": record.getMessage()}
        out.update({k: v for k, v in vars(record).items() if k not in _STANDARD and v is not None})
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        return json.dumps(out, ensure_ascii=False, default=str)


def configure(level: str = "info") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger("clawkeep")
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    root.propagate = False
    for name in ("uvicorn", "uvicorn.error"):
        logging.getLogger(name).handlers[:] = [handler]
        logging.getLogger(name).propagate = False


def log_turns(engine: Engine) -> None:
    """A line per turn: session key, turn id (the user message's id), mode, latency, recall."""
    log = logging.getLogger("clawkeep.turns")

    def on_turn(event: TurnCompleted) -> None:
        log.info("turn", extra={"event": "turn", "sessionKey": event.session_key, "turnId": event.turn_id,
                                "mode": event.mode, "elapsedMs": event.elapsed_ms, "recall": event.recall_status,
                                "toolCalls": event.tool_calls, "compacted": event.compacted or None})

    engine.subscribe(TurnCompleted, on_turn)
