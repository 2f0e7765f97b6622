"""Chinese rules of the past-question detector (traditional characters folded to simplified
for the ones the rules use)."""

from __future__ import annotations

import re

from ...patterns import lazy
from .rules import Language, Rule

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
_ZH_QUESTION = lazy(r"[?吗嘛呢]|什么|啥|哪|几|多少|谁|是不是|有没有|来着|(?<!怎)么")
_ZH_PRON = r"(?:我们|咱们|我|你们|你|您)"
_ZH_SPEECH = (
    r"(?:讨论|商量|商定|约定|决定|确定|提到|提起|提过|告诉|答应|推荐|建议|介绍|计划|安排|记录|记下|"
    r"说|讲|聊|谈|提|定|约|选|记)"
)
_ZH_PAST = (
    r"(?:之前|以前|上次|上回|曾经|刚才|刚刚|前几天|前两天|那天|昨天|昨晚|前天|上周|上星期|上礼拜|上个月|"
    r"去年|早些时候|先前|此前|当时|那时候?|一开始)"
)
_ZH_ADVICE = lazy(r"应该|应当|该|怎么|怎样|如何|要不要|能不能|可不可以|可以|最好|建议|推荐|帮我|给我|为什么|为啥")
_ZH_ADVISORY = lazy(r"应该|该|要不要|能不能|可不可以|最好")
_ZH_NOT_A_FACT = lazy(
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


LANGUAGE = Language(
    code="zh",
    prepare=_zh_prepare,
    is_question=lambda t: bool(_ZH_QUESTION.search(t)),
    guards=(lazy(r"^(?:如果|假如|假设|要是|万一|假使)"), lazy(r"(?:请|帮我)?记住[^吗?]*$")),
    rules=(
        Rule("still-remember", lazy(r"(?<!我)(?<!我们)(?<!咱们)还记得")),
        Rule(
            "remember-question",
            lazy(rf"(?<!我)(?<!我们)(?<!咱们)记得(?!要|提醒|帮|带|把|给)[^。！!]{{0,24}}?{_ZH_QWORD}"),
        ),
        Rule("laizhe", lazy(r"来着")),
        Rule("help-recall", lazy(r"回(?:忆|想)(?:一下|下)")),
        Rule(
            "previous-conversation",
            lazy(rf"{_ZH_PAST}(?:的|那次|那个)?(?:对话|聊天|谈话|会话|聊天记录|对话记录)"),
        ),
        Rule(
            "past-marker-speech",
            lazy(rf"{_ZH_PAST}[^。！!?，,]{{0,10}}?{_ZH_SPEECH}(?P<tail>好的|好|过|了|的)?"),
            check=_zh_speech_ref,
        ),
        Rule(
            "said-that-one",
            lazy(
                rf"{_ZH_PRON}(?:跟你|和你|对你|给你|跟我|和我|对我)?(?:之前|上次|上回|刚才|以前)?"
                rf"{_ZH_SPEECH}(?:过)?的(?:那|这|是)"
            ),
        ),
        Rule(
            "said-question",
            lazy(
                rf"{_ZH_PRON}(?:跟你|和你|对你|给你|跟我|和我|对我)?(?:都|也|又|还|有)?{_ZH_SPEECH}(?:过|了)"
                rf"[^。！!]{{0,20}}?{_ZH_QWORD}"
            ),
        ),
        Rule(
            "past-pronoun-question",
            lazy(
                rf"(?:{_ZH_PRON}{_ZH_PAST}|{_ZH_PAST}{_ZH_PRON})[^。！!?]{{0,12}}?(?:什么|啥|哪|几|多少|谁|怎么|吗|呢)"
            ),
            check=lambda m, t, q: not _ZH_ADVISORY.search(t),
        ),
        Rule(
            "own-thing",
            lazy(
                r"(?:我|咱们|我们)的(?P<thing>[^。！!?，,的]{1,8}?)(?:是|叫|在)?"
                r"(?:多少|什么|啥|哪(?:个|天|里|儿|一)|几(?:点|号|月|个)?|谁)"
            ),
            check=lambda m, t, q: not _ZH_NOT_A_FACT.search(m.group("thing")) and not _ZH_ADVICE.search(t),
        ),
        Rule(
            "own-fact",
            lazy(rf"(?:我|咱)[^。！!?，,]{{0,10}}?{_ZH_FACT}"),
            needs_question=True,
            check=_zh_own_fact,
        ),
    ),
)
