"""Is a sentence a question or a recall request (not a statement)? en, zh, ja, ko.

Active Memory's lane 2 uses this to keep the user's earlier *questions* out of its evidence: a
past "我下周有什么安排" shares every word with the same question asked again, so without this
it would be recalled as the answer instead of the fact ("下周三去上海出差").

A sentence is a question when it has question shape — a question mark (? ？), a final
question particle (吗 嘛 呢, か かな っけ, 니 냐 까 나요), an interrogative used as one
(什么 哪 谁 多少 几点 怎么 是不是, 何 いつ どこ 誰, 뭐 언제 어디 누구, a leading English
wh-word or auxiliary followed by its subject) — or is a recall request ("tell me what…",
"还记得…", "教えて", "알려줘"), or when the past-question detector (`classify`) flags it and
the language's own loose question test agrees. The detector alone is not enough: it also
flags statements that point back ("我上次说的那个方案是A方案"), and those are facts.

Indefinite uses are not questions: 什么都 / 没什么 / 哪怕 / 谁都, 何か / いつも / 誰でも,
"when I was in Paris…" (no auxiliary after the wh-word).
"""

from __future__ import annotations

from functools import lru_cache

from ...patterns import lazy
from . import classify, en, ja, ko, zh
from .detect import detect_language, normalise

__all__ = ["is_question"]

# A trailing question mark, possibly followed by closing quotes/brackets, emoji or tildes.
_QMARK_END = lazy(r"\?[\s\"'”’)\]）」』~～!.。…\U0001F300-\U0001FAFF]*$")

_EN_WH_AUX = lazy(
    r"^(?:so|and|but|hey|ok|okay|um|then|also|and\s+so)?\s*,?\s*"
    r"(?:(?:what|which|when|where|who|whom|whose|why|how)(?:'s|'re|'d|'ll|\s+(?:is|are|was|were|am|do|does|did|"
    r"have|has|had|will|would|can|could|should|shall|may|might)\b)"
    r"|how\s+(?:many|much|long|often|far|old|soon|late|early)\b"
    r"|(?:what|which)\s+(?:time|day|date|year|month|one|ones|kind|sort|hotel|flight|plan|plans)\b)"
)
_EN_AUX_SUBJECT = lazy(
    r"^(?:so|and|but|hey|ok|okay|um|then)?\s*,?\s*"
    r"(?:do|does|did|is|are|was|were|am|have|has|had|can|could|will|would|should|shall|don't|didn't|doesn't|"
    r"isn't|aren't|wasn't|weren't|haven't|hasn't|won't|can't)\s+"
    r"(?:i|you|we|they|he|she|it|my|our|your|their|his|her|the|there|this|that|these|those|any|anything)\b"
)
_EN_REQUEST = lazy(
    r"^(?:please\s+|can\s+you\s+|could\s+you\s+)?(?:tell|remind|show|give)\s+me\s+"
    r"(?:again\s+)?(?:what|when|where|who|which|how|whether|if|about|my|our|the\s+\w+\s+(?:i|we))\b"
    r"|^(?:please\s+)?(?:recall|remember)\s+(?:what|when|where|who|which|how|whether|if)\b"
    r"|^(?:please\s+)?(?:summari[sz]e|recap)\b"
    r"|^i\s+(?:wonder|forgot|forget|can't\s+remember|cannot\s+remember|don't\s+remember|do\s+not\s+remember)\s+"
    r"(?:what|when|where|who|which|how|whether|if)\b"
)

_ZH_END = lazy(r"(?:吗|嘛|呢|么|来着)[\s?!。.~～…]*$")
_ZH_ASK = lazy(
    r"(?<![没不])什么(?![都也])|(?<![没不])啥(?![都也])|(?<![哪])哪(?![怕都也])(?:里|儿|个|天|些|家|位|年|月)?(?![都也])"
    r"|(?<![不])谁(?![都也])|多少(?![有还也都会能])|(?<![过前这那好十])几(?:点|号|月|时|天|次|岁|位|个人)(?![都也前后])|星期几|周几|礼拜几"
    r"|为什么|为啥|(?<![不没])怎么(?![都也])|怎样|如何|是不是|有没有|是否|要不要|能不能|会不会|可不可以|好不好|对不对"
)
_ZH_NOT_ASK = lazy(r"没什么|不算什么|不是什么|算不了什么|什么的|为什么不|不管|无论|不论|随便")
_ZH_REQUEST = lazy(
    r"^(?:请|麻烦)?(?:你)?(?:告诉我|帮我(?:回忆|想想|查查|找找|看看)|你?还记得|记不记得|记得.*吗)"
)

_JA_END = lazy(r"(?:か|かな|かしら|っけ|だっけ|でしたっけ|ですか|ますか|は)[\s?!。.…]*$")
_JA_ASK_END = lazy(
    r"(?:何|なに|なん|いつ|どこ|誰|だれ|どれ|どの\S{0,3}|どう|いくら|いくつ|何時|何日|何曜日)"
    r"(?:だ|です|でしょう|なの|だった|でした)?[\s?。…]*$"
)
_JA_REQUEST = lazy(r"教えて|覚えてる|覚えています|覚えてます|思い出して")

_KO_END = lazy(r"(?:니|냐|까|까요|는지|더라|던가|던가요|었나|었나요|였나|였나요)[\s?!.~…]*$")
_KO_ASK_LAST = lazy(r"(?:^|\s)(?:뭐|무엇|무슨|언제|어디|누구|왜|어떻게|몇|어느)\S*[\s?.…]*$")
_KO_REQUEST = lazy(
    r"(?<!고)(?<!고\s)알려\s?줘|알려\s?주세요|알려\s?줄래|기억\s?나|기억하니|기억해\?|기억하세요\?|생각나"
)

# A leading role or speaker label ("User: ", "用户：") and list marker are not part of the sentence.
_LEADING = lazy(r"^\s*(?:[-*+>]\s+)?(?:[^\s:：]{1,24}[:：]\s*)?")


@lru_cache(maxsize=8192)  # lane 2 asks about the same transcript lines turn after turn
def is_question(sentence: str) -> bool:
    """True for a question or a recall request, False for a statement (see the module doc)."""
    text = normalise(sentence or "")
    if not text:
        return False
    body = _LEADING.sub("", text, count=1).strip() or text
    if _QMARK_END.search(body):
        return True
    language = detect_language(body)
    if language == "zh":
        prepared = zh.LANGUAGE.prepare(body)
        shaped = bool(_ZH_END.search(prepared) or _ZH_REQUEST.search(prepared)
                      or (_ZH_ASK.search(prepared) and not _ZH_NOT_ASK.search(prepared)))
        loose = zh.LANGUAGE.is_question(prepared)
    elif language == "ja":
        shaped = bool(_JA_END.search(body) or _JA_ASK_END.search(body) or _JA_REQUEST.search(body))
        loose = ja.LANGUAGE.is_question(body)
    elif language == "ko":
        shaped = bool(_KO_END.search(body) or _KO_ASK_LAST.search(body) or _KO_REQUEST.search(body))
        loose = ko.LANGUAGE.is_question(body)
    else:
        lowered = body.lower()
        shaped = bool(_EN_WH_AUX.search(lowered) or _EN_AUX_SUBJECT.search(lowered) or _EN_REQUEST.search(lowered))
        loose = en.LANGUAGE.is_question(lowered)
    return shaped or (loose and classify(body).past_question)
