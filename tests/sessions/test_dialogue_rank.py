"""sessions_search ranks a question as dialogue (sessions/dialogue_rank.py): what a matching reply
answers is found though it shares no word with the question, and a day whose messages hold the
question's words together lifts each of them."""

from clawkeep.sessions.dialogue_rank import TOPIC_SHARE, _Node, _topics
from clawkeep.storage import EntryRecord, SearchRow
from clawkeep.text.analyzer import analyze_document
from clawkeep.text.query import parse_query

FILLER = ("the train was late again this morning", "we should repaint the fence in spring",
          "my sister moved to a new flat downtown", "the printer at work keeps jamming")


def _ids(engine, query):
    return [h["messageId"] for h in engine.sessions_search(query, limit=10)["hits"]]


def test_the_message_a_matching_reply_answers_is_found(engine):
    for text in FILLER:
        engine.message(text)
    gift = engine.message("Guess what, I got you a little stuffed puppy for your desk!").message_id
    engine.message("Aww, it brings me so much joy every single morning!", role="assistant")
    for text in FILLER:
        engine.message(text, role="assistant")
    assert gift in _ids(engine, "What brings her joy?")  # no word of the question: what the reply answers


def test_a_message_before_a_reset_is_no_neighbour(engine):
    gift = engine.message("Guess what, I got you a little stuffed puppy for your desk!").message_id
    engine.message("/reset")
    engine.message("Aww, it brings me so much joy every single morning!", role="assistant")
    assert gift not in _ids(engine, "What brings her joy?")


def _node(entry_id: str, session_id: str, day: str, text: str) -> _Node:
    entry = EntryRecord(entry_id, session_id, "message", 0, role="user")
    node = _Node(SearchRow(entry, "agent:main:main", 0.0, analyze_document(text)))
    node.day = day
    return node


def test_a_day_holding_the_question_together_lifts_each_of_its_messages():
    query = parse_query("Where did we paddle the red kayak near the lighthouse?")
    nodes = {n.row.entry.entry_id: n for n in (
        _node("a1", "s1", "2026-03-01", "the red kayak was heavy to paddle"),
        _node("a2", "s1", "2026-03-01", "we walked up near the lighthouse after"),
        _node("b1", "s1", "2026-03-10", "the red kayak was heavy to paddle"),
        _node("b2", "s1", "2026-03-10", "we walked up to the old mill after"),
    )}
    _topics(nodes, query)
    gains = {key: node.score for key, node in nodes.items()}
    assert gains["a1"] == gains["a2"] == TOPIC_SHARE  # the first day holds every word of the question
    assert 0 < gains["b1"] == gains["b2"] < TOPIC_SHARE  # the second only some
