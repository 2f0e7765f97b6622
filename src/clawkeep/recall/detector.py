"""Does a message ask about the past? Pattern rules for English, Chinese, Japanese and Korean (A3).

A message "asks about the past" when answering it needs something said, decided, planned or
told in earlier conversation: explicit recall ("do you remember…", "还记得…", "覚えてる？",
"기억나?"), references to earlier talk ("the plan we discussed", "我上次说的那个方案",
"前回話したプラン", "지난번에 얘기한 계획"), recall particles (来着, っけ, 더라, -다고 했지) and
questions about the user's own facts and plans, which only earlier conversation can answer
("what's my passport number?", "我下周有什么安排", "明日の私の予定は？", "내일 내 일정 뭐야?").

Not recall: statements (including statements about the future: "我明天去上海"), commands and
future reminders ("remind me tomorrow to…"), memory writes ("please remember that…"),
hypotheticals, advice and how-to questions, and general knowledge even when it carries a time
word ("who won the World Cup last time?").

Design: each language has a few *guards* (force "no"), a question test, and an ordered list
of rules; the first rule that accepts a match names the reason. Everything is compiled at
import; a classification is a handful of regex scans (tens of microseconds).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["LANGUAGES", "NO_RECALL", "Classification", "classify", "detect_language"]

NO_RECALL = "no-recall-intent"
LANGUAGES = ("en", "zh", "ja", "ko", "other")


@dataclass(frozen=True, slots=True)
class Classification:
    past_question: bool
    language: str  # one of LANGUAGES
    reason: str  # "<lang>:<rule>" of the rule that fired, or NO_RECALL


# ---------------------------------------------------------------------------------------------
# Normalisation and language detection

_WS = re.compile(r"\s+")
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "`": "'"})


def _normalise(text: str) -> str:
    """NFKC (full-width ？ → ?, half-width kana → full-width), one space for any whitespace run."""
    return _WS.sub(" ", unicodedata.normalize("NFKC", text)).strip().translate(_APOSTROPHES)


_HANGUL = re.compile(r"[\uac00-\ud7a3\u1100-\u11ff\u3130-\u318f\ua960-\ua97f\ud7b0-\ud7ff]")
_KANA = re.compile(r"[\u3040-\u309f\u30a0-\u30ff\u31f0-\u31ff]")
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f]")
_LATIN_WORD = re.compile(r"[A-Za-z\u00c0-\u024f]+(?:'[A-Za-z]+)?")
_NON_ASCII_LATIN = re.compile(r"[\u00c0-\u024f]")
_OTHER_LETTER = re.compile(r"[\u0370-\u03ff\u0400-\u052f\u0590-\u06ff\u0900-\u0dff\u0e00-\u0eff]")
_EN_FUNCTION_WORDS = frozenset(
    "a an the i me my we our us you your he she it they is are was were am be been do does did "
    "have has had what when where which who whom whose why how can could would will should to "
    "of in on at for with about from that this and or not please tell remind remember recall "
    "again last next yesterday tomorrow don't didn't what's i'm".split()
)


def detect_language(text: str) -> str:
    """ "en", "zh", "ja", "ko" or "other", by script counts (a CJK character weighs one Latin word)."""
    t = _normalise(text or "")
    if not t:
        return "other"
    hangul = len(_HANGUL.findall(t))
    kana = len(_KANA.findall(t))
    han = len(_HAN.findall(t))
    cjk = hangul + kana + han
    words = _LATIN_WORD.findall(t)
    if cjk and cjk >= len(words):
        if hangul and hangul >= kana:
            return "ko"
        if kana:
            return "ja"
        return "zh"
    if not words:
        return "other"
    if len(_OTHER_LETTER.findall(t)) > sum(map(len, words)):
        return "other"
    lowered = [w.lower() for w in words]
    if any(w in _EN_FUNCTION_WORDS for w in lowered):
        return "en"
    # No English function word: plain ASCII (names, "ok", "thanks") passes as English,
    # accented Latin text without any English word is some other language.
    if _NON_ASCII_LATIN.search(t):
        return "other"
    return "en"


# ---------------------------------------------------------------------------------------------
# Rule machinery

Check = Callable[[re.Match[str], str, bool], bool]


@dataclass(frozen=True, slots=True)
class _Rule:
    name: str
    pattern: re.Pattern[str]
    needs_question: bool = False
    check: Check | None = None  # extra acceptance test on (match, text, is_question)


@dataclass(frozen=True, slots=True)
class _Language:
    code: str
    prepare: Callable[[str], str]
    is_question: Callable[[str], bool]
    guards: tuple[re.Pattern[str], ...]
    rules: tuple[_Rule, ...]

    def match(self, normalised: str) -> str | None:
        text = self.prepare(normalised)
        if not text or any(g.search(text) for g in self.guards):
            return None
        question = self.is_question(text)
        for rule in self.rules:
            if rule.needs_question and not question:
                continue
            for m in rule.pattern.finditer(text):
                if rule.check is None or rule.check(m, text, question):
                    return f"{self.code}:{rule.name}"
        return None


def _c(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


# ---------------------------------------------------------------------------------------------
# English (matched on lower-cased text)

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
_EN_CLAUSE_BREAK = re.compile(r"[.,;:!?\n()\"]")
_EN_WORD_BEFORE = re.compile(r"([a-z']+)\s*$")
_EN_Q_START = re.compile(
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


_EN_CAPABILITY = _c(
    r"\b(?:between|across)\s+(?:\w+\s+)?(?:chats?|sessions?|conversations?)\b"
    r"|\b(?:remember|recall)\s+(?:things|stuff|everything|information|context)\b"
    r"|\b(?:remember|recall)\s+(?:what\s+)?(?:i|we)\s+(?:say|tell)\b"
)


def _en_not_capability(m: re.Match[str], text: str, question: bool) -> bool:
    return not _EN_CAPABILITY.search(text)


_EN_SELF_AT_END = re.compile(r"\b(?:i|we)\s+(?:still\s+|do\s+|really\s+)?$")


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
_EN_NOT_A_FACT = _c(
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

_EN = _Language(
    code="en",
    prepare=str.lower,
    is_question=_en_is_question,
    guards=(
        _c(r"^(?:if|what\s+if|suppose|supposing|imagine|hypothetically|let's\s+say|say)\b"),
        _c(r"\bhypothetically\b"),
    ),
    rules=(
        _Rule(
            "remember-question",
            _c(r"\b(?:do|did|can|could|would)\s+(?:you|u)\s+(?:still\s+|even\s+|happen\s+to\s+)?(?:remember|recall)\b"),
            check=_en_not_capability,
        ),
        _Rule(
            "you-remember",
            _c(r"^(?:hey\s+|so\s+)?(?:you|u)\s+(?:still\s+)?(?:remember|recall)\b"),
            needs_question=True,
            check=_en_not_capability,
        ),
        _Rule(
            "forgot-what",
            _c(
                r"\bi\s+(?:forgot|forget|can't\s+remember|cannot\s+remember|don't\s+remember|can't\s+recall|"
                r"don't\s+recall|can't\s+recall)\s+(?:what|which|who|where|when|how|the|my|our|if|whether)\b"
            ),
        ),
        _Rule(
            "remember-wh",
            _c(r"\b(?:remember|recall)\s+(?:again\s+)?(?:what|which|who|whom|where|when|why|how|whether)\b"),
            check=_en_not_first_person_statement,
        ),
        _Rule(
            "remind-me-wh",
            _c(
                r"\bremind\s+(?:me|us)\s+(?:again\s+)?(?:of\s+|about\s+)?(?:what|which|who|whom|where|why|how|whether)\b"
            ),
        ),
        _Rule("tell-me-again", _c(r"\b(?:tell|show|give)\s+(?:me|us)\s+again\b")),
        _Rule(
            "previous-conversation",
            _c(
                r"\b(?:previous|earlier|past|last|prior|yesterday's|old|other)\s+(?:conversations?|chats?|"
                r"discussions?|sessions?|talks?)\b"
            ),
        ),
        _Rule(
            "what-did-we-say",
            _c(
                rf"\b{_EN_WH}(?:\s+(?:much|many|long|time|day))?\b[^.?!]{{0,40}}?\b(?:did|have|had)\s+"
                rf"{_EN_PRON}\s+(?:(?:ever|finally|already|just|first|originally|actually|last|eventually)\s+)?"
                rf"(?:{_EN_VERB_BASE}|{_EN_VERB_PAST})\b"
            ),
        ),
        _Rule(
            "did-we-say",
            _c(
                rf"(?:^|[.!?;,]\s*)(?:so\s+|and\s+|but\s+|hey\s+)?(?:did|have|had|haven't|didn't)\s+{_EN_PRON}\s+"
                r"(?:(?:ever|already|actually|finally|even)\s+)?"
                r"(?:decide|decided|choose|chosen|discuss|discussed|agree|agreed|say|said|mention|mentioned|"
                r"talk|talked|tell|told|share|shared|give|given|ask|asked|settle|settled|pick|picked|plan|planned|"
                r"recommend|recommended|suggest|suggested|promise|promised|go\s+over|gone\s+over|cover|covered)\b"
            ),
        ),
        _Rule(
            "past-time-question",
            _c(rf"\b(?:did|had|were|was)\s+{_EN_PRON}\b[^.?!]{{0,60}}\b{_EN_TIME_BACK}\b"),
            needs_question=True,
        ),
        _Rule(
            "we-discussed",
            _c(
                rf"\b{_EN_PRON}\s+(?:(?:had|have|'ve|'d|already|both|all|once|previously|originally|first|"
                rf"finally|last)\s+){{0,2}}{_EN_VERB_PAST}\b"
            ),
            check=_en_relative_or_question,
        ),
        _Rule(
            "presumed-plan",
            _c(
                r"(?:^|[.!?;,]\s*)(?:so\s+|but\s+)?(?:weren't|wasn't|aren't|didn't|haven't|hadn't)\s+(?:we|you|i)\s+"
                r"(?:going\s+to|gonna|supposed\s+to|meant\s+to|planning\s+to|already\s+\w+ed)\b"
            ),
        ),
        _Rule(
            "again-tag",
            _c(rf"(?:^|[.!?;]\s*){_EN_WH}\b[^.?!]*\bagain\s*\?"),
        ),
        _Rule(
            "own-fact",
            _c(
                r"\b(?:what|when|where|which|who|whose|how\s+(?:old|much|many|long|far))\b"
                r"(?:'s|'re|\s+(?:is|are|was|were))?(?:\s+[\w'-]+){0,3}?\s+(?:my|our)\s+"
                rf"(?:[\w-]+(?:'s)?\s+){{0,2}}?{_EN_FACT}\b"
            ),
            needs_question=True,
        ),
        _Rule(
            "own-thing",
            _c(
                r"\b(?:what|when|where|which|who)(?:'s|'re|\s+(?:is|are|was|were))\s+(?:my|our)\s+"
                r"(?P<thing>[a-z'-]+(?:\s+[a-z'-]+){0,2}?)\s*(?:called|again|on\s+\w+|at|set\s+for)?\s*\?"
            ),
            check=lambda m, t, q: not _EN_NOT_A_FACT.search(m.group("thing")),
        ),
        _Rule(
            "own-whereabouts",
            _c(r"\bwhere\s+(?:do|did|does)\s+(?:i|we)\s+(?:live|work|stay|study|park|keep|put|leave)\b"),
            needs_question=True,
        ),
        _Rule(
            "own-plans",
            _c(
                r"\b(?:do|did|have)\s+(?:i|we)\s+(?:have|got)\s+(?:[\w-]+\s+){0,2}?(?:planned|scheduled|booked|"
                r"plans?|meetings?|appointments?|due|on\s+(?:my|the|our)\s+(?:calendar|schedule|agenda))\b"
            ),
            needs_question=True,
        ),
        _Rule(
            "own-plans",
            _c(
                r"\bwhat\s+(?:am|are)\s+(?:i|we)\s+(?:doing|up\s+to|supposed\s+to\s+do|scheduled\s+to\s+do|"
                rf"planning\s+to\s+do|meant\s+to\s+do)\b[^?.!]*\b{_EN_TIME_AHEAD}"
            ),
            needs_question=True,
        ),
        _Rule(
            "own-habits",
            _c(r"\bwhat\s+(?:do|did)\s+(?:i|we)\s+(?:usually|normally|typically|always|like|prefer|love|hate)\b"),
            needs_question=True,
        ),
    ),
)


# ---------------------------------------------------------------------------------------------
# Chinese (traditional folded to simplified for the characters the rules use)

# Traditional → simplified for the characters the Chinese rules look at (pairs "繁简").
_T2S_PAIRS = (
    "還还 記记 說说 談谈 討讨 論论 決决 過过 們们 麼么 嗎吗 週周 個个 劃划 畫划 會会 議议 幾几 "
    "點点 號号 碼码 裡里 裏里 廳厅 來来 應应 該该 選选 開开 請请 幫帮 寫写 郵邮 間间 後后 題题 "
    "問问 這这 約约 預预 護护 紀纪 歡欢 憶忆 話话 講讲 訴诉 薦荐 錄录 對对 電电 機机 醫医 資资 "
    "經经 剛刚 時时 禮礼 書书 學学 買买 車车 鐵铁 單单 帳账 關关 於于 設设 語语 認认 為为 誰谁 "
    "遊游 戲戏 歷历 聽听 見见 場场 館馆 飯饭 師师 訂订 課课 長长 張张 門门 與与 從从 網网 頁页 "
    "讀读 氣气 歲岁 種种 別别 樣样 實实 際际 較较 專专 項项 準准 備备 戶户 誕诞 廠厂 僅仅 區区 "
    "臺台 灣湾 飛飞 處处 辦办 乾干 鐘钟 員员 闆板 勞劳 "
)
_T2S_CHARS = str.maketrans({pair[0]: pair[1] for pair in _T2S_PAIRS.split()})


def _zh_prepare(text: str) -> str:
    return text.replace("來著", "来着").replace("来著", "来着").translate(_T2S_CHARS)


_ZH_QWORD = r"(?:吗|嘛|么|\?|什么|啥|哪|几|多少|谁|没有|是不是|有没有)"
_ZH_QUESTION = re.compile(r"[?吗嘛呢]|什么|啥|哪|几|多少|谁|是不是|有没有|来着|(?<!怎)么")
_ZH_PRON = r"(?:我们|咱们|我|你们|你|您)"
_ZH_SPEECH = (
    r"(?:讨论|商量|商定|约定|决定|确定|提到|提起|提过|告诉|答应|推荐|建议|介绍|计划|安排|记录|记下|"
    r"说|讲|聊|谈|提|定|约|选|记)"
)
_ZH_PAST = (
    r"(?:之前|以前|上次|上回|曾经|刚才|刚刚|前几天|前两天|那天|昨天|昨晚|前天|上周|上星期|上礼拜|上个月|"
    r"去年|早些时候|先前|此前|当时|那时候?|一开始)"
)
_ZH_ADVICE = re.compile(r"应该|应当|该|怎么|怎样|如何|要不要|能不能|可不可以|可以|最好|建议|推荐|帮我|给我|为什么|为啥")
_ZH_ADVISORY = re.compile(r"应该|该|要不要|能不能|可不可以|最好")
_ZH_NOT_A_FACT = re.compile(
    r"代码|程序|文件|问题|错误|报错|作业|文章|意思|方法|办法|选择|建议|想法|感觉|电脑|手机|屏幕|网"
)
_ZH_FACT = (
    r"(?:安排|计划|日程|行程|预约|约会|会议|航班|机票|火车|高铁|酒店|生日|地址|电话|手机号|号码|密码|名字|"
    r"叫什么|叫啥|住在?哪|在哪(?:儿)?(?:住|上班|工作)|过敏|护照|身份证|纪念日|待办|要做什么|要干什么|要干嘛|"
    r"有什么事|有啥事|忙什么|约了|爱吃|喜欢吃|喜欢什么|最喜欢|血型|尺码|邮箱|账号|工作|公司|学校|老板|医生|"
    r"预算|房租|工资|几点|哪天)"
)


def _zh_speech_ref(m: re.Match[str], text: str, question: bool) -> bool:
    """说的 / 说好的 always refers back; 说过 / 说了 only inside a question (else it is a statement)."""
    return m.group("tail") in {"的", "好的", "好"} or question


def _zh_own_fact(m: re.Match[str], text: str, question: bool) -> bool:
    return not _ZH_ADVICE.search(text)


_ZH = _Language(
    code="zh",
    prepare=_zh_prepare,
    is_question=lambda t: bool(_ZH_QUESTION.search(t)),
    guards=(re.compile(r"^(?:如果|假如|假设|要是|万一|假使)"), re.compile(r"(?:请|帮我)?记住[^吗?]*$")),
    rules=(
        _Rule("still-remember", re.compile(r"(?<!我)(?<!我们)(?<!咱们)还记得")),
        _Rule(
            "remember-question",
            re.compile(rf"(?<!我)(?<!我们)(?<!咱们)记得(?!要|提醒|帮|带|把|给)[^。！!]{{0,24}}?{_ZH_QWORD}"),
        ),
        _Rule("laizhe", re.compile(r"来着")),
        _Rule("help-recall", re.compile(r"回(?:忆|想)(?:一下|下)")),
        _Rule(
            "previous-conversation",
            re.compile(rf"{_ZH_PAST}(?:的|那次|那个)?(?:对话|聊天|谈话|会话|聊天记录|对话记录)"),
        ),
        _Rule(
            "past-marker-speech",
            re.compile(rf"{_ZH_PAST}[^。！!?，,]{{0,10}}?{_ZH_SPEECH}(?P<tail>好的|好|过|了|的)?"),
            check=_zh_speech_ref,
        ),
        _Rule(
            "said-that-one",
            re.compile(
                rf"{_ZH_PRON}(?:跟你|和你|对你|给你|跟我|和我|对我)?(?:之前|上次|上回|刚才|以前)?"
                rf"{_ZH_SPEECH}(?:过)?的(?:那|这|是)"
            ),
        ),
        _Rule(
            "said-question",
            re.compile(
                rf"{_ZH_PRON}(?:跟你|和你|对你|给你|跟我|和我|对我)?(?:都|也|又|还|有)?{_ZH_SPEECH}(?:过|了)"
                rf"[^。！!]{{0,20}}?{_ZH_QWORD}"
            ),
        ),
        _Rule(
            "past-pronoun-question",
            re.compile(
                rf"(?:{_ZH_PRON}{_ZH_PAST}|{_ZH_PAST}{_ZH_PRON})[^。！!?]{{0,12}}?(?:什么|啥|哪|几|多少|谁|怎么|吗|呢)"
            ),
            check=lambda m, t, q: not _ZH_ADVISORY.search(t),
        ),
        _Rule(
            "own-thing",
            re.compile(
                r"(?:我|咱们|我们)的(?P<thing>[^。！!?，,的]{1,8}?)(?:是|叫|在)?"
                r"(?:多少|什么|啥|哪(?:个|天|里|儿|一)|几(?:点|号|月|个)?|谁)"
            ),
            check=lambda m, t, q: not _ZH_NOT_A_FACT.search(m.group("thing")) and not _ZH_ADVICE.search(t),
        ),
        _Rule(
            "own-fact",
            re.compile(rf"(?:我|咱)[^。！!?，,]{{0,10}}?{_ZH_FACT}"),
            needs_question=True,
            check=_zh_own_fact,
        ),
    ),
)


# ---------------------------------------------------------------------------------------------
# Japanese

_JA_QUESTION = re.compile(
    r"[?]|か[。!.]*$|の[。]*$|っけ|何|なに|なん|いつ|どこ|誰|だれ|どれ|どの|どう|いくつ|幾つ|は$|って$|よね[。]*$"
)
_JA_ANCHOR = (
    r"(?:前回|この前|この間|こないだ|以前(?!より)|前に|さっき|先ほど|先週|先月|昨日|昨晩|昨夜|おととい|一昨日|去年|"
    r"昨年|あの時|その時|最初に|前の)"
)
# Past verbs of telling/deciding: stem + optional auxiliary (てくれた, てもらった, ていた, ちゃった)
# + past (た / ました). 決まった and 話に出た have no agent.
_JA_VERB = (
    r"(?:(?:話し合っ|話し|言っ|伝え|相談し|決め|約束し|教え|お願いし|頼ん|勧め|すすめ|おすすめし|お勧めし|"
    r"紹介し|提案し|選ん|メモし|予約し|挙げ|話題にし|言及し|連絡し|送っ|書い)"
    r"(?:て(?:くれ|もらっ|い|おい|しまっ|くれてい)?|ちゃっ|てくれまし|てもらいまし|てまし|ていまし)?"
    r"(?:た|ました)|(?:決まっ|話に出)(?:た|ていた)|決まりました)"
)
_JA_SELF = r"(?:私たち|僕たち|僕ら|俺たち|我々|私|わたし|あたし|僕|ぼく|俺|おれ|自分|うち)"
_JA_YOU = r"(?:あなた|君|きみ|そっち)"
_JA_FACT = (
    r"(?:予定|スケジュール|誕生日|住所|名前|電話番号|番号|パスワード|暗証番号|好きな|好物|嫌いな|アレルギー|パスポート|"
    r"記念日|約束|会議|フライト|飛行機|便|予約|締め切り|締切|職場|会社|学校|趣味|血液型|サイズ|メール|アカウント|"
    r"仕事|家|ペット|犬|猫)"
)
_JA_NOT_A_FACT = re.compile(r"コード|プログラム|バグ|エラー|問題|間違い|意味|方法|ファイル|パソコン|画面|気持ち|せい")
_JA_FACT_Q = r"(?:[?]|は$|何|なに|なん|いつ|どこ|誰|だれ|どれ|いくつ|何時|ですか|でしたか|だっけ|だった|って$)"
_JA_PLAN_CMD = re.compile(r"立て|組ん|作っ|考え|決め(?:て|よう|ましょう)|入れ|追加|調整|変更")
_JA_TIME = r"(?:明日|あした|あす|明後日|来週|今週|今日|週末|来月|今月|今夜|今晩|午後|午前|[月火水木金土日]曜(?:日)?)"


def _ja_reference_or_question(m: re.Match[str], text: str, question: bool) -> bool:
    """話した件 (attributive) refers back; 話した。 (sentence-final) is a statement unless asked."""
    if question:
        return True
    rest = text[m.end() :]
    return bool(rest) and rest[0] not in "。.!！、,…~〜" and not rest.startswith(("よ", "ね", "し", "けど", "から"))


_JA_SELF_TOPIC_AT_END = re.compile(rf"{_JA_SELF}(?:は|も)[^。]*$")


def _ja_remembers(m: re.Match[str], text: str, question: bool) -> bool:
    before = text[: m.start()]
    if _JA_SELF_TOPIC_AT_END.search(before):
        return False  # 私はちゃんと覚えてる (a statement about oneself)
    rest = text[m.end() :]
    return question or not rest or rest[0] in "?。!…~〜 "


_JA = _Language(
    code="ja",
    prepare=lambda t: t,
    is_question=lambda t: bool(_JA_QUESTION.search(t)),
    guards=(re.compile(r"^(?:もし|仮に|もしも)"),),
    rules=(
        _Rule(
            "remember-question",
            re.compile(
                r"覚えて(?:る|ます|いる|います|いますか|ない|ません|た|らっしゃいますか)(?!ように|状態|ことに|ままに)"
            ),
            check=_ja_remembers,
        ),
        _Rule("forgot-question", re.compile(r"忘れ(?:た|ちゃった|てる|てない|ました)(?:の|んですか|ですか)?[?]")),
        _Rule("kke", re.compile(r"(?:た|だ)っけ|っけ[?。!]*$")),
        _Rule(
            "previous-conversation", re.compile(rf"{_JA_ANCHOR}の?(?:会話|チャット|やり取り|やりとり|打ち合わせ|相談)")
        ),
        _Rule(
            "anchor-speech",
            re.compile(rf"{_JA_ANCHOR}[^。!?]{{0,24}}?{_JA_VERB}(?![いくが])"),
            check=_ja_reference_or_question,
        ),
        _Rule(
            "what-did-i-say",
            re.compile(r"(?:何|なん|なに)(?:て|って|と)言(?:った|ってた|っていた|いました|ってました)"),
        ),
        _Rule(
            "self-speech",
            re.compile(rf"(?:{_JA_SELF}|{_JA_YOU})(?:が|は|、)?[^。!?]{{0,12}}?{_JA_VERB}(?![いくが])"),
            check=_ja_reference_or_question,
        ),
        _Rule(
            "was-it",
            re.compile(
                r"(?:何|なん|なに|いつ|どこ|誰|だれ|どれ|どっち|どちら|いくら)[^。!?]{0,8}?だった(?:かな|かしら|け)"
            ),
        ),
        _Rule(
            "do-you-know-mine",
            re.compile(rf"{_JA_SELF}(?:が|の|って|は)[^。!?]{{0,16}}?知って(?:る|ます|いる|います)(?:か|の)?[?]"),
        ),
        _Rule(
            "own-thing",
            re.compile(
                rf"{_JA_SELF}の(?P<thing>[^。!?、]{{1,10}}?)(?:は|って)"
                r"(?:何|なん|なに|いつ|どこ|誰|だれ|どれ|いくつ|何番|何時|何日|何曜)"
            ),
            check=lambda m, t, q: not _JA_NOT_A_FACT.search(m.group("thing")),
        ),
        _Rule(
            "own-whereabouts",
            re.compile(rf"{_JA_SELF}(?:が|は|って|、)?どこ(?:に|で)(?:住|働|勤め)"),
        ),
        _Rule(
            "own-fact",
            re.compile(rf"{_JA_SELF}の[^。!?]{{0,10}}?{_JA_FACT}[^。!]{{0,12}}?{_JA_FACT_Q}"),
            check=lambda m, t, q: not _JA_PLAN_CMD.search(t),
        ),
        _Rule(
            "own-schedule",
            re.compile(
                rf"{_JA_TIME}の?(?:{_JA_SELF}の)?(?:予定|スケジュール)(?:は|って)?"
                r"(?:[?]|何|なに|なん|どう(?:なって)|ある|あった|ありますか|教えて|$)"
            ),
            check=lambda m, t, q: not _JA_PLAN_CMD.search(t),
        ),
    ),
)


# ---------------------------------------------------------------------------------------------
# Korean

_KO_QUESTION = re.compile(r"[?]|(?:니|냐|나요|까|죠|지요|더라|었지|였지|았지|했지)[.!~]*$")
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
_KO_HAS_QWORD = re.compile(_KO_QWORD)
_KO_COPULA_END = re.compile(r"(?:야|예요|에요|지|죠|돼)[.!~]*$")
_KO_SELF = r"(?<![가-힣])(?:내가|제가|나는|저는|난|내|제|나의|저의|나|저|우리가|우리는|우리의|우리)(?![가-힣])"
_KO_FACT = (
    r"(?:일정|스케줄|생일|주소|이름|비밀번호|비번|전화번호|번호|여권|약속|계획|예약|회의|미팅|항공편|비행기|"
    r"기념일|알레르기|취향|좋아하는|직장|회사|학교|마감|주소지)"
)
_KO_FACT_Q = r"(?:뭐|뭘|언제|어디|몇|무슨|누구|어느|[?]|이야|였|이었|있(?:어|나|니)\s*[?]|있었|있나요)"
_KO_CMD = re.compile(
    r"짜\s*줘|만들어|세워|정리해|추가|바꿔|어떻게\s*(?:해|하|할|만들|써|쓰)|해야|할까|좋을까|추천해|"
    r"기억해\s*(?:줘|둬|두|놔)"
)
_KO_NOT_A_FACT = re.compile(r"코드|버그|오류|에러|문제|잘못|방법|말|생각|기분|컴퓨터|화면|파일")


_KO_ATTRIBUTIVE = frozenset({"했던", "하던", "한", "해준", "른", "준", "줬던"})


def _ko_speech_ref(m: re.Match[str], text: str, question: bool) -> bool:
    """얘기한 계획 (attributive) refers back; 얘기했어. (finite) is a statement unless asked."""
    ending = (m.group("e1") or m.group("e2") or "").replace(" ", "")
    return ending in _KO_ATTRIBUTIVE or question


_KO = _Language(
    code="ko",
    prepare=lambda t: t,
    is_question=lambda t: bool(_KO_QUESTION.search(t)),
    guards=(re.compile(r"^(?:만약|만일|가령)"),),
    rules=(
        _Rule(
            "remember-question",
            re.compile(
                r"기억\s*(?:나(?:요|니|냐|지|죠|세요)?|하(?:니|냐|세요|시나요|시죠|지|죠|나요)|해(?:요)?\s*(?=[?])|"
                r"하고\s*있(?:어|니|냐|나요|어요|으세요)|안\s*나(?:요|니|냐)?\s*(?=[?]))(?![가-힣])"
            ),
            check=lambda m, t, q: not _KO_CMD.search(t) or q,
        ),
        _Rule(
            "deora",
            re.compile(r"더라(?!도)(?:요)?(?![가-힣])"),
            check=lambda m, t, q: q or bool(_KO_HAS_QWORD.search(t)),
        ),
        _Rule(
            "said-that",
            re.compile(
                r"(?:다|라|냐|자)고\s*(?:했|그랬|말했)(?:었)?(?:지|죠|지요|더라|잖아|나|니|어\s*(?=[?])|어요\s*(?=[?]))"
            ),
        ),
        _Rule(
            "past-question",
            re.compile(rf"{_KO_QWORD}[^.!?]{{0,16}}?(?:였|이었|었|았|했)(?:지|죠|지요|더라|나요?)(?![가-힣])"),
        ),
        _Rule(
            "previous-conversation",
            re.compile(r"(?:지난번|저번|예전|이전|어제|지난)\s*(?:의\s*)?(?:대화|채팅|상담|논의)"),
            needs_question=True,
        ),
        _Rule("anchor-speech", re.compile(rf"{_KO_ANCHOR}[^.!?]{{0,24}}?{_KO_SPEECH}"), check=_ko_speech_ref),
        _Rule(
            "self-speech",
            re.compile(rf"(?:내가|제가|우리가|네가|니가|너가|당신이)\s*[^.!?]{{0,12}}?{_KO_SPEECH}"),
            check=_ko_speech_ref,
        ),
        _Rule(
            "own-fact",
            re.compile(rf"{_KO_SELF}[^.!?]{{0,10}}?{_KO_FACT}[^.!]{{0,8}}?{_KO_FACT_Q}"),
            check=lambda m, t, q: not _KO_CMD.search(t),
        ),
        _Rule(
            "own-thing",
            re.compile(
                r"(?<![가-힣])(?:내|제|나의|저의|우리)\s+(?P<thing>[가-힣]+(?:\s+[가-힣]+){0,2}?)\s*"
                r"(?:어떻게\s*(?:돼|되|됐)|(?:뭐|뭘|언제|어디|몇|무슨|누구)(?![가-힣]*(?:할까|하지|해야)))"
            ),
            check=lambda m, t, q: (q or bool(_KO_COPULA_END.search(t))) and not _KO_NOT_A_FACT.search(m.group("thing")),
        ),
        _Rule(
            "do-you-know-mine",
            re.compile(
                r"(?<![가-힣])(?:내가|제가|내|제)\s[^.!?]{0,16}?(?:알아(?:요)?|아세요|아니|알고\s*있(?:어|니|나요|어요))\s*[?]"
            ),
            check=lambda m, t, q: not _KO_NOT_A_FACT.search(m.group(0)),
        ),
        _Rule(
            "own-plans",
            re.compile(
                rf"{_KO_SELF}[^.!?]{{0,12}}?(?:뭐|무슨\s*\S+)\s*있(?:어|나|니|어요|나요|지|었지|었어)\s*(?:[?]|$)"
            ),
            check=lambda m, t, q: not _KO_CMD.search(t),
        ),
    ),
)

_BY_CODE = {"en": _EN, "zh": _ZH, "ja": _JA, "ko": _KO}
_TWO_LATIN_WORDS = re.compile(r"[A-Za-z]+\W+[A-Za-z]+")


# Long pastes (logs, code) are scanned at both ends only: a question about the past sits before
# or after the pasted material, and this keeps the worst case to a few milliseconds.
_SCAN_EDGE = 2000


def classify(text: str) -> Classification:
    """Classify one user message. Empty or whitespace-only text is never a past question."""
    text = text or ""
    if len(text) > 2 * _SCAN_EDGE + 500:
        text = f"{text[:_SCAN_EDGE]}\n{text[-_SCAN_EDGE:]}"
    normalised = _normalise(text)
    language = detect_language(normalised)
    if not normalised:
        return Classification(False, language, NO_RECALL)
    order: list[_Language] = []
    if language in _BY_CODE:
        order.append(_BY_CODE[language])
    if language != "en" and _TWO_LATIN_WORDS.search(normalised):
        order.append(_EN)  # English phrasing inside CJK text, or Latin text we could not place
    for lang in order:
        reason = lang.match(normalised)
        if reason is not None:
            return Classification(True, language, reason)
    return Classification(False, language, NO_RECALL)
