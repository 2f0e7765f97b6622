"""Reading a memory file that has a bad line: the rest of it still counts.

A NUL, a stray control character or a byte sequence that is not UTF-8 in one line of a
hand-edited note used to make the indexer (and Active Memory) drop the whole file. `clean_text`
cleans only the bad parts and says which lines they were; the file itself is never changed.
"""

from __future__ import annotations

import re

from ..validation import control_character

# Characters a line keeps out of the index: C0 controls but tab, DEL and C1 controls, except the
# ones str.splitlines() already breaks lines at (VT, FF, FS-RS, NEL): removing those would shift
# every later line number away from what `memory get` and the item parser count.
_IN_LINE_CONTROL = re.compile("[\x00-\x08\x0e-\x1b\x1f\x7f-\x84\x86-\x9f]")


MAX_BAD_SHARE = 0.1  # above this share of bad characters a "memory file" is binary or another encoding: skipped


def clean_text(raw: bytes) -> tuple[str | None, str | None]:
    """A memory file's bytes as indexed text, and what was cleaned out (None when nothing was):
    byte sequences that are not UTF-8 become U+FFFD, control characters are dropped; the lines
    stay where they are, so line numbers keep matching the file. A file whose characters are
    more than MAX_BAD_SHARE bad is no text at all: (None, why)."""
    try:
        text, invalid = raw.decode("utf-8"), False
    except UnicodeDecodeError:
        text, invalid = raw.decode("utf-8", errors="replace"), True
    if not invalid and _IN_LINE_CONTROL.search(text) is None:
        return text, None
    bad_chars = len(_IN_LINE_CONTROL.findall(text)) + (text.count("\ufffd") if invalid else 0)
    if bad_chars > MAX_BAD_SHARE * len(text):
        return None, (f"{bad_chars} of its {len(text)} characters are control characters or bytes that are not "
                      "UTF-8 (a binary file or another encoding)")
    lines = text.splitlines()
    bad: list[str] = []
    for number, line in enumerate(lines, start=1):
        if _IN_LINE_CONTROL.search(line) is not None:
            lines[number - 1] = _IN_LINE_CONTROL.sub("", line)
            bad.append(f"line {number}: control character {control_character(line)} removed")
        elif invalid and "\ufffd" in line:
            bad.append(f"line {number}: bytes that are not UTF-8 replaced by U+FFFD")
    if not bad:
        return text, None
    shown = "; ".join(bad[:3]) + (f"; and {len(bad) - 3} more line(s)" if len(bad) > 3 else "")
    return "\n".join(lines), shown
