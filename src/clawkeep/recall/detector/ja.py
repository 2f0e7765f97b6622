"""Japanese rules of the past-question detector."""

from __future__ import annotations

import re

from ...patterns import lazy
from .rules import Language, Rule

_JA_QUESTION = lazy(
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
_JA_NOT_A_FACT = lazy(r"コード|プログラム|バグ|エラー|問題|間違い|意味|方法|ファイル|パソコン|画面|気持ち|せい")
_JA_FACT_Q = r"(?:[?]|は$|何|なに|なん|いつ|どこ|誰|だれ|どれ|いくつ|何時|ですか|でしたか|だっけ|だった|って$)"
_JA_PLAN_CMD = lazy(r"立て|組ん|作っ|考え|決め(?:て|よう|ましょう)|入れ|追加|調整|変更")
_JA_TIME = r"(?:明日|あした|あす|明後日|来週|今週|今日|週末|来月|今月|今夜|今晩|午後|午前|[月火水木金土日]曜(?:日)?)"


def _ja_reference_or_question(m: re.Match[str], text: str, question: bool) -> bool:
    """話した件 (attributive) refers back; 話した。 (sentence-final) is a statement unless asked."""
    if question:
        return True
    rest = text[m.end() :]
    return bool(rest) and rest[0] not in "。.!！、,…~〜" and not rest.startswith(("よ", "ね", "し", "けど", "から"))


_JA_SELF_TOPIC_AT_END = lazy(rf"{_JA_SELF}(?:は|も)[^。]*$")


def _ja_remembers(m: re.Match[str], text: str, question: bool) -> bool:
    before = text[: m.start()]
    if _JA_SELF_TOPIC_AT_END.search(before):
        return False  # 私はちゃんと覚えてる (a statement about oneself)
    rest = text[m.end() :]
    return question or not rest or rest[0] in "?。!…~〜 "


LANGUAGE = Language(
    code="ja",
    prepare=lambda t: t,
    is_question=lambda t: bool(_JA_QUESTION.search(t)),
    guards=(lazy(r"^(?:もし|仮に|もしも)"),),
    rules=(
        Rule(
            "remember-question",
            lazy(
                r"覚えて(?:る|ます|いる|います|いますか|ない|ません|た|らっしゃいますか)(?!ように|状態|ことに|ままに)"
            ),
            check=_ja_remembers,
        ),
        Rule("forgot-question", lazy(r"忘れ(?:た|ちゃった|てる|てない|ました)(?:の|んですか|ですか)?[?]")),
        Rule("kke", lazy(r"(?:た|だ)っけ|っけ[?。!]*$")),
        Rule(
            "previous-conversation", lazy(rf"{_JA_ANCHOR}の?(?:会話|チャット|やり取り|やりとり|打ち合わせ|相談)")
        ),
        Rule(
            "anchor-speech",
            lazy(rf"{_JA_ANCHOR}[^。!?]{{0,24}}?{_JA_VERB}(?![いくが])"),
            check=_ja_reference_or_question,
        ),
        Rule(
            "what-did-i-say",
            lazy(r"(?:何|なん|なに)(?:て|って|と)言(?:った|ってた|っていた|いました|ってました)"),
        ),
        Rule(
            "self-speech",
            lazy(rf"(?:{_JA_SELF}|{_JA_YOU})(?:が|は|、)?[^。!?]{{0,12}}?{_JA_VERB}(?![いくが])"),
            check=_ja_reference_or_question,
        ),
        Rule(
            "was-it",
            lazy(
                r"(?:何|なん|なに|いつ|どこ|誰|だれ|どれ|どっち|どちら|いくら)[^。!?]{0,8}?だった(?:かな|かしら|け)"
            ),
        ),
        Rule(
            "do-you-know-mine",
            lazy(rf"{_JA_SELF}(?:が|の|って|は)[^。!?]{{0,16}}?知って(?:る|ます|いる|います)(?:か|の)?[?]"),
        ),
        Rule(
            "own-thing",
            lazy(
                rf"{_JA_SELF}の(?P<thing>[^。!?、]{{1,10}}?)(?:は|って)"
                r"(?:何|なん|なに|いつ|どこ|誰|だれ|どれ|いくつ|何番|何時|何日|何曜)"
            ),
            check=lambda m, t, q: not _JA_NOT_A_FACT.search(m.group("thing")),
        ),
        Rule(
            "own-whereabouts",
            lazy(rf"{_JA_SELF}(?:が|は|って|、)?どこ(?:に|で)(?:住|働|勤め)"),
        ),
        Rule(
            "own-fact",
            lazy(rf"{_JA_SELF}の[^。!?]{{0,10}}?{_JA_FACT}[^。!]{{0,12}}?{_JA_FACT_Q}"),
            check=lambda m, t, q: not _JA_PLAN_CMD.search(t),
        ),
        Rule(
            "own-schedule",
            lazy(
                rf"{_JA_TIME}の?(?:{_JA_SELF}の)?(?:予定|スケジュール)(?:は|って)?"
                r"(?:[?]|何|なに|なん|どう(?:なって)|ある|あった|ありますか|教えて|$)"
            ),
            check=lambda m, t, q: not _JA_PLAN_CMD.search(t),
        ),
    ),
)
