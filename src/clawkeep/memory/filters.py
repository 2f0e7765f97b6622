"""Write filters (M7, seed 001 §5.3): what must not become long-term memory.

`classify(text)` sorts one would-be memory into

- `secret`: anything `redact_secrets` would remove — keys and tokens, passwords, PINs and
  one-time codes stated in words, payment cards, national ids, IBANs (en/zh/ja/ko, and
  password wordings in de/fr/es/it/pt). There is
  deliberately no second detector here: what is refused as a secret is exactly what is
  redacted wherever text is indexed or shown.
- `operational`: a one-off instruction to the assistant ("把这份文档转成PDF发我邮箱", "send this
  file to my email now", "帮我订明天的会议室", "明日の会議室を予約して", "택시 불러 줘").
  Standing instructions are durable and kept: "always reply in Chinese", "以后文件都发我工作邮箱",
  "これからは日本語で返事して", "앞으로는 한국어로 대답해 줘", "call me Sam", "don't use emojis".
  So are memory requests and reminders ("remember that…", "提醒我周日…").
- `venting`: emotion with nothing durable in it ("这功能太烂了", "ugh this is so broken",
  "マジでムカつく", "아 진짜 짜증나"). Venting that carries a concrete request ("…希望能支持CSV"),
  a preference ("I hate cilantro") or a fact ("my flight got cancelled") is kept.
- `keep`: everything else.

Pattern-based, no model: it must run on every flush note and every `remember`, offline.
Precision/recall per class and language: bench/write_filters.py on tests/data/write_filters.jsonl.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..patterns import lazy
from ..redact import redact_secrets, secret_kinds

KINDS = ("keep", "secret", "operational", "venting")

SECRET_REASON = ("it contains a secret ({what}); set agents.defaults.memorySearch.writeFilters.allowSecrets "
                 "to store it redacted")
OPERATIONAL_REASON = "it is a one-off operational instruction, not a durable fact (\u201c{cue}\u201d)"
VENTING_REASON = "it is venting without a durable fact (\u201c{cue}\u201d)"


@dataclass(frozen=True)
class Verdict:
    kind: str  # keep | secret | operational | venting
    reason: str | None = None  # why it is refused (None when kept)
    cue: str | None = None  # the words that decided

    @property
    def refused(self) -> bool:
        return self.kind != "keep"


def _any(*patterns: str, flags: int = 0) -> re.Pattern[str]:
    return lazy("|".join(f"(?:{p})" for p in patterns), flags)


# --- durable cues: standing instructions, memory requests, reminders ------------------------
_STANDING = _any(
    r"\b(?:always|never|from\s+now\s+on|in\s+(?:the\s+)?future|going\s+forward|every\s*time|whenever|each\s+time|"
    r"by\s+default|in\s+general|all\s+the\s+time|any\s*more|from\s+today|for\s+good|when(?:ever)?\s+you|"
    r"each\s+(?:day|week|morning|month)|every\s+(?:day|week|morning|month|\w+day))\b",
    r"\b(?:call|address)\s+me\s+(?:as\s+)?[A-Z][\w.-]*$",
    r"以后|今后|往后|从现在起|从今以后|从今天起|从此|每次|每回|每当|一律|总是|永远|一直|默认|别再|不要再|都用|都发|都要|"
    r"叫我|称呼我",
    r"これから|今後|いつも|毎回|常に|ずっと|必ず|デフォルト|以降|と呼んで|って呼んで",
    r"앞으로|항상|매번|언제나|이제부터|부터는|기본으로|라고\s?불러|이라고\s?불러",
    flags=re.IGNORECASE,
)
_MEMORY_REQUEST = _any(
    r"\b(?:remember|don'?t\s+forget|keep\s+in\s+mind|make\s+a\s+note|note\s+that|remind\s+me)\b",
    r"记住|记得|记一下|记下|别忘了|不要忘记|提醒我|提醒一下",
    r"覚えて|忘れないで|思い出させて|リマインド|メモして|メモしておいて",
    r"기억해|기억해\s?줘|잊지\s?마|잊지\s?말아|알려\s?줘(?=.*(?:라고|하라고))|라고\s?알려|하라고\s?알려|리마인드",
    flags=re.IGNORECASE,
)

# --- operational: one-off instructions --------------------------------------------------------
_EN_LEAD = (r"(?:(?:ok(?:ay)?|hey|so|and|also|now|then|pls|please|plz|kindly|just|quickly|quick|first|next|to|"
            r"go\s+ahead\s+and|can\s+(?:you|u)|could\s+(?:you|u)|would\s+(?:you|u)|will\s+(?:you|u)|"
            r"would\s+you\s+mind|i\s+need\s+you\s+to|i\s+want\s+you\s+to|i'?d\s+like\s+you\s+to|"
            r"help\s+me|try\s+to|make\s+sure\s+to)[\s,]+)*")
_EN_VERBS = (
    r"send|resend|e-?mail|mail|forward|reply|text|message|dm|ring|phone|call|book|reserve|schedule|reschedule|"
    r"cancel|order|buy|purchase|pay|transfer|convert|translate|summari[sz]e|rewrite|draft|compose|proofread|edit|"
    r"fix|format|print|scan|upload|download|share|post|publish|tweet|delete|remove|erase|clear|rename|move|copy|"
    r"paste|export|import|open|close|launch|start|stop|restart|reboot|rerun|run|execute|deploy|build|compile|"
    r"install|uninstall|update|upgrade|merge|push|pull|commit|revert|rollback|roll\s+back|check|look\s+up|"
    r"search|find|google|fetch|grab|show|list|create|generate|draw|plot|calculate|compute|set\s+up|turn\s+on|"
    r"turn\s+off|switch\s+off|switch\s+on|play|pause|mute|ping|kill|retry|attach|sign|fill\s+out|fill\s+in|"
    r"submit|approve|reject|notify|invite|review|look\s+at|write|make|add|get|tell|ask|save|sort|organi[sz]e|"
    r"archive|unsubscribe|subscribe|refund|track|pick\s+up|order\s+me|hail|arrange|set"
)
_EN_OPERATIONAL = lazy(rf"^\s*{_EN_LEAD}(?P<cue>(?:{_EN_VERBS}))\b(?!\s+me\s+(?:as\s+)?[A-Z][\w.-]*\s*$)",
                             re.IGNORECASE)
_EN_ONE_OFF = lazy(r"\b(?:this|that|these|those|it|now|right\s+now|asap|immediately|again|today|tonight|"
                         r"yet|the\s+last|the\s+latest)\b", re.IGNORECASE)
_EN_NEGATIVE_IMPERATIVE = lazy(r"^\s*(?:please\s+)?(?:don'?t|do\s+not|never)\b", re.IGNORECASE)

_ZH_VERBS = (
    r"订(?!阅|单|婚)|预订|预定|预约|发送|发给|发到|发我|发|转发|转成|转为|转换|寄|打印|扫描|翻译|总结|概括|写|起草|修改|改一下|"
    r"删|清空|打开|关闭|关掉|重启|启动|停止|停掉|运行|跑|执行|部署|安装|卸载|更新|升级|合并|提交|推送|查|搜|找|下载|"
    r"上传|导出|导入|生成|画|算|计算|做|整理|安排|取消|叫|打车|买|下单|付款|支付|转账|回复|通知|告诉|问一下|看看|看一下|"
    r"检查|核对|重跑|再跑|重试|再试|播放|暂停|创建|新建|备份|恢复|填|签|上报|汇报"
)
_ZH_OPERATIONAL = _any(
    r"^(?:现在|马上|立刻|立即|赶紧|赶快|快|先|再|今天|明天)?(?:你)?(?:能不能|能否|可以|可不可以|能|可否)?"
    r"(?:请|麻烦(?:你)?|劳驾)?(?:你)?(?P<cue1>帮我|给我|替我|帮忙|为我|帮)",
    r"^(?:现在|马上|立刻|立即|赶紧|赶快|快|先|再)?(?:请|麻烦(?:你)?|劳驾)?(?:你)?(?P<cue2>把).{1,30}?"
    r"(?:转成|转为|转换|发|寄|删|改|翻译|导出|导入|打印|上传|下载|保存|存|整理|总结|放|移|关|打开|提交|推送|合并|部署|"
    r"重启|换成|做成|生成|加|去掉|填|签|交)",
    rf"^(?:现在|马上|立刻|立即|赶紧|赶快|快|再|先)?(?:请|麻烦(?:你)?|劳驾)(?:你)?(?P<cue3>{_ZH_VERBS})",
    rf"^(?:现在|马上|立刻|立即|赶紧|赶快|快|再)(?:请|麻烦(?:你)?)?(?P<cue4>{_ZH_VERBS})",
    rf"^(?P<cue5>(?:{_ZH_VERBS}))(?:一下|一遍|一次|一个|一封|一份|一张|掉|下)",
)
_JA_OPERATIONAL = _any(
    r"(?P<cue1>(?:って|んで|いて|いで|して|せて|べて|めて|けて|えて|れて|きて|ちて|みて|てて|で|て)"
    r"(?:ください|下さい|くれ(?:る|ない|ます|ません)?|もらえ(?:る|ます|ません)?|もらっていい|"
    r"いただけ(?:る|ます|ません)|ほしい|欲しい|おいて(?:ください|くれる)?|ちょうだい)?)"
    r"(?:か|かな|よ|ね|な)?[？?！!。\s]*$",
    r"(?P<cue2>しといて|お願い(?:します|いたします|できますか)?)[。！!？?\s]*$",
)
_JA_NEGATIVE_REQUEST = lazy(r"ないで(?:ください|下さい|くれ|ね)?[。！!\s]*$")
_KO_OPERATIONAL = _any(
    r"(?P<cue1>(?:어|아|여|해|게|워|줘|와|봐|내|려|러|셔)\s?(?:줘|줘요|주세요|줄래|줄래요|주실래요|주시겠어요|주실\s?수\s?있나요|"
    r"줄\s?수\s?있어|주라|주십시오))[?？!.~\s]*$",
    r"(?P<cue2>해라|하세요|하십시오|하시오|해\s?봐)[?？!.~\s]*$",
    r"^(?P<cue3>지금|당장|빨리|바로|얼른|다시|한\s?번\s?더|좀).*(?:해|려|내|워|봐|줘)[?？!.~\s]*$",
    r"(?P<cue4>(?:한\s?번\s?더|다시|지금|당장|빨리)\s?\S+(?:해|려|내|워|봐))[?？!.~\s]*$",
)
_KO_NEGATIVE_REQUEST = lazy(r"지\s?마(?:세요|요|라|십시오)?[.!\s]*$")

# --- venting ---------------------------------------------------------------------------------
_EN_VENT = _any(
    r"^\s*(?:ugh+|argh+|gah+|ffs|fml|wtf|omg|jeez|geez|damn(?:it)?|dammit|bloody\s+hell|for\s+god'?s\s+sake|"
    r"seriously|come\s+on|oh\s+come\s+on|ffs)\b",
    r"\b(?:worst|garbage|trash|crap|crappy|sucks?|sucked|useless|hopeless|ridiculous|pathetic|terrible|awful|"
    r"horrible|stupid|dumb|idiotic|infuriating|frustrat\w*|annoying|annoyed|pissed|"
    r"(?:is|so|still|totally|completely|always|all)\s+broken|broken\s+again|hate\s+(?:this|it|that|everything)|"
    r"sick\s+of|fed\s+up|tired\s+of|i\s+give\s+up|waste\s+of\s+time|nothing\s+(?:ever\s+)?works?|"
    r"piece\s+of\s+(?:junk|crap|garbage)|not\s+again|again\s*[?!]{2,}|kill\s+me|so\s+done\s+with)\b",
    flags=re.IGNORECASE,
)
_ZH_VENT = lazy(
    r"太烂|烂透|好烂|真烂|垃圾|烦死|好烦|真烦|烦人|气死|气人|受够|崩溃|无语|醉了|服了|什么鬼|坑爹|坑人|太差|真差|太难用|难用|"
    r"什么破|这破|破(?:软件|系统|电脑|手机|玩意|东西|app|App|功能|网)|搞什么|见鬼|妈的|卧槽|我靠|郁闷|心累|累死|离谱|"
    r"又崩|又卡|又挂|卡死|又出错|越更越差|吐了|恶心|烂死|差劲|没救了|服气"
)
_JA_VENT = lazy(
    r"最悪|ムカつく|むかつく|ムカムカ|うざ|ウザ|クソ|くそ|ひどい|酷い|使えな|ありえな|有り得な|もう嫌|いやだ|嫌だ|ふざけ|イライラ|"
    r"いらいら|いい加減に|意味わから|意味不明|最低|ダメだ|だめだ|勘弁|腹立|腹が立|頭にくる|なんで(?:こう|いつも|また)|"
    r"動かない|フリーズ|壊れ|しんどい|やってられ|うんざり|ガッカリ|がっかり"
)
_KO_VENT = lazy(
    r"짜증|최악|어이없|미치겠|미쳤|열받|열 받|빡치|빡쳐|엉망|쓰레기|답답|지긋지긋|지겨|싫다|"
    r"싫어(?!해|하)|왜\s?이렇게|왜\s?또|또\s?(?:에러|멈|안\s?돼|안\s?되|오류|먹통)|안\s?되는\s?거야|"
    r"망했|개판|구려|구리다|후지다|노답|죽겠|아\s?진짜|진짜\s?왜|어이가\s?없|화나|화가\s?나"
)
# What makes venting worth keeping: a concrete request or wish, or a fact about the user.
_IMPROVEMENT = _any(
    r"\b(?:would\s+be\s+(?:great|nice|good|better|helpful)|i\s+wish|please\s+add|should\s+(?:have|support|be\s+able|"
    r"let|allow)|it'?d\s+be\s+(?:nice|great)|could\s+you\s+add|feature\s+request|if\s+only|it\s+needs|"
    r"i'?d\s+like|i\s+want\s+(?:it|a|an|the)|support(?:s|ed)?\s+\w+|so\s+(?:please\s+)?(?:keep|make|use|add))\b",
    r"希望|建议|要是能|如果能|最好|能不能加|应该|想要|改进|尽量|能支持|支持一下",
    r"あると助かり|あれば|ほしい(?!.*いい加減)|欲しい|改善|希望|できるように|してほしい|にしてほしい",
    r"좋겠|있으면|해\s?주면|했으면|바라요|바랍니다|개선|추가해",
    flags=re.IGNORECASE,
)
_FACT = _any(
    r"\b(?:my|our)\s+(?!god\b|goodness\b)[a-z]+",
    r"\bi\s+(?:live|work|moved|am\s+(?:a|an|from|allergic)|have\s+(?:a|an|two|three)|was\s+born|use|prefer)\b",
    r"\d",
    r"我(?:的|住|是|叫|有|要|会|想|打算|计划|在\S{0,8}(?:工作|上班|上学))|我们决定|明天|下周|周[一二三四五六日天]",
    r"私の|私は|僕の|僕は|来週|明日|\d",
    r"제\s|제가|내가|저는|나는|저의|나의|다음\s?주|내일",
    flags=re.IGNORECASE,
)


def _cue(match: re.Match[str]) -> str:
    named = [v for k, v in match.groupdict().items() if v and k.startswith("cue")]
    return (named[0] if named else match.group(0)).strip()


def _quote(body: str, match: re.Match[str], *, before: int = 10, after: int = 14) -> str:
    """The words around a cue, for the reason a refusal gives ("…会議室を予約して", "send this file…")."""
    start, end = max(0, match.start() - before), min(len(body), match.end() + after)
    if body[start:end].isascii():  # whole words only
        while start > 0 and not body[start - 1].isspace():
            start += 1
            if start >= match.start():
                start = match.start()
                break
        while end < len(body) and not body[end].isspace() and end > match.end():
            end -= 1
    quote = body[start:end].strip()
    return ("…" if start > 0 else "") + quote + ("…" if end < len(body) else "")


def _operational(body: str) -> re.Match[str] | None:
    if not body or _STANDING.search(body) or _MEMORY_REQUEST.search(body):
        return None
    if m := _EN_OPERATIONAL.search(body):
        return m
    if (m := _EN_NEGATIVE_IMPERATIVE.search(body)) and _EN_ONE_OFF.search(body):
        return m
    if m := _ZH_OPERATIONAL.search(body):
        return m
    if not _JA_NEGATIVE_REQUEST.search(body) and re.search(r"[\u3040-\u30ff]", body) \
            and (m := _JA_OPERATIONAL.search(body)):
        return m
    if not _KO_NEGATIVE_REQUEST.search(body) and re.search(r"[\uac00-\ud7a3]", body) \
            and (m := _KO_OPERATIONAL.search(body)):
        return m
    return None


def _venting(body: str) -> re.Match[str] | None:
    match = _EN_VENT.search(body) or _ZH_VENT.search(body) or _JA_VENT.search(body) or _KO_VENT.search(body)
    if match is None or _IMPROVEMENT.search(body) or _STANDING.search(body) or _MEMORY_REQUEST.search(body):
        return None
    rest = body[: match.start()] + " " + body[match.end():]
    return None if _FACT.search(rest) else match


def operational_cue(text: str) -> str | None:
    """The words that make `text` a one-off instruction, or None."""
    m = _operational(text.strip())
    return _cue(m) if m else None


def venting_cue(text: str) -> str | None:
    """The words that make `text` venting with nothing durable in it, or None."""
    m = _venting(text.strip())
    return m.group(0).strip() if m else None


def classify(text: str, *, allow_secrets: bool = False) -> Verdict:
    """Sort one would-be memory: secret, operational, venting or keep (see the module docstring).
    With `allow_secrets` a secret is no reason to refuse (it will be stored redacted); the
    other filters then judge the redacted text."""
    if not allow_secrets:
        kinds = secret_kinds(text)
        if kinds:
            what = ", ".join(kinds)
            return Verdict("secret", SECRET_REASON.format(what=what), what)
    body = (redact_secrets(text)[0] if allow_secrets else text).strip()
    if (m := _operational(body)) is not None:
        return Verdict("operational", OPERATIONAL_REASON.format(cue=_quote(body, m)), _cue(m))
    if (m := _venting(body)) is not None:
        return Verdict("venting", VENTING_REASON.format(cue=_quote(body, m)), m.group(0).strip())
    return Verdict("keep")
