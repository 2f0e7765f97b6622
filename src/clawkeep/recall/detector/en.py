"""English rules of the past-question detector (matched on lower-cased text)."""

from __future__ import annotations

import re

from ...patterns import lazy
from .rules import Language, Rule, ci

_EN_PRON = r"(?:we|you|i|u)"
_EN_WH = r"(?:what|which|when|where|who|whom|whose|why|how)"
# Verbs of saying/deciding/planning: base and past forms, as used after did / have / relative pronouns.
_EN_VERB_BASE = (
    r"(?:decide|choose|discuss|agree|say|mention|talk|tell|plan|pick|settle|go\s+with|land\s+on|"
    r"recommend|suggest|promise|book|order|note|conclude|shortlist|end\s+up|come\s+up|figure\s+out|"
    r"give|share|ask|name|call|want|eat|buy|use|reserve|schedule)"
)
_EN_VERB_PAST = (
    r"(?:decided|chose|chosen|discussed|agreed|said|mentioned|talked|told|spoke|spoken|settled|planned|"
    r"picked|went\s+(?:over|with)|gone\s+(?:over|with)|came\s+up\s+with|covered|recommended|suggested|"
    r"promised|shortlisted|narrowed\s+down|noted|shared|gave|given|brought\s+up|concluded|booked|"
    r"reserved|scheduled|landed\s+on|wrote\s+down|written\s+down|listed|figured\s+out|ended\s+up\s+with|"
    r"asked\s+(?:you|me)|went\s+through)"
)
_EN_DISCOURSE = frozenset(
    "as like so and but then because since when if well ok okay yes no yeah actually also just "
    "yesterday earlier today before previously again once".split()
)
_EN_CLAUSE_BREAK = lazy(r"[.,;:!?\n()\"]")
_EN_WORD_BEFORE = lazy(r"([a-z']+)\s*$")
_EN_Q_START = lazy(
    r"(?:^|[.!?;\n]\s*)(?:so\s+|and\s+|but\s+|hey\s+|ok\s+|okay\s+|um\s+)?"
    r"(?:what|what's|which|when|where|where's|who|who's|whom|whose|why|how|do|does|did|have|has|had|"
    r"is|are|was|were|am|can|could|would|will|should|shall)\b"
)


def _en_is_question(text: str) -> bool:
    return "?" in text or bool(_EN_Q_START.search(text))


def _en_relative_or_question(m: re.Match[str], text: str, question: bool) -> bool:
    """'we decided' counts inside a question or a noun phrase ("the plan we discussed"),
    not as the subject of a declarative ("I told you yesterday that…", "as we discussed, …")."""
    before = text[: m.start()]
    clause = _EN_CLAUSE_BREAK.split(before)[-1]
    prev = _EN_WORD_BEFORE.search(clause)
    if prev is not None and prev.group(1) in {"as", "like"}:
        return False  # discourse marker "as I said", "like we agreed"
    if question:
        return True
    return prev is not None and prev.group(1) not in _EN_DISCOURSE


_EN_CAPABILITY = ci(
    r"\b(?:between|across)\s+(?:\w+\s+)?(?:chats?|sessions?|conversations?)\b"
    r"|\b(?:remember|recall)\s+(?:things|stuff|everything|information|context)\b"
    r"|\b(?:remember|recall)\s+(?:what\s+)?(?:i|we)\s+(?:say|tell)\b"
)


def _en_not_capability(m: re.Match[str], text: str, question: bool) -> bool:
    return not _EN_CAPABILITY.search(text)


_EN_SELF_AT_END = lazy(r"\b(?:i|we)\s+(?:still\s+|do\s+|really\s+)?$")


def _en_not_first_person_statement(m: re.Match[str], text: str, question: bool) -> bool:
    """'remember what…' is recall, 'I remember when…' is a statement."""
    clause = _EN_CLAUSE_BREAK.split(text[: m.start()])[-1]
    return not _EN_SELF_AT_END.search(clause)


