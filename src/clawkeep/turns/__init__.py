"""The agent turn: one inbound message from routing to the recorded reply (see `pipeline`)."""

from .messages import MessageRequest, MessageResult, TurnEvent
from .pipeline import handle_message, stream_message
from .record import record_system_event

__all__ = ["MessageRequest", "MessageResult", "TurnEvent", "handle_message", "record_system_event", "stream_message"]
