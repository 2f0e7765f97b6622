"""Who may see a remembered line (the owner boundary).

A note written from a conversation (a pre-compaction flush, a session excerpt, a fact stated in
chat) carries the key of that conversation. Recall, the bootstrap files of a prompt and the
memory tools of a session all decide with `visible_to`, so no path shows one peer's notes to
another:

- no owner: shared (written by the operator or by hand);
- the reader's own conversation: visible;
- an owner that cannot be read (a damaged or forged marker): private to nobody;
- another conversation: only when memory is shared across conversations
  (rememberAcrossConversations; on by default only under dmScope `main`), and then only
  another direct-message conversation — never a group's notes in a DM.
"""

from __future__ import annotations

from ..errors import InputError
from ..routing.keys import parse_key

UNKNOWN_OWNER = "?"  # never a session key: every key starts with "agent:"
DM_KINDS = ("main", "direct", "dashboard")


def visible_to(owner: str | None, reader_key: str | None, *, across: bool) -> bool:
    """May the conversation `reader_key` see a line owned by `owner`? (None reader = the operator.)"""
    if owner is None or reader_key is None:
        return owner != UNKNOWN_OWNER or reader_key is None
    if owner == reader_key:
        return True
    if owner == UNKNOWN_OWNER or not across:
        return False
    try:
        return parse_key(owner).kind in DM_KINDS and parse_key(owner).agent_id == parse_key(reader_key).agent_id
    except InputError:
        return False