_EN_FACT = (
    r"(?:name|names|birthday|birth\s*date|date\s+of\s+birth|address|phone(?:\s+number)?|number|password|"
    r"passcode|pin|schedule|calendar|agenda|plans?|appointments?|meetings?|flights?|trains?|reservations?|"
    r"bookings?|trip|itinerary|deadlines?|anniversary|allerg(?:y|ies)|restrictions?|diet|"
    r"favou?rite(?:\s+[a-z]+)?|preferences?|size|blood\s+type|email|username|school|job|employer|company|"
    r"office|doctor|dentist|manager|boss|to-?do(?:\s+list)?|tasks?|goals?|budget|rent|salary|hotel|room|"
    r"seat|gate|age|hobb(?:y|ies)|plate|list|shift|class(?:es)?|exam|interview|wedding|dog|cat|pet)"
)
# "what's my X?" asks for a fact the user gave, unless X is advice or the thing on screen.
_EN_NOT_A_FACT = ci(
    r"\b(?:wrong|problem|problems|issue|issues|error|errors|bug|bugs|mistake|mistakes|best|option|options|"
    r"chance|chances|odds|risk|role|bmi|ip|code|output|score|result|results|next\s+step|point|purpose|"
    r"fault|excuse|mood|horoscope|zodiac|sign|type)\b"
)
_EN_TIME_AHEAD = (
    r"(?:tomorrow|tonight|today|later|next\s+\w+|this\s+(?:week|weekend|month|morning|afternoon|evening)|"
    r"on\s+(?:mon|tues|wednes|thurs|fri|satur|sun)day|(?:mon|tues|wednes|thurs|fri|satur|sun)day|weekend)"
)
_EN_TIME_BACK = (
    r"(?:yesterday|last\s+(?:time|week|month|year|night|session|chat|conversation)|earlier|before|previously|"
    r"the\s+other\s+day|\w+\s+(?:days?|weeks?|months?|years?)\s+ago|a\s+while\s+(?:ago|back)|at\s+some\s+point)"
)

