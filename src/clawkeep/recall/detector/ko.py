"""Korean rules of the past-question detector."""

from __future__ import annotations

import re

from ...patterns import lazy
from .rules import Language, Rule

_KO_QUESTION = lazy(r"[?]|(?:니|냐|나요|까|죠|지요|더라|었지|였지|았지|했지)[.!~]*$")
_KO_ANCHOR = (
    r"(?:지난번|지난\s*주|지난\s*달|저번|예전|전에|아까|어제|그저께|엊그제|작년|며칠\s*전|이전에|그때|처음에|"
    r"옛날에)"
)
# Past speech/decision verbs with their ending captured: attributive (한/했던/준) refers back,
# finite (했/줬) needs a question.
_KO_SPEECH = (
    r"(?:(?:말|얘기|이야기|논의|대화|언급|결정|상의|약속|추천|설명|부탁|합의|확정|예약)\s*"
    r"(?P<e1>했던|하던|했었|한|했|해\s*준|해준|해\s*줬|해줬)"
    r"|(?:정|골|알려\s*|말해\s*|고)(?P<e2>했던|했|한|랐|른|줬|준|줬던))"
)
_KO_QWORD = r"(?:뭐|뭘|언제|어디|누구|몇|무슨|어느|어떤|얼마)"
_KO_HAS_QWORD = lazy(_KO_QWORD)
_KO_COPULA_END = lazy(r"(?:야|예요|에요|지|죠|돼)[.!~]*$")
_KO_SELF = r"(?<![가-힣])(?:내가|제가|나는|저는|난|내|제|나의|저의|나|저|우리가|우리는|우리의|우리)(?![가-힣])"
_KO_FACT = (
    r"(?:일정|스케줄|생일|주소|이름|비밀번호|비번|전화번호|번호|여권|약속|계획|예약|회의|미팅|항공편|비행기|"
    r"기념일|알레르기|취향|좋아하는|직장|회사|학교|마감|주소지)"
)
_KO_FACT_Q = r"(?:뭐|뭘|언제|어디|몇|무슨|누구|어느|[?]|이야|였|이었|있(?:어|나|니)\s*[?]|있었|있나요)"
_KO_CMD = lazy(
    r"짜\s*줘|만들어|세워|정리해|추가|바꿔|어떻게\s*(?:해|하|할|만들|써|쓰)|해야|할까|좋을까|추천해|"
    r"기억해\s*(?:줘|둬|두|놔)"
)
_KO_NOT_A_FACT = lazy(r"코드|버그|오류|에러|문제|잘못|방법|말|생각|기분|컴퓨터|화면|파일")


_KO_ATTRIBUTIVE = frozenset({"했던", "하던", "한", "해준", "른", "준", "줬던"})


def _ko_speech_ref(m: re.Match[str], text: str, question: bool) -> bool:
    """얘기한 계획 (attributive) refers back; 얘기했어. (finite) is a statement unless asked."""
    ending = (m.group("e1") or m.group("e2") or "").replace(" ", "")
    return ending in _KO_ATTRIBUTIVE or question


LANGUAGE = Language(
    code="ko",
    prepare=lambda t: t,
    is_question=lambda t: bool(_KO_QUESTION.search(t)),
    guards=(lazy(r"^(?:만약|만일|가령)"),),
    rules=(
        Rule(
            "remember-question",
            lazy(
                r"기억\s*(?:나(?:요|니|냐|지|죠|세요)?|하(?:니|냐|세요|시나요|시죠|지|죠|나요)|해(?:요)?\s*(?=[?])|"
                r"하고\s*있(?:어|니|냐|나요|어요|으세요)|안\s*나(?:요|니|냐)?\s*(?=[?]))(?![가-힣])"
            ),
            check=lambda m, t, q: not _KO_CMD.search(t) or q,
        ),
        Rule(
            "deora",
            lazy(r"더라(?!도)(?:요)?(?![가-힣])"),
            check=lambda m, t, q: q or bool(_KO_HAS_QWORD.search(t)),
        ),
        Rule(
            "said-that",
            lazy(
                r"(?:다|라|냐|자)고\s*(?:했|그랬|말했)(?:었)?(?:지|죠|지요|더라|잖아|나|니|어\s*(?=[?])|어요\s*(?=[?]))"
            ),
        ),
        Rule(
            "past-question",
            lazy(rf"{_KO_QWORD}[^.!?]{{0,16}}?(?:였|이었|었|았|했)(?:지|죠|지요|더라|나요?)(?![가-힣])"),
        ),
        Rule(
            "previous-conversation",
            lazy(r"(?:지난번|저번|예전|이전|어제|지난)\s*(?:의\s*)?(?:대화|채팅|상담|논의)"),
            needs_question=True,
        ),
        Rule("anchor-speech", lazy(rf"{_KO_ANCHOR}[^.!?]{{0,24}}?{_KO_SPEECH}"), check=_ko_speech_ref),
        Rule(
            "self-speech",
            lazy(rf"(?:내가|제가|우리가|네가|니가|너가|당신이)\s*[^.!?]{{0,12}}?{_KO_SPEECH}"),
            check=_ko_speech_ref,
        ),
        Rule(
            "own-fact",
            lazy(rf"{_KO_SELF}[^.!?]{{0,10}}?{_KO_FACT}[^.!]{{0,8}}?{_KO_FACT_Q}"),
            check=lambda m, t, q: not _KO_CMD.search(t),
        ),
        Rule(
            "own-thing",
            lazy(
                r"(?<![가-힣])(?:내|제|나의|저의|우리)\s+(?P<thing>[가-힣]+(?:\s+[가-힣]+){0,2}?)\s*"
                r"(?:어떻게\s*(?:돼|되|됐)|(?:뭐|뭘|언제|어디|몇|무슨|누구)(?![가-힣]*(?:할까|하지|해야)))"
            ),
            check=lambda m, t, q: (q or bool(_KO_COPULA_END.search(t))) and not _KO_NOT_A_FACT.search(m.group("thing")),
        ),
        Rule(
            "do-you-know-mine",
            lazy(
                r"(?<![가-힣])(?:내가|제가|내|제)\s[^.!?]{0,16}?(?:알아(?:요)?|아세요|아니|알고\s*있(?:어|니|나요|어요))\s*[?]"
            ),
            check=lambda m, t, q: not _KO_NOT_A_FACT.search(m.group(0)),
        ),
        Rule(
            "own-plans",
            lazy(
                rf"{_KO_SELF}[^.!?]{{0,12}}?(?:뭐|무슨\s*\S+)\s*있(?:어|나|니|어요|나요|지|었지|었어)\s*(?:[?]|$)"
            ),
            check=lambda m, t, q: not _KO_CMD.search(t),
        ),
    ),
)
