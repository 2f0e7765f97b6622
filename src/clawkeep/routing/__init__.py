"""Routing: inbound message → session key (S1)."""

from .keys import ParsedKey, parse_key
from .router import Inbound, Route, route

__all__ = ["Inbound", "ParsedKey", "Route", "parse_key", "route"]
