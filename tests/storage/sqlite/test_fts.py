"""SQLite: how a TextQuery becomes an FTS5 MATCH expression (quoted, never user syntax)."""

import sqlite3

import pytest

from clawkeep.storage import TextQuery, TextTerm
from clawkeep.storage.sqlite.fts import match_expression, vocab_doc_freq


def test_rendering():
    query = TextQuery((TextTerm((("deploy",),)), TextTerm((("wi", "fi"), ("wifi",))),
                       TextTerm((("上",),), prefix=True)))
    assert match_expression(query) == '"deploy" OR ("wi fi" OR "wifi") OR "上"*'
    assert match_expression(TextQuery.words('a"b')) == '"a""b"'


def test_every_rendering_is_valid_fts5():
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE f USING fts5(tokens, tokenize = 'unicode61 remove_diacritics 2')")
    conn.execute("CREATE VIRTUAL TABLE f_v USING fts5vocab(f, 'row')")
    conn.execute("INSERT INTO f(rowid, tokens) VALUES (1, 'near and or not col x')")
    for tokens in (("NEAR(",), ("AND",), ("col:x",), ("*",), ("^x",), ('"',), ("a", "b")):
        rows = conn.execute("SELECT rowid FROM f WHERE f MATCH ?", (match_expression(TextQuery.words(*tokens)),))
        assert isinstance(rows.fetchall(), list)
    assert vocab_doc_freq(conn, "f_v")(["near", "zzz", "near"]) == {"near": 1}
    with pytest.raises(ValueError):
        TextQuery(())


@pytest.mark.parametrize("text", ['[{"type":"text","text":"x"}]', '{"a":[1,2.5,null,true]}', '"str"', " []", "[] ",
                                  "[1,", "", '{"a":', "nul", "[1]x", '{"a":"\x01"}', "NaN", "[1e999]", "\ufeff[]"])
def test_stored_json_decodes_as_json_loads(text):
    """Entries are decoded by the JSON scanner without json.loads' wrapper: the same value, or
    the same error, for every document."""
    import json
    import math

    from clawkeep.storage.sqlite.sessions import _json_value

    def outcome(fn):
        try:
            value = fn(text)
        except ValueError as exc:
            return type(exc)
        return "nan" if isinstance(value, float) and math.isnan(value) else value

    assert outcome(_json_value) == outcome(json.loads)