LANGUAGE = Language(
    code="en",
    prepare=str.lower,
    is_question=_en_is_question,
    guards=(
        ci(r"^(?:if|what\s+if|suppose|supposing|imagine|hypothetically|let's\s+say|say)\b"),
        ci(r"\bhypothetically\b"),
    ),
    rules=(
        Rule(
            "remember-question",
            ci(r"\b(?:do|did|can|could|would)\s+(?:you|u)\s+(?:still\s+|even\s+|happen\s+to\s+)?(?:remember|recall)\b"),
            check=_en_not_capability,
        ),
        Rule(
            "you-remember",
            ci(r"^(?:hey\s+|so\s+)?(?:you|u)\s+(?:still\s+)?(?:remember|recall)\b"),
            needs_question=True,
            check=_en_not_capability,
        ),
        Rule(
            "forgot-what",
            ci(
                r"\bi\s+(?:forgot|forget|can't\s+remember|cannot\s+remember|don't\s+remember|can't\s+recall|"
                r"don't\s+recall|can't\s+recall)\s+(?:what|which|who|where|when|how|the|my|our|if|whether)\b"
            ),
        ),
        Rule(
            "remember-wh",
            ci(r"\b(?:remember|recall)\s+(?:again\s+)?(?:what|which|who|whom|where|when|why|how|whether)\b"),
            check=_en_not_first_person_statement,
        ),
        Rule(
            "remind-me-wh",
            ci(
                r"\bremind\s+(?:me|us)\s+(?:again\s+)?(?:of\s+|about\s+)?(?:what|which|who|whom|where|why|how|whether)\b"
            ),
        ),
        Rule("tell-me-again", ci(r"\b(?:tell|show|give)\s+(?:me|us)\s+again\b")),
        Rule(
            "previous-conversation",
            ci(
                r"\b(?:previous|earlier|past|last|prior|yesterday's|old|other)\s+(?:conversations?|chats?|"
                r"discussions?|sessions?|talks?)\b"
            ),
        ),
        Rule(
            "what-did-we-say",
            ci(
                rf"\b{_EN_WH}(?:\s+(?:much|many|long|time|day))?\b[^.?!]{{0,40}}?\b(?:did|have|had)\s+"
                rf"{_EN_PRON}\s+(?:(?:ever|finally|already|just|first|originally|actually|last|eventually)\s+)?"
                rf"(?:{_EN_VERB_BASE}|{_EN_VERB_PAST})\b"
            ),
        ),
        Rule(
            "did-we-say",
            ci(
                rf"(?:^|[.!?;,]\s*)(?:so\s+|and\s+|but\s+|hey\s+)?(?:did|have|had|haven't|didn't)\s+{_EN_PRON}\s+"
                r"(?:(?:ever|already|actually|finally|even)\s+)?"
                r"(?:decide|decided|choose|chosen|discuss|discussed|agree|agreed|say|said|mention|mentioned|"
                r"talk|talked|tell|told|share|shared|give|given|ask|asked|settle|settled|pick|picked|plan|planned|"
                r"recommend|recommended|suggest|suggested|promise|promised|go\s+over|gone\s+over|cover|covered)\b"
            ),
        ),
        Rule(
            "past-time-question",
            ci(rf"\b(?:did|had|were|was)\s+{_EN_PRON}\b[^.?!]{{0,60}}\b{_EN_TIME_BACK}\b"),
            needs_question=True,
        ),
        Rule(
            "we-discussed",
            ci(
                rf"\b{_EN_PRON}\s+(?:(?:had|have|'ve|'d|already|both|all|once|previously|originally|first|"
                rf"finally|last)\s+){{0,2}}{_EN_VERB_PAST}\b"
            ),
            check=_en_relative_or_question,
        ),
        Rule(
            "presumed-plan",
            ci(
                r"(?:^|[.!?;,]\s*)(?:so\s+|but\s+)?(?:weren't|wasn't|aren't|didn't|haven't|hadn't)\s+(?:we|you|i)\s+"
                r"(?:going\s+to|gonna|supposed\s+to|meant\s+to|planning\s+to|already\s+\w+ed)\b"
            ),
        ),
        Rule(
            "again-tag",
            ci(rf"(?:^|[.!?;]\s*){_EN_WH}\b[^.?!]*\bagain\s*\?"),
        ),
        Rule(
            "own-fact",
            ci(
                r"\b(?:what|when|where|which|who|whose|how\s+(?:old|much|many|long|far))\b"
                r"(?:'s|'re|\s+(?:is|are|was|were))?(?:\s+[\w'-]+){0,3}?\s+(?:my|our)\s+"
                rf"(?:[\w-]+(?:'s)?\s+){{0,2}}?{_EN_FACT}\b"
            ),
            needs_question=True,
        ),
        Rule(
            "own-thing",
            ci(
                r"\b(?:what|when|where|which|who)(?:'s|'re|\s+(?:is|are|was|were))\s+(?:my|our)\s+"
                r"(?P<thing>[a-z'-]+(?:\s+[a-z'-]+){0,2}?)\s*(?:called|again|on\s+\w+|at|set\s+for)?\s*\?"
            ),
            check=lambda m, t, q: not _EN_NOT_A_FACT.search(m.group("thing")),
        ),
        Rule(
            "own-whereabouts",
            ci(r"\bwhere\s+(?:do|did|does)\s+(?:i|we)\s+(?:live|work|stay|study|park|keep|put|leave)\b"),
            needs_question=True,
        ),
        Rule(
            "own-plans",
            ci(
                r"\b(?:do|did|have)\s+(?:i|we)\s+(?:have|got)\s+(?:[\w-]+\s+){0,2}?(?:planned|scheduled|booked|"
                r"plans?|meetings?|appointments?|due|on\s+(?:my|the|our)\s+(?:calendar|schedule|agenda))\b"
            ),
            needs_question=True,
        ),
        Rule(
            "own-plans",
            ci(
                r"\bwhat\s+(?:am|are)\s+(?:i|we)\s+(?:doing|up\s+to|supposed\s+to\s+do|scheduled\s+to\s+do|"
                rf"planning\s+to\s+do|meant\s+to\s+do)\b[^?.!]*\b{_EN_TIME_AHEAD}"
            ),
            needs_question=True,
        ),
        Rule(
            "own-habits",
            ci(r"\bwhat\s+(?:do|did)\s+(?:i|we)\s+(?:usually|normally|typically|always|like|prefer|love|hate)\b"),
            needs_question=True,
        ),
    ),
)
