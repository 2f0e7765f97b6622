"""What a remembered line claims, for supersession and merging (M8, seed 001 §3.3, §5.2).

A line is read as claims — (subject, value, negated) — from the structure of its sentence, in
English, Chinese, Japanese and Korean, clause by clause ("I quit coffee, now I drink tea" is
two claims):

- attributes: "my favourite color is blue", "the trip budget is 5000 euros", "我最喜欢的颜色是蓝色",
  "预算上限五万", "预算不设限", "好きな色は青です", "제가 좋아하는 색은 파란색이에요";
- first-person verbs: "I drink coffee", "I live in Beijing", "I moved to Hangzhou" (→ live),
  "我每天早上喝咖啡", "東京に住んでいます", "서울에 살아요";
- negations and replacements: "I quit coffee", "I don't eat meat", "我不再喝咖啡了",
  "コーヒーはやめて", "커피 끊었어요", "I switched from Vim to VS Code".

`conflicts(new, old)`: the new line gives the same subject another value (an attribute, or
"prefer", "live", "job"… that hold one value at a time), or negates the old value. Subjects
several values can share ("I like hiking" / "I like jazz") need a replacement cue in the new
line ("actually", "now", "no longer", "instead", "不再", "改成", "现在", "今は", "もう", "이제",
"요즘"…). Claims in different languages never conflict (a value may just be translated).
Subjects worded differently ("my job" / "my occupation") can be linked by an optional
`similar(a, b)` — the embedding model — when they share no word at all.

`same_fact(a, b)`: a restatement ("I prefer TypeScript" / "I really prefer TypeScript.",
"favourite colour" / "favorite color") that should merge instead of adding a line.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from ..patterns import lazy

Similar = Callable[[str, str], "float | None"]
SIMILAR_SUBJECTS = 0.8  # cosine of the two subject phrases (bundled local model) to call them one subject
UNRELATED_VALUES = 0.2  # below this, two things "preferred" are of different kinds and both stand


@dataclass(frozen=True)
class Claim:
    lang: str  # en | zh | ja | ko
    subject: str  # normalised subject ("favorite color", "预算上限") or verb key ("drink", "live"); "*" = any
    value: str  # normalised value
    negated: bool = False
    single: bool = False  # the subject holds one value at a time
    kind: str = "attr"  # attr (a named attribute) | verb (what the user does, likes, where they live)
    phrase: str = ""  # the subject as written, for `similar`


def language(text: str) -> str:
    if re.search(r"[\uac00-\ud7a3]", text):
        return "ko"
    if re.search(r"[\u3040-\u30ff]", text):
        return "ja"
    if re.search(r"[\u4e00-\u9fff]", text):
        return "zh"
    return "en"


# --- normalising ----------------------------------------------------------------------------
_SPELLING = {"favourite": "favorite", "colour": "color", "colours": "colors", "grey": "gray", "flavour": "flavor",
             "organisation": "organization", "neighbour": "neighbor", "centre": "center", "theatre": "theater"}
_EN_FILLERS = frozenset("really very so just still actually definitely totally truly absolutely quite pretty "
                        "honestly basically literally".split())
_EN_STOP = frozenset("a an the my our your his her their of for to in on at with and is are".split())
_CJK_FILLERS = lazy(r"真的|真是|非常|特别|十分|很|本当に|とても|すごく|めっちゃ|정말|진짜|너무|완전|참|아주")
_PUNCT = lazy(r"[\s\W_]+", re.UNICODE)
# Every write compares the new fact with every active item (and a Dreaming sweep does that for
# each candidate), so the readings of item texts are cached: large enough for a big workspace.
READ_CACHE = 65_536


def _en_words(text: str) -> list[str]:
    words = re.findall(r"[a-z0-9']+", text.lower().replace("’", "'"))
    return [_SPELLING.get(w, w) for w in words]


@lru_cache(maxsize=READ_CACHE)
def canonical(text: str) -> str:
    """Text for near-duplicate comparison: case, spelling, punctuation and fillers ignored."""
    if language(text) == "en":
        return " ".join(w for w in _en_words(text) if w not in _EN_FILLERS)
    return _PUNCT.sub("", _CJK_FILLERS.sub("", text.lower()))


def _value(text: str, lang: str) -> str:
    if lang == "en":
        words = [w for w in _en_words(text) if w not in _EN_FILLERS]
        while words and words[-1] in ("now", "anymore", "again", "instead", "too", "either", "nowadays", "though"):
            words.pop()
        while words and words[0] in ("a", "an", "the"):
            words.pop(0)
        return " ".join(words)
    text = _CJK_FILLERS.sub("", text)
    text = re.sub(r"(?:了|的|啊|呢|吧|哦|です|でした|だ|よ|ね|요|이에요|예요|입니다|이야|야|이다)+$", "",
                  text.strip(" 。.!！?？"))
    return _PUNCT.sub("", text.lower())


def _subject(text: str, lang: str) -> str:
    if lang == "en":
        words = [w for w in _en_words(text) if w not in _EN_STOP and w not in ("new", "current", "actual", "real")]
        return " ".join(sorted(words))
    return _PUNCT.sub("", _CJK_FILLERS.sub("", text))


# --- clauses and cues ------------------------------------------------------------------------
_CLAUSES = lazy(r"\s*(?:[,;，；、]|\bbut\b|\band\s+now\b|但是|不过|可是|けど|けれど|ですが|지만|는데)\s*",
                      re.IGNORECASE)
_LEAD_CUE = {
    "en": lazy(r"^(?:(?:actually|well|oh|ok(?:ay)?|so|now|correction|update|fyi|by\s+the\s+way|btw|in\s+fact|"
                     r"these\s+days|nowadays|as\s+of\s+(?:today|now)|from\s+now\s+on|anyway|no|sorry|instead)"
                     r"(?:[\s,:;-]+|$))+", re.IGNORECASE),
    "zh": lazy(r"^(?:其实|实际上|更正一下|更正|纠正一下|纠正|说错了|不对|现在|目前|如今|最近|"
                     r"改一下|以后|从现在起|后来)[，,:：\s]*"),
    "ja": lazy(r"^(?:実は|実際は|今は|今では|最近は|最近|やっぱり|訂正(?:です)?|ちなみに)[、,\s]*"),
    "ko": lazy(r"^(?:사실은?|이제는?|요즘은?|정정(?:할게요)?|아니(?:요)?|지금은)[,\s]*"),
}
_REPLACES = lazy(
    r"\b(?:actually|now|no\s+longer|any\s*more|instead|switched|changed|quit|stopped|gave\s+up|correction|update|"
    r"these\s+days|nowadays|again|moved|from\s+now\s+on)\b"
    r"|其实|实际上|现在|如今|目前|改成|改为|改用|换成|换了|不再|已经不|戒|更正|纠正|以后|搬到|搬去|后来"
    r"|実は|今は|今では|もう|やめ|変わ|変更|訂正|最近は|引っ越"
    r"|사실|이제|요즘|더\s?이상|끊었|그만|바꿨|바뀌|정정|이사",
    re.IGNORECASE,
)


# --- English ---------------------------------------------------------------------------------
_EN_VERBS: list[tuple[str, str, bool]] = [  # (regex, subject key, single-valued)
    (r"prefer(?:s|red)?", "prefer", True),
    (r"(?:like|love|enjoy|adore)s?", "like", False),
    (r"(?:dislike|hate|detest)s?|can'?t\s+stand", "dislike", False),
    (r"drinks?|drinking", "drink", False),
    (r"eats?|eating", "eat", False),
    (r"(?:use|work\s+with|code\s+in|write\s+in|program\s+in)s?|using", "use", False),
    (r"plays?|playing", "play", False),
    (r"speaks?|speaking", "speak", False),
    (r"drives?|driving", "drive", False),
    (r"owns?", "own", False),
    (r"(?:live|reside|stay)s?\s+(?:in|at)|living\s+in|am\s+based\s+in|'m\s+based\s+in|am\s+living\s+in|"
     r"'m\s+living\s+in", "live", True),
    (r"(?:moved|relocated|am\s+moving|'m\s+moving)\s+(?:back\s+)?to", "live", True),
    (r"works?\s+(?:at|for)|am\s+working\s+(?:at|for)|'m\s+working\s+(?:at|for)", "work at", True),
    (r"works?\s+as|am\s+employed\s+as", "job", True),
    (r"stud(?:y|ies)\s+at", "study at", True),
    (r"am\s+allergic\s+to|'m\s+allergic\s+to", "allergic", False),
    (r"am\s+an?|'m\s+an?", "identity", False),
]
_EN_ADVERBS = (r"(?:(?:still|now|really|also|usually|mostly|always|only|actually|just|currently|definitely|totally|"
               r"absolutely|truly|mainly|generally|normally|often|sometimes)\s+)*")
_EN_NEG = r"(?P<neg>(?:don'?t|do\s+not|no\s+longer|never|can'?t|cannot|won'?t|am\s+not|'m\s+not)\s+)?"
_EN_VERB = lazy(
    r"^(?:i|we)(?:\s+|(?='))" + _EN_ADVERBS + _EN_NEG + _EN_ADVERBS
    + "(?P<verb>" + "|".join(f"(?:{v})" for v, _, _ in _EN_VERBS) + r")\b\s*(?P<val>.*)$",
    re.IGNORECASE,
)
_EN_VERB_PARTS = [(lazy(f"^(?:{v})$", re.IGNORECASE), key, single) for v, key, single in _EN_VERBS]
_EN_QUIT = lazy(r"^(?:i|we)\s+(?:have\s+|'ve\s+)?(?:quit|stopped|gave\s+up(?:\s+on)?|kicked|dropped)\s+"
                      r"(?:(?:drinking|eating|using|playing|smoking|driving)\s+)?(?P<val>.+)$", re.IGNORECASE)
_EN_SWITCH = lazy(r"^(?:i|we)\s+(?:have\s+)?(?P<verb>switched|changed|moved|went)\s+from\s+(?P<a>.+?)\s+"
                        r"(?:to|for)\s+(?P<b>.+)$", re.IGNORECASE)
_EN_ATTR = lazy(r"^(?:my|our)\s+(?P<subj>[a-z0-9' -]{1,40}?)\s+(?P<link>is|are|was|were|has\s+become|"
                      r"has\s+changed\s+to|changed\s+to|became)\s+(?:now\s+|actually\s+|still\s+)?(?P<val>.+)$",
                      re.IGNORECASE)
_EN_THE = lazy(r"^(?:the|our)\s+(?P<subj>[a-z0-9' -]{1,30}?)\s+(?P<link>is|are)\s+(?:now\s+|still\s+)?"
                     r"(?P<val>.+)$", re.IGNORECASE)
_EN_REVERSED = lazy(r"^(?P<val>[a-z0-9' -]{1,30}?)\s+is\s+(?:now\s+)?my\s+(?P<subj>[a-z0-9' -]{1,30})$",
                          re.IGNORECASE)


def _en_claims(clause: str) -> list[Claim]:
    if m := _EN_SWITCH.match(clause):
        key = "live" if m["verb"].lower() == "moved" else "*"
        return [Claim("en", "*", _value(m["a"], "en"), negated=True, kind="verb"),
                Claim("en", key, _value(m["b"], "en"), single=key == "live", kind="verb")]
    if m := _EN_QUIT.match(clause):
        return [Claim("en", "*", _value(m["val"], "en"), negated=True, kind="verb")]
    if m := _EN_VERB.match(clause):
        verb = " ".join(m["verb"].lower().split())
        key, single = next(((k, s) for p, k, s in _EN_VERB_PARTS if p.match(verb)), (verb, False))
        value = _value(m["val"], "en")
        if value:
            return [Claim("en", key, value, negated=bool(m["neg"]), single=single, kind="verb")]
    for pattern in (_EN_ATTR, _EN_THE):
        if m := pattern.match(clause):
            value, subject = _value(m["val"], "en"), _subject(m["subj"], "en")
            if value and subject:
                negated = value.startswith("not ")
                return [Claim("en", subject, value.removeprefix("not "), negated=negated,
                              single=m["link"].lower() not in ("are", "were"), phrase="my " + m["subj"].lower())]
    if m := _EN_REVERSED.match(clause):
        value, subject = _value(m["val"], "en"), _subject(re.sub(r"\s+now$", "", m["subj"]), "en")
        if value and subject:
            return [Claim("en", subject, value, single=True, phrase="my " + m["subj"].lower())]
    return []


# --- Chinese -------------------------------------------------------------------------------
_ZH_VERBS: list[tuple[str, str, bool]] = [
    ("更喜欢|喜欢|爱|热爱", "like", False), ("偏好|偏爱", "prefer", True), ("讨厌|不喜欢", "dislike", False),
    ("住在|住", "live", True), ("搬到了?|搬去了?|搬回了?", "live", True), ("改用|换用|用|使用", "use", False),
    ("喝", "drink", False), ("吃", "eat", False), ("开", "drive", False), ("说|讲", "speak", False),
    ("养", "own", False), ("玩", "play", False),
]
_ZH_ADVERBS = (r"(?:现在|还|也|一直|平时|每天|早上|晚上|通常|一般|最|比较|特别|很|真的|已经|目前|如今|都|经常|"
               r"主要|每天早上|又|重新)*")
_ZH_VERB = lazy(
    r"^(?:我们|我)?" + _ZH_ADVERBS + r"(?P<neg>不再|再也不|已经不|不|没有|没)?" + _ZH_ADVERBS
    + "(?P<verb>" + "|".join(v for v, _, _ in _ZH_VERBS) + r")(?P<val>.+)$")
_ZH_VERB_PARTS = [(lazy(f"^(?:{v})$"), key, single) for v, key, single in _ZH_VERBS]
_ZH_WORK = lazy(r"^(?:我们|我)" + _ZH_ADVERBS + r"在(?P<val>.+?)(?:工作|上班|上学|读书|实习)")
_ZH_QUIT = lazy(r"^(?:我们|我)?(?:已经)?(?:戒了|戒掉了?|戒|放弃了?)(?P<val>.+?)(?:了)?$"
                      r"|^(?P<val2>.+?)(?:我)?(?:已经)?(?:戒了|戒掉了)$")
_ZH_ATTR = lazy(r"^(?:我的|我们的|我)(?P<subj>(?:最)?(?:喜欢|爱)的.{1,6}?|.{1,10}?)(?:现在|其实|已经|目前)?"
                      r"(?P<link>是|叫|为|改成了?|换成了?|变成了?|改为)(?P<val>.+)$")
_ZH_TOPIC = lazy(r"^(?P<subj>(?![我你他她它今明昨后前下上这那])[\u4e00-\u9fffA-Za-z]{1,10}?)"
                       r"(?:现在|已经|其实|目前)?"
                       r"(?P<link>是|为|叫|定为|定在|改成了?|改为|换成了?|改到|设为|设成|变成了?)(?P<val>.+)$")
_ZH_NUMBER = r"[零〇一二两三四五六七八九十百千万亿\d.,]+"
_ZH_QUANTITY = lazy(r"^(?P<subj>(?![我你他她它今明昨后前下上这那])[\u4e00-\u9fff]{2,8}?)"
                          r"(?P<val>" + _ZH_NUMBER
                          + r"(?:[万千百亿]|元|块|美元|欧元|人民币|人|天|个|岁|公里|小时|分钟|%)*)"
                          r"(?:左右|以内|以上|以下)?$")
_ZH_NO_LIMIT = lazy(r"^(?P<subj>(?![我你他她它今明昨后前下上这那])[\u4e00-\u9fff]{2,8}?)"
                          r"(?P<val>(?:不设|不限|没有|无)(?:限|上限|限制|要求)?[\u4e00-\u9fff]{0,4})$")


def _cjk_subjects(a: str, b: str) -> bool:
    """CJK subjects are one when equal, or when one starts the other (预算 / 预算上限)."""
    return a == b or (min(len(a), len(b)) >= 2 and (a.startswith(b) or b.startswith(a)))


def _zh_claims(clause: str, implicit_subject: bool) -> list[Claim]:
    if m := _ZH_QUIT.match(clause):
        return [Claim("zh", "*", _value(m["val"] or m["val2"], "zh"), negated=True, kind="verb")]
    if m := _ZH_WORK.match(clause):
        return [Claim("zh", "work at", _value(m["val"], "zh"), single=True, kind="verb")]
    if (clause.startswith("我") or implicit_subject) and (m := _ZH_VERB.match(clause)):
        key, single = next((k, s) for p, k, s in _ZH_VERB_PARTS if p.match(m["verb"]))
        value = _value(m["val"], "zh")
        if value and not value.startswith("的"):
            return [Claim("zh", key, value, negated=bool(m["neg"]), single=single, kind="verb")]
    for pattern in (_ZH_ATTR, _ZH_TOPIC):
        if m := pattern.match(clause):
            value, subject = _value(m["val"], "zh"), _subject(m["subj"], "zh")
            if value and subject:
                return [Claim("zh", subject, value, single=True, phrase=m["subj"])]
    for pattern in (_ZH_QUANTITY, _ZH_NO_LIMIT):
        if m := pattern.match(clause):
            return [Claim("zh", _subject(m["subj"], "zh"), _value(m["val"], "zh"), single=True, phrase=m["subj"])]
    return []


# --- Japanese --------------------------------------------------------------------------------
_JA_VERBS: list[tuple[str, str, bool]] = [
    ("大好き|好き", "like", False), ("嫌い|苦手", "dislike", False), ("住んで|住み|住む|住ん", "live", True),
    ("引っ越し|引っ越す|引越し", "live", True), ("勤めて|働いて|勤務", "work at", True),
    ("飲んで|飲み|飲む|飲ま", "drink", False), ("食べ", "eat", False), ("使って|使い|使う|使わ", "use", False),
    ("話し|話せ|話す", "speak", False), ("乗って|乗り|乗る", "drive", False),
]
_JA_ADVERBS = r"(?:毎朝|毎日|毎晩|いつも|今も|まだ|よく|普段|本当に|とても|すごく|めっちゃ|大|もう|ずっと|主に)*"
_JA_VERB = lazy(r"^(?:私は|僕は|俺は|わたしは)?" + _JA_ADVERBS + r"(?P<val>.+?)(?:が|を|に|で|へ|は)"
                      + _JA_ADVERBS + "(?P<verb>" + "|".join(v for v, _, _ in _JA_VERBS)
                      + r")(?P<tail>[\u3040-\u309f]*)$")
_JA_VERB_PARTS = [(lazy(f"^(?:{v})$"), key, single) for v, key, single in _JA_VERBS]
_JA_QUIT = lazy(r"^(?:私は|僕は)?(?:もう)?(?P<val>.+?)(?:は|を)(?:もう)?(?:やめ|辞め|止め)")
_JA_TOPIC = lazy(r"^(?:私の|僕の|俺の|うちの)?"
                       r"(?P<subj>(?!来週|今週|先週|明日|今日|昨日|来月|今月|先月|今年|来年|去年|毎)"
                       r"[^はがをに]{1,15}?)は(?P<val>[^はがを]+?)"
                       r"(?:です|だ|でした|だった|になりました|になった|に変わりました|に変わった|に変更しました|に変更した|"
                       r"に決まりました)?[。！!]?$")
_JA_NEGATIVE = lazy(r"ない|ません|なく|なかった")


def _ja_claims(clause: str) -> list[Claim]:
    if m := _JA_QUIT.match(clause):
        return [Claim("ja", "*", _value(m["val"], "ja"), negated=True, kind="verb")]
    if m := _JA_VERB.match(clause):
        key, single = next((k, s) for p, k, s in _JA_VERB_PARTS if p.match(m["verb"]))
        value = _value(re.sub(r"^(?:私|僕|俺)は", "", m["val"]), "ja")
        if value:
            return [Claim("ja", key, value, negated=bool(_JA_NEGATIVE.search(m["tail"])), single=single, kind="verb")]
    if m := _JA_TOPIC.match(clause):
        value, subject = _value(m["val"], "ja"), _subject(m["subj"], "ja")
        if value and subject and subject not in ("私", "僕", "俺"):
            return [Claim("ja", subject, value, single=True, phrase=m["subj"])]
    return []


# --- Korean --------------------------------------------------------------------------------
_KO_VERBS: list[tuple[str, str, bool]] = [
    ("좋아해|좋아합니다|좋아하", "like", False), ("싫어해|싫어합니다|싫어하", "dislike", False),
    ("마셔|마십니다|마시", "drink", False), ("먹어|먹습니다|먹", "eat", False),
    ("살아|삽니다|살고|살", "live", True), ("이사했|이사해|이사\\s?갔|이사갔|이사", "live", True),
    ("써|씁니다|사용해|사용합니다|사용하", "use", False), ("일해|일합니다|일하|다녀|다닙니다|다니", "work at", True),
]
_KO_ADVERBS = r"(?:(?:매일|아침|저녁|항상|요즘|정말|진짜|너무|주로|보통|아직도?|다시|많이|자주|늘)\s*)*"
_KO_VERB = lazy(r"^(?:저는|나는|전|난|저희는|우리는)?\s*" + _KO_ADVERBS
                      + r"(?P<val>.+?)(?:을|를|이|가|에서|에|으로|로|도|은|는)?\s+(?P<neg>(?:안|못|더\s?이상)\s?)?"
                      + _KO_ADVERBS + "(?P<verb>" + "|".join(v for v, _, _ in _KO_VERBS)
                      + r")(?P<tail>\S*(?:\s(?:있|않|싶)\S*)?)$")
_KO_VERB_PARTS = [(lazy(f"^(?:{v})$"), key, single) for v, key, single in _KO_VERBS]
_KO_QUIT = lazy(r"^(?:저는|나는|전|난)?\s*(?P<val>.+?)(?:을|를|은|는)?\s*"
                      r"(?:끊었|끊어|끊고|그만\s?뒀|그만\s?마시|그만\s?먹)")
_KO_TOPIC = lazy(r"^(?:제가|내가|저의|나의|제|내|우리)?\s*"
                       r"(?P<subj>(?!다음|이번|지난|내일|오늘|어제|매)\S.{0,15}?)"
                       r"(?:은|는)\s+(?P<val>.+?)"
                       r"(?:이에요|예요|입니다|이야|야|이다|였어요|이었어요|으로\s?바뀌었어요|로\s?바뀌었어요|"
                       r"으로\s?바꿨어요|로\s?바꿨어요)?[.!]?$")
_KO_NEGATIVE = lazy(r"지\s?않|지\s?마|않아|않습")


def _ko_claims(clause: str) -> list[Claim]:
    if m := _KO_QUIT.match(clause):
        return [Claim("ko", "*", _value(m["val"], "ko"), negated=True, kind="verb")]
    if m := _KO_VERB.match(clause):
        key, single = next((k, s) for p, k, s in _KO_VERB_PARTS if p.match(m["verb"]))
        value = _value(m["val"], "ko")
        if value:
            negated = bool(m["neg"]) or bool(_KO_NEGATIVE.search(m["tail"]))
            return [Claim("ko", key, value, negated=negated, single=single, kind="verb")]
    if m := _KO_TOPIC.match(clause):
        value, subject = _value(m["val"], "ko"), _subject(m["subj"], "ko")
        if value and subject and subject not in ("저", "나"):
            return [Claim("ko", subject, value, single=True, phrase=m["subj"])]
    return []


# --- reading a line -------------------------------------------------------------------------
@dataclass(frozen=True)
class Reading:
    lang: str
    claims: tuple[Claim, ...]
    replaces: bool  # carries a replacement cue ("actually", "now", "不再", "今は", "이제"…)


@lru_cache(maxsize=READ_CACHE)
def read(text: str) -> Reading:
    lang = language(text)
    body = text.strip().rstrip(".!?。！？~")
    replaces = _REPLACES.search(body) is not None
    found: list[Claim] = []
    for index, raw in enumerate(c for c in _CLAUSES.split(body) if c and c.strip()):
        clause = raw.strip()
        cue = _LEAD_CUE[lang].match(clause)
        if cue:
            clause = clause[cue.end():].strip()
        if not clause:
            continue
        if lang == "en":
            found += _en_claims(clause)
        elif lang == "zh":
            found += _zh_claims(clause, implicit_subject=bool(cue) or index > 0)
        elif lang == "ja":
            found += _ja_claims(clause)
        else:
            found += _ko_claims(clause)
    return Reading(lang, tuple(found), replaces)


# --- comparing ------------------------------------------------------------------------------
def _words(value: str, lang: str) -> set[str]:
    return set(value.split()) - _EN_STOP if lang == "en" else set()


def _values_overlap(a: str, b: str, lang: str) -> bool:
    """One value contains the other ("coffee" / "coffee every morning", "咖啡" / "一杯咖啡")."""
    if not a or not b:
        return False
    if lang == "en":
        wa, wb = _words(a, lang), _words(b, lang)
        return bool(wa) and bool(wb) and (wa <= wb or wb <= wa)
    return a in b or b in a


def _same_subject(new: Claim, old: Claim, similar: Similar | None) -> bool:
    if new.subject == old.subject:
        return True
    if new.kind == "verb" or old.kind == "verb":
        return False
    if new.lang != "en" and _cjk_subjects(new.subject, old.subject):
        return True
    if similar is None or not new.phrase or not old.phrase:
        return False
    if new.lang == "en" and set(new.subject.split()) & set(old.subject.split()):
        return False  # "sister's name" / "brother's name": a shared word with a different one is two subjects
    if new.lang != "en" and set(new.subject) & set(old.subject):
        return False
    score = similar(new.phrase, old.phrase)
    return score is not None and score >= SIMILAR_SUBJECTS


def conflicts(new_text: str, old_text: str, *, similar: Similar | None = None) -> bool:
    """Whether `new_text` gives a subject of `old_text` another value (or negates its value)."""
    new, old = read(new_text), read(old_text)
    if new.lang != old.lang or not new.claims or not old.claims:
        return False
    for n in new.claims:
        for o in old.claims:
            if n.negated and not o.negated:
                if (n.subject == "*" or _same_subject(n, o, similar)) and _values_overlap(n.value, o.value, n.lang):
                    return True
                continue
            if n.subject == "*" or o.subject == "*" or not _same_subject(n, o, similar):
                continue
            if n.negated != o.negated:  # "I don't eat meat" / "I eat meat again"
                if _values_overlap(n.value, o.value, n.lang):
                    return True
                continue
            if n.value == o.value or _values_overlap(n.value, o.value, n.lang):
                continue  # the same value, or a refinement ("Lisbon" / "Lisbon Portugal")
            if n.subject == "prefer" and similar is not None:
                score = similar(n.value, o.value)  # "TypeScript" / "window seats": two preferences
                if score is not None and score < UNRELATED_VALUES:
                    continue
            if n.single or o.single or new.replaces:
                return True
    return False


def same_fact(a: str, b: str) -> bool:
    """Whether `a` restates `b` (merge instead of adding a line)."""
    if canonical(a) == canonical(b):
        return True
    ra, rb = read(a), read(b)
    if ra.lang != rb.lang or not ra.claims or len(ra.claims) != len(rb.claims):
        return False
    key = lambda c: (c.subject, c.value, c.negated)  # noqa: E731
    if sorted(map(key, ra.claims)) != sorted(map(key, rb.claims)):
        return False
    # "I like tea" / "I like tea but not green tea": a clause read as no claim still counts
    return _numbers(a) == _numbers(b) and _meaning_cues(a, ra.lang) == _meaning_cues(b, rb.lang)


# --- near-duplicates: a restatement with a little more detail (seed 001 §3.3) ------------------
# "我喜欢喝美式" → "我喜欢喝美式咖啡", "I live in Lisbon" → "I live in Lisbon Portugal": the longer line
# says all the shorter one says and adds a detail. What is added must not change the meaning: no
# negation, no limit, no number (a different amount is another fact), and only a few words.
_EN_MEANING_WORDS = frozenset("not no never nor except without but unless only if when while after before until "
                              "instead rather than anymore longer don't doesn't didn't isn't aren't won't can't "
                              "cannot neither".split())
_CJK_MEANING = lazy(r"[不没沒别別無无非未否只仅僅除但却卻]|以外|以前|以后|之前|之后"
                    r"|ない|ません|じゃ|안|못|않|말고|빼고|만")
_NUMERAL = lazy(r"[\d零〇一二两三四五六七八九十百千万亿]")
_NUMBER = lazy(r"\d+(?:[.,]\d+)*")
MAX_EXTRA_WORDS = 3  # English words a refinement may add
MAX_EXTRA_CHARS = 4  # CJK characters a refinement may add


@lru_cache(maxsize=READ_CACHE)
def _numbers(text: str) -> tuple[str, ...]:
    return tuple(sorted(_NUMBER.findall(text)))


def _meaning_cues(text: str, lang: str) -> set[str]:
    """The negations and limits a line holds ("not", "only", "不", "只"…)."""
    if lang == "en":
        return set(_en_words(text)) & _EN_MEANING_WORDS
    return set(_CJK_MEANING.findall(text))


def _extends(longer: str, shorter: str, lang: str) -> bool:
    """`longer` is `shorter` followed by a short detail that changes nothing it said."""
    if lang == "en":
        long_words, short_words = longer.split(), shorter.split()
        extra = long_words[len(short_words):]
        return (bool(short_words) and long_words[:len(short_words)] == short_words
                and 0 < len(extra) <= MAX_EXTRA_WORDS and not set(extra) & _EN_MEANING_WORDS)
    extra = longer[len(shorter):]
    return (len(shorter) >= 2 and longer.startswith(shorter) and 0 < len(extra) <= MAX_EXTRA_CHARS
            and not _CJK_MEANING.search(extra) and not _NUMERAL.search(extra))


def refines(new_text: str, old_text: str) -> bool:
    """Whether `new_text` restates `old_text` with a small added detail: every claim of the old line
    is in the new one with the same subject and polarity, its value the same or extended (`_extends`),
    and at least one extended. Lines read as no claims are compared as whole canonical text."""
    new, old = read(new_text), read(old_text)
    if new.lang != old.lang or len(new.claims) != len(old.claims):
        return False
    if not new.claims:
        return _extends(canonical(new_text), canonical(old_text), new.lang) and _numbers(new_text) == _numbers(old_text)
    if {c.subject for c in new.claims} != {c.subject for c in old.claims} or _numbers(new_text) != _numbers(old_text):
        return False
    extended = False
    for o in old.claims:
        match = next((n for n in new.claims if n.subject == o.subject and n.negated == o.negated
                      and (n.value == o.value or _extends(n.value, o.value, n.lang))), None)
        if match is None:
            return False
        extended = extended or match.value != o.value
    return extended
