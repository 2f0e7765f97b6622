"""Benchmark text: LoCoMo conversations and a deterministic mixed-language message corpus.

The corpus mixes English LoCoMo turns (speaker names swapped for variety, sometimes two turns
joined), Chinese sentences from templates over a few hundred names, places, activities and
objects, some Japanese and Korean, and rare identifiers (INV-2024-00042 and friends) planted
at fixed positions so identifier queries always have a few exact answers at every size.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from pathlib import Path

from .common import LOCOMO_DIR

CORPUS_VERSION = 2  # bump when the generator changes: cached seeded stores are rebuilt

# --- LoCoMo ----------------------------------------------------------------------------

_SESSION = re.compile(r"session_(\d+)")
_EVIDENCE = re.compile(r"D:?(\d+):(\d+)")


@dataclass(frozen=True)
class Turn:
    dia_id: str
    speaker: str
    text: str  # the turn text, with `[shares …]` appended for a shared photo


@dataclass(frozen=True)
class LocomoSession:
    number: int
    when: datetime
    turns: tuple[Turn, ...]


@dataclass(frozen=True)
class Question:
    question: str
    category: int
    evidence: tuple[str, ...]  # normalised dia ids (D<n>:<i>)
    raw_evidence: tuple[str, ...]


@dataclass(frozen=True)
class Conversation:
    conv_id: str  # e.g. "conv-26"
    speaker_a: str
    speaker_b: str
    sessions: tuple[LocomoSession, ...]
    questions: tuple[Question, ...]


def turn_text(raw: dict) -> str:
    text = (raw.get("text") or "").strip()
    caption = (raw.get("blip_caption") or "").strip()
    if caption:
        text = f"{text} [shares {caption}]".strip()
    return text


def parse_locomo_time(value: str) -> datetime:
    """`1:56 pm on 8 May, 2023` -> naive local datetime."""
    return datetime.strptime(value.strip(), "%I:%M %p on %d %B, %Y")


def normalise_evidence(raw: list[str]) -> tuple[str, ...]:
    """`["D8:6; D9:17"]` -> ("D8:6", "D9:17"); `D:11:26` -> D11:26; junk ids are dropped."""
    found: list[str] = []
    for item in raw:
        for m in _EVIDENCE.finditer(str(item)):
            found.append(f"D{int(m.group(1))}:{int(m.group(2))}")
    return tuple(dict.fromkeys(found))


def load_conversation(path: Path) -> Conversation:
    data = json.loads(path.read_text(encoding="utf-8"))
    sessions = []
    for key, value in data.items():
        m = _SESSION.fullmatch(key)
        if not m or not isinstance(value, list):
            continue
        stamp = data.get(f"{key}_date_time")
        if not stamp:
            continue
        turns = tuple(Turn(t["dia_id"], t["speaker"], turn_text(t)) for t in value if turn_text(t))
        sessions.append(LocomoSession(int(m.group(1)), parse_locomo_time(stamp), turns))
    sessions.sort(key=lambda s: s.number)
    questions = tuple(
        Question(q["question"], int(q["category"]), normalise_evidence(q.get("evidence") or []),
                 tuple(str(e) for e in q.get("evidence") or []))
        for q in data.get("qa", [])
    )
    return Conversation(path.stem, data["speaker_a"], data["speaker_b"], tuple(sessions), questions)


@lru_cache(maxsize=1)
def load_locomo(directory: str | None = None) -> tuple[Conversation, ...]:
    base = Path(directory) if directory else LOCOMO_DIR
    files = sorted(base.glob("conv-*.json"), key=lambda p: int(p.stem.split("-")[1]))
    if not files:
        raise FileNotFoundError(f"no conv-*.json under {base}")
    return tuple(load_conversation(p) for p in files)


def locomo_turn_texts() -> list[str]:
    return [t.text for conv in load_locomo() for s in conv.sessions for t in s.turns]


def locomo_speaker_names() -> list[str]:
    names = {n for conv in load_locomo() for n in (conv.speaker_a, conv.speaker_b)}
    return sorted(names | {"Mel", "Jo"})


# --- vocabulary ------------------------------------------------------------------------

EN_NAMES = """Olivia Liam Emma Noah Ava Elijah Sophia Lucas Isabella Mason Mia Ethan Amelia Logan Harper
Aiden Evelyn Jacob Abigail Michael Emily Daniel Ella Henry Elizabeth Jackson Camila Sebastian Luna Jack
Sofia Owen Avery Samuel Scarlett Matthew Victoria Joseph Madison Levi Aria David Grace Wyatt Chloe Carter
Penelope Julian Riley Luke Zoey Grayson Nora Isaac Lily Lincoln Eleanor Anthony Hannah Hudson Lillian
Dylan Addison Ezra Aubrey Thomas Ellie Charles Stella Christopher Natalie Jaxon Zoe Maverick Leah Josiah
Hazel Isaiah Violet Andrew Aurora Elias Savannah Joshua Brooklyn Nathan Bella Caleb Claire Ryan Skylar
Adrian Lucy Miles Paisley Eli Everly Nolan Anna Christian Caroline Aaron Nova Cameron Genesis Ezekiel
Priya Ravi Mei Kenji Yuki Omar Fatima Diego Lucia Mateo Ingrid Lars Chiara Marco Amara Kofi""".split()

ZH_PLACES = """上海 北京 广州 深圳 杭州 南京 成都 重庆 武汉 西安 苏州 天津 长沙 青岛 厦门 昆明 大连 宁波 无锡
合肥 郑州 济南 福州 哈尔滨 沈阳 长春 南昌 贵阳 南宁 海口 三亚 拉萨 乌鲁木齐 兰州 银川 西宁 呼和浩特 太原
石家庄 珠海 东莞 佛山 香港 澳门 台北 东京 大阪 首尔 新加坡 曼谷 巴黎 伦敦 纽约 旧金山 悉尼 柏林 罗马 迪拜
温哥华 多伦多 桂林 丽江 大理 黄山 张家界 九寨沟 西湖 外滩 浦东 中关村 陆家嘴 虹桥机场 首都机场 浦东机场""".split()

ZH_NAMES = """张伟 王芳 李娜 刘洋 陈静 杨帆 赵磊 黄敏 周杰 吴婷 徐明 孙丽 马超 朱琳 胡斌 郭靖 何欣 高翔 林峰
罗晶 郑爽 梁宇 谢娜 宋佳 唐嫣 韩梅 冯涛 邓超 曹颖 彭博 曾敏 肖然 田甜 董洁 袁泉 潘虹 蒋雯 蔡明 余波 杜鹃
叶青 程琳 魏东 苏晴 吕方 丁宁 沈腾 姚晨 卢平 钟汉 老王 小李 王总 李经理 陈老师 张医生 妈妈 爸爸 姐姐 弟弟""".split()

ZH_TIMES = """今天 明天 后天 昨天 下周一 下周二 下周三 下周四 周五晚上 这个周末 下个月 月底 春节前 国庆节 元旦
早上八点 中午 下午三点 晚上七点 明年三月 五一假期 下周末 月初 周日上午 今晚""".split()

ZH_ACTS = """出差 开会 见客户 参加婚礼 看展览 旅游 面试 培训 拜访朋友 看演唱会 参加马拉松 办签证 体检 看医生
搬家 签合同 做汇报 参加发布会 爬山 露营 吃火锅 拍照 学游泳 上瑜伽课 练钢琴 听讲座 逛博物馆 看房子 装修
过生日 接孩子 开家长会 健身 骑行 钓鱼 滑雪 看电影 买菜 加班""".split()

ZH_OBJECTS = """护照 身份证 签证材料 笔记本电脑 充电器 雨伞 合同 发票 报告 机票 火车票 酒店订单 礼物 相机 药 钥匙
银行卡 简历 名片 行李箱 文件 演示文稿 预算表 会议纪要 体检报告 租房合同 保险单 驾照 耳机 眼镜 工牌 U盘
户口本 结婚证 房产证 快递 咖啡机 自行车 跑鞋 帐篷""".split()

ZH_FOOD = "火锅 烤鸭 小笼包 拉面 寿司 烧烤 川菜 粤菜 咖啡 奶茶 甜品 饺子 麻辣烫 煎饼 牛肉面 湘菜 日料 西餐".split()
ZH_WEATHER = "一直下雨 很热 特别冷 有台风 雾霾很重 挺好的 刮大风 下雪了 闷热 阴天".split()
ZH_EVENTS = "项目会议 季度汇报 团建 产品发布会 客户拜访 家长会 同学聚会 年会 生日派对 婚礼彩排 面试 体检".split()
ZH_FEEL = "太麻烦了 真开心 有点担心 累死了 挺顺利的 还没想好 希望一切顺利 感觉不错 压力很大 挺期待的".split()

ZH_TEMPLATES = (
    "{time}我要去{place}{act}，记得提醒我带{obj}。",
    "{name}说{time}在{place}{act}，问我要不要一起去。",
    "帮我记一下：{time}{act}，地点在{place}，需要准备{obj}和{obj2}。",
    "上次在{place}{act}的时候把{obj}忘在酒店了，{feel}。",
    "{name}推荐了{place}的一家{food}店，{time}想去试试。",
    "我的{obj}快过期了，{time}得去{place}办一下。",
    "{time}的{event}改到{place}了，{name}负责订{obj}。",
    "最近工作压力有点大，{time}打算和{name}去{place}{act}放松一下。",
    "{name}的{obj}找到了吗？{time}还要{act}呢。",
    "{place}的天气{weather}，{time}{act}要不要改期？",
    "好的，我已经记下了：{time}去{place}{act}，别忘了{obj}。",
    "你上次提到{name}在{place}工作，{time}的{event}她会来吗？",
    "{time}在{place}吃了{food}，{feel}。{name}也在。",
)

JA_PLACES = "東京 大阪 京都 名古屋 札幌 福岡 横浜 神戸 奈良 沖縄 仙台 広島 渋谷 新宿 箱根".split()
JA_TIMES = "明日 来週の月曜日 週末 今夜 来月 金曜日の午後 明後日 朝九時".split()
JA_ACTS = ("会議があります 出張します 友達と会います 映画を見ます 買い物に行きます 温泉に行きます 花見をします "
           "ラーメンを食べます 打ち合わせをします 面接を受けます").split()
JA_OBJECTS = "パスポート 資料 ノートパソコン チケット お土産 名刺 傘 契約書 カメラ 充電器".split()
JA_NAMES = "田中 佐藤 鈴木 高橋 渡辺 伊藤 山本 中村 小林 加藤".split()
JA_TEMPLATES = (
    "{time}は{place}で{act}。{obj}を忘れないでください。",
    "{name}さんと{time}{place}へ行く予定です。",
    "{place}の{obj}はもう準備できましたか？",
    "{time}、{place}で{name}さんと{act}。",
)

KO_PLACES = "서울 부산 인천 대구 대전 광주 제주도 수원 경주 강릉 강남 홍대".split()
KO_TIMES = ["내일", "다음 주 월요일", "주말에", "오늘 저녁", "다음 달", "금요일 오후", "모레"]
KO_ACTS = ["회의가 있어요", "출장을 가요", "친구를 만나요", "영화를 봐요", "쇼핑하러 가요", "등산을 해요",
           "여행을 가요", "면접을 봐요"]
KO_OBJECTS = "여권 서류 노트북 티켓 선물 명함 우산 계약서 카메라".split()
KO_NAMES = "민준 서연 지호 하은 도윤 지우 현우 수빈 예준 지민".split()
KO_TEMPLATES = (
    "{time} {place}에서 {act}. {obj} 챙기는 거 잊지 마세요.",
    "{name} 씨랑 {time} {place}에 가기로 했어요.",
    "{place} 출장 준비는 다 됐어요? {obj}도 챙겼어요?",
)

COMPANIES = "Acme Globex Initech Umbrella Hooli Stark Wayne Wonka Vandelay Soylent Tyrell Cyberdyne".split()
PROJECTS = "JIRA OPS CORE WEB PAY INFRA MOB DATA".split()

# Identifiers planted at fixed positions: each once in the first 10k messages, then one
# planted message every PLANT_EVERY (so INV-2024-00042 occurs ~9 times in 1M messages).
PLANTED = (
    ("INV-2024-00042", "Invoice INV-2024-00042 from Acme is overdue, please pay it before Friday."),
    ("ORD-0031337", "订单号 ORD-0031337 已发货，预计周四到上海。"),
    ("JIRA-4821", "Ticket JIRA-4821 was reopened by Priya: the login page crashes on Safari."),
    ("INV-2024-00042", "Can you find the PDF for INV-2024-00042? The auditor asked for it."),
    ("PNR-ZX81QK", "我的航班预订号是 PNR-ZX81QK，东京出发，记得帮我值机。"),
)
PLANT_EVERY = 49_999
PLANT_OFFSET = 777
PLANT_FIRST = tuple(PLANT_OFFSET + 1_999 * k for k in range(len(PLANTED)))


def is_planted(i: int) -> bool:
    return i in PLANT_FIRST or i % PLANT_EVERY == PLANT_OFFSET


def planted_identifiers(total: int) -> set[str]:
    """Identifiers of PLANTED that occur in the first `total` messages."""
    count = sum(1 for i in range(total) if is_planted(i))
    return {PLANTED[k % len(PLANTED)][0] for k in range(count)}


class CorpusGenerator:
    """Deterministic message stream: `messages(n)` yields n texts (same n, same texts)."""

    def __init__(self, seed: int = 20240508):
        self.seed = seed
        self.turns = locomo_turn_texts()
        names = locomo_speaker_names()
        alternatives = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
        self._name_re = re.compile(r"\b(" + alternatives + r")\b")

    def english(self, rng: random.Random) -> str:
        text = rng.choice(self.turns)
        if rng.random() < 0.3:
            text = text + " " + rng.choice(self.turns)
        return self._name_re.sub(lambda _m: rng.choice(EN_NAMES), text)

    @staticmethod
    def chinese(rng: random.Random) -> str:
        c = rng.choice
        text = c(ZH_TEMPLATES).format(time=c(ZH_TIMES), place=c(ZH_PLACES), act=c(ZH_ACTS), obj=c(ZH_OBJECTS),
                                      obj2=c(ZH_OBJECTS), name=c(ZH_NAMES), food=c(ZH_FOOD), weather=c(ZH_WEATHER),
                                      event=c(ZH_EVENTS), feel=c(ZH_FEEL))
        if rng.random() < 0.25:  # some messages carry two sentences
            text += c(ZH_TEMPLATES).format(time=c(ZH_TIMES), place=c(ZH_PLACES), act=c(ZH_ACTS), obj=c(ZH_OBJECTS),
                                           obj2=c(ZH_OBJECTS), name=c(ZH_NAMES), food=c(ZH_FOOD),
                                           weather=c(ZH_WEATHER), event=c(ZH_EVENTS), feel=c(ZH_FEEL))
        return text

    @staticmethod
    def japanese(rng: random.Random) -> str:
        c = rng.choice
        return c(JA_TEMPLATES).format(time=c(JA_TIMES), place=c(JA_PLACES), act=c(JA_ACTS), obj=c(JA_OBJECTS),
                                      name=c(JA_NAMES))

    @staticmethod
    def korean(rng: random.Random) -> str:
        c = rng.choice
        return c(KO_TEMPLATES).format(time=c(KO_TIMES), place=c(KO_PLACES), act=c(KO_ACTS), obj=c(KO_OBJECTS),
                                      name=c(KO_NAMES))

    @staticmethod
    def identifier(rng: random.Random) -> str:
        kind = rng.randrange(4)
        if kind == 0:
            return (f"Invoice INV-{rng.randint(2022, 2025)}-{rng.randrange(100000):05d} from {rng.choice(COMPANIES)} "
                    f"for ${rng.randint(20, 9000)}.{rng.randrange(100):02d} is due on the {rng.randint(1, 28)}th.")
        if kind == 1:
            order = f"ORD-{rng.randrange(10_000_000):07d}"
            return f"订单号 {order} 已发货，预计{rng.choice(ZH_TIMES)}到{rng.choice(ZH_PLACES)}。"
        if kind == 2:
            return (f"Ticket {rng.choice(PROJECTS)}-{rng.randint(100, 99999)} assigned to {rng.choice(EN_NAMES)}: "
                    f"build {rng.randint(1, 9)}.{rng.randint(0, 30)}.{rng.randint(0, 99)} fails on staging.")
        code = "".join(rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ23456789") for _ in range(6))
        return (f"Booking reference {code} for the hotel in {rng.choice(ZH_PLACES)} "
                f"(confirmation {rng.randrange(10**9):09d}).")

    def message(self, rng: random.Random) -> str:
        r = rng.random()
        if r < 0.60:
            return self.english(rng)
        if r < 0.85:
            return self.chinese(rng)
        if r < 0.90:
            return self.japanese(rng)
        if r < 0.95:
            return self.korean(rng)
        return self.identifier(rng)

    def messages(self, n: int) -> Iterator[str]:
        rng = random.Random(self.seed)
        planted = 0
        for i in range(n):
            text = self.message(rng)
            if is_planted(i):
                text = PLANTED[planted % len(PLANTED)][1]
                planted += 1
            yield text


def append_mix(n: int, seed: int = 7) -> list[str]:
    """n messages for the append benchmark: alternately English (LoCoMo) and Chinese."""
    gen = CorpusGenerator(seed)
    rng = random.Random(seed)
    return [gen.english(rng) if i % 2 == 0 else gen.chinese(rng) for i in range(n)]


# --- queries ---------------------------------------------------------------------------

EN_KEYWORDS = (
    "pottery", "adoption", "camping trip", "sunset painting", "guitar", "marathon", "LGBTQ support group",
    "dog", "animal shelter", "Paris", "book", "violin", "hiking", "basketball", "job interview",
    "birthday party", "charity race", "beach", "video game tournament", "recipe", "yoga", "concert",
    "museum", "road trip", "puppy", "car accident", "painting class", "swimming", "photography", "dance studio",
)

CJK_KEYWORDS = (
    "上海", "护照", "出差", "北京", "签证", "会议", "火锅", "体检", "生日", "周末", "机场", "报告", "咖啡", "深圳",
    "杭州", "发票", "外滩", "婚礼", "搬家", "驾照",
    "東京", "出張", "温泉", "パスポート", "名刺",
    "서울", "회의", "출장", "여권", "부산",
)

IDENT_QUERIES = ("INV-2024-00042", "ORD-0031337", "JIRA-4821", "PNR-ZX81QK", "发票 INV-2024-00042")


def nl_questions(count: int) -> list[str]:
    """`count` LoCoMo questions (categories 1-4), spread evenly over all conversations."""
    pool = [q.question for conv in load_locomo() for q in conv.questions if q.category in (1, 2, 3, 4)]
    if count >= len(pool):
        return pool
    step = len(pool) / count
    return [pool[int(i * step)] for i in range(count)]


# --- queries sampled from the stored messages --------------------------------------------

SAMPLE_FROM = 10_000  # sampled from the first messages of the stream: present at every seeded size
_EN_WORD = re.compile(r"[A-Za-z][A-Za-z']*")
_CJK_RUN = re.compile(r"[\u4e00-\u9fff]+")
_IDENT = re.compile(r"INV-\d{4}-\d{5}|ORD-\d{7}|\b(?:JIRA|OPS|CORE|WEB|PAY|INFRA|MOB|DATA)-\d+"
                    r"|(?<=reference )[A-Z0-9]{6}|(?<=confirmation )\d{9}")


def sampled_queries(count: int = 30, seed: int = 15) -> dict[str, list[str]]:
    """Keyword queries drawn from what the corpus says, not from a list of rare nouns.

    English: 1-3 consecutive words at a random position of a random English message (so common
    conversation words such as "really", "time" or "kids" come up as often as people use them;
    runs of stop words only are skipped: they search nothing). Chinese: one jieba word of 2-4
    characters, or two adjacent ones of 2+ characters that fit in 4, from a random Chinese message
    (function words only, such as 一下, are skipped too). Identifiers:
    an invoice, order, ticket, booking code or confirmation number from a random identifier
    message. Deterministic for a given `count` and `seed`.
    """
    import jieba

    from clawkeep.text import stopwords
    from clawkeep.text.query import parse_query

    jieba.setLogLevel(60)
    rng = random.Random(seed)
    english, chinese, idents = [], [], []
    for text in CorpusGenerator().messages(SAMPLE_FROM):
        if _IDENT.search(text):
            idents.append(text)
        elif _CJK_RUN.search(text) and not re.search(r"[\u3040-\u30ff\uac00-\ud7ff]", text):
            chinese.append(text)
        elif text.isascii():
            english.append(text)
    out: dict[str, list[str]] = {"en": [], "zh": [], "ident": []}
    while len(out["en"]) < count:
        words = _EN_WORD.findall(rng.choice(english))
        if not words:
            continue
        start = rng.randrange(len(words))
        run = words[start:start + rng.randint(1, 3)]
        if all(w.lower().replace("'", "") in stopwords.ENGLISH for w in run):
            continue
        query = " ".join(run)
        if query not in out["en"]:
            out["en"].append(query)
    while len(out["zh"]) < count:
        runs = _CJK_RUN.findall(rng.choice(chinese))
        words = [w for w in jieba.lcut(rng.choice(runs)) if w.strip()]
        start = rng.randrange(len(words))
        query = words[start]
        after = words[start + 1] if start + 1 < len(words) else ""
        if min(len(query), len(after)) >= 2 and len(query) + len(after) <= 4 and rng.random() < 0.5:
            query += after
        if 2 <= len(query) <= 4 and query not in out["zh"] and parse_query(query) is not None:
            out["zh"].append(query)
    while len(out["ident"]) < count:
        found = _IDENT.findall(rng.choice(idents))
        query = rng.choice(found)
        if query not in out["ident"]:
            out["ident"].append(query)
    return out
