"""S5 prototype: CJK index schemes and LoCoMo retrieval with SQLite FTS5 + clawkeep.text.

Run: python bench/locomo_fts_proto.py [--scale ROWS] [--skip-cjk] [--skip-locomo]

Part 1 compares CJK index schemes on a small hand-written zh/ja/ko corpus: fragment recall
(every substring of 2-4 characters, and hand-picked keywords), false hits (results that do
not contain the fragment), index size and analysis throughput.
Part 2 runs the LoCoMo protocol (/work/shared/eval/locomo/README.md): one document per turn
(`Speaker: text [shares <caption>]`), retrieval inside each conversation, recall@5/@10 per
category for questions of categories 1-4 with evidence, plus query latency.
`--scale N` replicates the LoCoMo turns to N rows in one table to time queries at size.
"""

from __future__ import annotations

import argparse
import glob
import itertools
import json
import os
import random
import re
import sqlite3
import statistics
import sys
import time
import unicodedata
from collections import defaultdict

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))

from clawkeep.storage import TextQuery  # noqa: E402
from clawkeep.storage.sqlite.fts import match_expression  # noqa: E402
from clawkeep.storage.sqlite.fts import vocab_doc_freq as fts5_doc_freq  # noqa: E402
from clawkeep.text.analyzer import analyze_document, parse_query, rerank  # noqa: E402


def match_of(query):
    """The FTS5 MATCH expression the SQLite store renders for these terms."""
    return match_expression(TextQuery.of(query.terms))


def build_match_query(text):
    parsed = parse_query(text)
    return match_of(parsed.select()) if parsed else None
from clawkeep.text.tokens import CJK_RUN  # noqa: E402

LOCOMO = "/work/shared/eval/locomo"
TOKENIZE = "tokenize = 'unicode61 remove_diacritics 2'"
CANDIDATES = 100  # bm25 rows handed to the Python rerank

# --- Part 1: CJK schemes ---------------------------------------------------------------

ZH = [
    "下周二我去上海出差，记得提醒我带护照",
    "我们明天下午三点在会议室开会讨论预算",
    "她上个月搬到了北京，新公司离地铁站很近",
    "海上的风很大，渔船今天都没有出海",
    "请把合同的最终版本发到我的邮箱",
    "周末我想去爬山，天气预报说会下雨",
    "这个接口的返回值有时候是空的，需要排查一下",
    "我的猫叫小白，它特别喜欢晒太阳",
    "服务器昨天晚上宕机了两个小时，原因是磁盘满了",
    "春节的时候我们全家一起去了广州看外婆",
    "医生建议我每天多喝水，少吃辣的东西",
    "项目上线时间推迟到下个月十五号",
    "他的生日是十月八号，我们准备给他一个惊喜",
    "这家餐厅的北京烤鸭很好吃，但是要排队",
    "我忘了密码，能帮我重置一下账户吗",
    "孩子们在公园里放风筝，玩得很开心",
    "上海的房价太高了，我们考虑在苏州买房",
    "明年我打算学习日语，然后去日本旅游",
    "数据库迁移脚本已经写好了，今晚执行",
    "她在大学里学的是心理学，现在做心理咨询",
    "这周的周报还没写完，老板在催了",
    "我的航班改签到周五早上八点",
    "图书馆周一闭馆，别白跑一趟",
    "新来的同事是从深圳分公司调过来的",
    "海边的日出特别美，我拍了很多照片",
]
JA = [
    "来週東京に行きます",
    "明日の会議は十時から",
    "新しいプロジェクトの締め切りは金曜日です",
    "昨日は雨だったので、家で映画を見ました",
    "京都の紅葉はとてもきれいでした",
    "パスワードを忘れたので、リセットしてください",
    "週末に友達とラーメンを食べに行った",
    "サーバーのログにエラーが出ています",
    "大阪出張のホテルを予約しました",
    "子供の誕生日ケーキを注文しなければならない",
    "日本語の勉強を毎日三十分しています",
    "東京駅で待ち合わせしましょう",
]
KO = [
    "다음주에 서울에 가요",
    "내일 회의가 있어요",
    "어제 친구랑 영화를 봤어요",
    "부산 출장 때문에 호텔을 예약했어요",
    "비밀번호를 잊어버렸어요",
    "주말에 등산하러 갈 거예요",
    "서버 로그에 오류가 있어요",
    "회의실은 삼층에 있습니다",
    "생일 선물로 책을 받았어요",
    "서울역에서 만나요",
    "한국어 공부를 매일 하고 있어요",
]
KEYWORDS = {  # hand-picked words a user would search for
    "zh": """
        上海 护照 出差 周二 下周 提醒 会议室 预算 北京 地铁站 海上 渔船 合同 邮箱 爬山 天气预报 接口 返回值
        小白 晒太阳 服务器 宕机 磁盘 春节 广州 外婆 医生 喝水 上线 生日 惊喜 烤鸭 密码 重置 账户 风筝 房价
        苏州 日语 日本 数据库 迁移 心理学 咨询 周报 老板 航班 改签 图书馆 同事 深圳 分公司 日出 照片
    """.split(),
    "ja": """
        東京 会議 十時 プロジェクト 締め切り 金曜日 映画 京都 紅葉 パスワード リセット ラーメン サーバー ログ
        エラー 大阪 出張 ホテル 予約 誕生日 ケーキ 注文 日本語 勉強 東京駅
    """.split(),
    "ko": """
        서울 회의 친구 영화 부산 출장 호텔 예약 비밀번호 주말 등산 서버 로그 오류 회의실 생일 선물 서울역
        한국어 공부
    """.split(),
}


def _nfkc(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


def _scheme_bigram():
    """Chosen scheme: overlapping bigrams + tail unigram; query = quoted phrase."""
    return analyze_document, lambda frag: build_match_query(f'"{frag}"')


def _scheme_unigram():
    """Every CJK character a token; query = phrase of characters."""

    def doc(text: str) -> str:
        return " ".join(" ".join(run) for run in CJK_RUN.findall(_nfkc(text)))

    return doc, lambda frag: '"' + " ".join(frag) + '"'


def _scheme_jieba():
    """jieba search-mode words (Chinese dictionary; ja/ko fall back to jieba's HMM)."""
    import jieba

    def doc(text: str) -> str:
        return " ".join(w for w in jieba.lcut_for_search(_nfkc(text)) if CJK_RUN.fullmatch(w))

    return doc, lambda frag: '"' + " ".join(jieba.lcut(_nfkc(frag))) + '"'


def _scheme_raw():
    """OpenClaw: the raw text into unicode61 (a whole CJK run is one token)."""
    return (lambda text: text), (lambda frag: f'"{frag}"')


SCHEMES = {
    "bigram+tail (chosen)": _scheme_bigram,
    "unigram": _scheme_unigram,
    "jieba search-mode": _scheme_jieba,
    "raw unicode61": _scheme_raw,
}


def _fragments(docs: list[str]) -> list[str]:
    frags = set()
    for text in docs:
        for run in CJK_RUN.findall(_nfkc(text)):
            for n in (2, 3, 4):
                frags.update(run[i : i + n] for i in range(len(run) - n + 1))
    return sorted(frags)


def _reversed_pairs(docs: list[str]) -> list[str]:
    """Bigrams whose reverse occurs but which never occur themselves (e.g. 海上 vs 上海)."""
    joined = "\n".join(_nfkc(d) for d in docs)
    pairs = {f[::-1] for f in _fragments(docs) if len(f) == 2}
    return sorted(p for p in pairs if p not in joined)


def _eval_scheme(name: str, factory, docs: list[str], keywords: list[str]) -> dict:
    doc_fn, query_fn = factory()
    conn = sqlite3.connect(":memory:")
    conn.execute(f"CREATE VIRTUAL TABLE f USING fts5(t, {TOKENIZE})")
    conn.executemany("INSERT INTO f(rowid, t) VALUES (?, ?)", [(i, doc_fn(d)) for i, d in enumerate(docs)])
    norm = [_nfkc(d) for d in docs]

    def run(frags: list[str]) -> tuple[float, int, int]:
        found = false_hits = returned = 0
        for frag in frags:
            rows = {r for (r,) in conn.execute("SELECT rowid FROM f WHERE f MATCH ?", (query_fn(frag),))}
            truth = {i for i, d in enumerate(norm) if frag in d}
            found += bool(truth) and truth <= rows
            false_hits += len(rows - truth)
            returned += len(rows)
        return found / len(frags), false_hits, returned

    frag_recall, frag_false, frag_ret = run(_fragments(docs))
    kw_recall, kw_false, _ = run(keywords)
    _, rev_false, _ = run(_reversed_pairs(docs))
    return {
        "scheme": name,
        "frag_recall": frag_recall,
        "frag_false": frag_false,
        "frag_ret": frag_ret,
        "kw_recall": kw_recall,
        "kw_false": kw_false,
        "rev_false": rev_false,
    }


def _size_and_speed(factory, docs: list[str], rows: int = 20000) -> tuple[float, float, int]:
    """Analysis throughput (docs/s), tokens per CJK character and index bytes for `rows` docs."""
    doc_fn, _ = factory()
    rng = random.Random(7)
    corpus = [" ".join(rng.sample(docs, 3)) for _ in range(rows)]
    start = time.perf_counter()
    analysed = [doc_fn(d) for d in corpus]
    speed = rows / (time.perf_counter() - start)
    cjk_chars = sum(len(r) for d in corpus for r in CJK_RUN.findall(d))
    tokens = sum(len(a.split()) for a in analysed)
    conn = sqlite3.connect(":memory:")
    conn.execute(f"CREATE VIRTUAL TABLE f USING fts5(t, {TOKENIZE})")
    conn.executemany("INSERT INTO f(t) VALUES (?)", [(a,) for a in analysed])
    conn.execute("INSERT INTO f(f) VALUES ('optimize')")
    size = conn.execute("SELECT sum(length(block)) FROM f_data").fetchone()[0]
    return speed, tokens / cjk_chars, size


def _synthetic_chinese(rows: int) -> tuple[list[str], list[str]]:
    """Documents drawn from jieba's dictionary word frequencies (a unigram language model),
    and the dictionary words themselves for queries. Realistic character/bigram frequencies
    without shipping a Chinese corpus."""
    import jieba

    words, weights = [], []
    with open(os.path.join(os.path.dirname(jieba.__file__), "dict.txt"), encoding="utf-8") as fh:
        for line in fh:
            word, freq, _ = line.split(" ")
            if CJK_RUN.fullmatch(word):
                words.append(word)
                weights.append(int(freq))
    rng = random.Random(11)
    cumulative = list(itertools.accumulate(weights))  # choices() would re-sum 350k weights per call
    docs = []
    for _ in range(rows):
        picked = rng.choices(words, cum_weights=cumulative, k=rng.randint(6, 20))
        docs.append("".join(w + ("，" if rng.random() < 0.15 else "") for w in picked))
    return docs, words


def part_cjk_scale(rows: int = 50000) -> None:
    """Query latency and size of the bigram vs unigram index over synthetic Chinese."""
    docs, words = _synthetic_chinese(rows)
    rng = random.Random(5)
    joined = "\n".join(docs[:5000])
    queries = {n: [w for w in rng.sample(words, 4000) if len(w) == n and w in joined][:40] for n in (2, 4)}
    queries[1] = rng.sample(sorted({ch for d in docs[:200] for ch in d if CJK_RUN.fullmatch(ch)}), 40)
    print(f"{'scheme':22} {'build s':>8} {'MB':>6}  bm25 top-10 p50 ms: 1 char / 2 chars / 4 chars")
    for name in ("bigram+tail (chosen)", "unigram"):
        doc_fn, _ = SCHEMES[name]()
        conn = sqlite3.connect(":memory:")
        conn.execute(f"CREATE VIRTUAL TABLE f USING fts5(t, {TOKENIZE})")
        t0 = time.perf_counter()
        conn.executemany("INSERT INTO f(t) VALUES (?)", ((doc_fn(d),) for d in docs))
        conn.execute("INSERT INTO f(f) VALUES ('optimize')")
        build = time.perf_counter() - t0
        size = conn.execute("SELECT sum(length(block)) FROM f_data").fetchone()[0] / 1e6
        lat = []
        for n in (1, 2, 4):
            times = []
            for w in queries[n]:
                match = build_match_query(f'"{w}"') if name.startswith("bigram") else '"' + " ".join(w) + '"'
                t1 = time.perf_counter()
                conn.execute("SELECT rowid FROM f WHERE f MATCH ? ORDER BY rank LIMIT 10", (match,)).fetchall()
                times.append((time.perf_counter() - t1) * 1000)
            lat.append(statistics.median(times))
        print(f"{name:22} {build:8.1f} {size:6.1f}  {lat[0]:.2f} / {lat[1]:.2f} / {lat[2]:.2f}")
        conn.close()
    print()


def part_cjk() -> None:
    print(f"== Part 1: CJK index schemes (zh {len(ZH)}, ja {len(JA)}, ko {len(KO)} sentences) ==")
    header = f"{'scheme':22} {'lang':4} {'frag r':>7} {'false/ret':>11} {'kw r':>6} {'kw false':>8} {'rev false':>9}"
    print(header)
    for lang, docs in (("zh", ZH), ("ja", JA), ("ko", KO)):
        for name, factory in SCHEMES.items():
            r = _eval_scheme(name, factory, docs, KEYWORDS[lang])
            print(
                f"{name:22} {lang:4} {r['frag_recall']:7.3f} {r['frag_false']:>5}/{r['frag_ret']:<5} "
                f"{r['kw_recall']:6.3f} {r['kw_false']:8d} {r['rev_false']:9d}"
            )
    print(f"\n{'scheme':22} {'docs/s':>8} {'tok/CJK char':>12} {'index bytes (20k docs)':>24}")
    for name, factory in SCHEMES.items():
        speed, per_char, size = _size_and_speed(factory, ZH + JA + KO)
        print(f"{name:22} {speed:8.0f} {per_char:12.2f} {size:24,d}")
    print()
    part_cjk_scale()


# --- Part 2: LoCoMo ----------------------------------------------------------------------


def load_locomo() -> list[dict]:
    convs = []
    for path in sorted(glob.glob(os.path.join(LOCOMO, "conv-*.json"))):
        data = json.load(open(path))
        turns = []
        for key, value in data.items():
            if re.fullmatch(r"session_\d+", key) and isinstance(value, list):
                for t in value:
                    text = f"{t['speaker']}: {t['text']}"
                    if t.get("blip_caption"):
                        text += f" [shares {t['blip_caption']}]"
                    turns.append((t["dia_id"], text))
        qa = [q for q in data["qa"] if q.get("category") in (1, 2, 3, 4) and q.get("evidence")]
        convs.append({"name": os.path.basename(path)[:-5], "turns": turns, "qa": qa})
    return convs


def _raw_or_query(question: str) -> str | None:
    words = re.findall(r"\w+", question.lower())
    return " OR ".join(f'"{w}"' for w in dict.fromkeys(words)) or None


class Index:
    def __init__(self, conn: sqlite3.Connection, name: str, docs: list[str], analyse: bool):
        self.conn, self.name = conn, name
        conn.execute(f"CREATE VIRTUAL TABLE {name} USING fts5(tokens, {TOKENIZE})")
        conn.execute(f"CREATE VIRTUAL TABLE {name}_v USING fts5vocab({name}, 'row')")
        rows = [(i, analyze_document(d) if analyse else d) for i, d in enumerate(docs)]
        conn.executemany(f"INSERT INTO {name}(rowid, tokens) VALUES (?, ?)", rows)
        self.total = len(docs)
        self.df = fts5_doc_freq(conn, f"{name}_v")

    def top(self, match: str, limit: int) -> list[tuple[int, str, float]]:
        sql = f"SELECT rowid, tokens, rank FROM {self.name} WHERE {self.name} MATCH ? ORDER BY rank LIMIT ?"
        return self.conn.execute(sql, (match, limit)).fetchall()


def search(index: Index, question: str, method: str, k: int = 10) -> list[int]:
    if method == "raw-or":
        match = _raw_or_query(question)
        return [r[0] for r in index.top(match, k)] if match else []
    parsed = parse_query(question)
    if parsed is None:
        return []
    if method == "all-terms":
        return [r[0] for r in index.top(match_of(parsed), k)]
    query = parsed.select(index.df, index.total)
    if method == "pruned":
        return [r[0] for r in index.top(match_of(query), k)]
    rows = index.top(match_of(query), CANDIDATES)
    ranked = rerank(rows, query, tokens=lambda r: r[1], rank=lambda r: r[2])
    return [r[0] for r in ranked[:k]]


METHODS = {
    "raw-or": "raw text, OR of all question words (baseline)",
    "all-terms": "analyzer, OR of all non-stop terms",
    "pruned": "analyzer, <=6 rarest terms via fts5vocab df",
    "pruned+rerank": "pruned + coverage/exact rerank of top 100",
}


def part_locomo() -> None:
    convs = load_locomo()
    conn = sqlite3.connect(":memory:")
    indexes = {}
    start = time.perf_counter()
    for c in convs:
        indexes[c["name"]] = (
            Index(conn, "raw_" + c["name"].replace("-", "_"), [t[1] for t in c["turns"]], False),
            Index(conn, "fts_" + c["name"].replace("-", "_"), [t[1] for t in c["turns"]], True),
        )
    n_turns = sum(len(c["turns"]) for c in convs)
    print(
        f"== Part 2: LoCoMo, {len(convs)} conversations, {n_turns} turns, "
        f"{sum(len(c['qa']) for c in convs)} questions (indexing both tables: "
        f"{time.perf_counter() - start:.2f} s) =="
    )
    print(f"{'method':15} {'cat':>4} {'n':>5} {'r@5':>6} {'r@10':>6}   p50/p95 ms per query")
    for method, label in METHODS.items():
        per_cat: dict[int, list[tuple[float, float]]] = defaultdict(list)
        times = []
        for c in convs:
            raw, fts = indexes[c["name"]]
            index = raw if method == "raw-or" else fts
            ids = [t[0] for t in c["turns"]]
            for q in c["qa"]:
                t0 = time.perf_counter()
                hits = search(index, q["question"], method)
                times.append((time.perf_counter() - t0) * 1000)
                got = [ids[h] for h in hits]
                ev = set(q["evidence"])
                per_cat[q["category"]].append((len(ev & set(got[:5])) / len(ev), len(ev & set(got[:10])) / len(ev)))
        _print_method(method, label, per_cat, times)


def _print_method(method: str, label: str, per_cat: dict, times: list[float]) -> None:
    rows = sorted(per_cat.items()) + [("all", [x for v in per_cat.values() for x in v])]
    times.sort()
    lat = f"{statistics.median(times):.2f}/{times[int(len(times) * 0.95)]:.2f}"
    for cat, vals in rows:
        r5 = sum(v[0] for v in vals) / len(vals)
        r10 = sum(v[1] for v in vals) / len(vals)
        tail = f"   {lat}  ({label})" if cat == "all" else ""
        print(f"{method:15} {cat!s:>4} {len(vals):5d} {r5:6.3f} {r10:6.3f}{tail}")


def part_scale(rows: int) -> None:
    """Replicate LoCoMo turns to `rows` documents in one table and time queries (file DB)."""
    convs = load_locomo()
    docs = [t[1] for c in convs for t in c["turns"]]
    questions = [q["question"] for c in convs for q in c["qa"]]
    path = f"/tmp/clawkeep_s5_scale_{os.getpid()}.db"
    conn = sqlite3.connect(path)
    try:
        t0 = time.perf_counter()
        analysed = [analyze_document(d) for d in docs]
        conn.execute(f"CREATE VIRTUAL TABLE big USING fts5(tokens, {TOKENIZE})")
        conn.execute("CREATE VIRTUAL TABLE big_v USING fts5vocab(big, 'row')")
        with conn:
            conn.executemany("INSERT INTO big(tokens) VALUES (?)", ((analysed[i % len(docs)],) for i in range(rows)))
        conn.execute("INSERT INTO big(big) VALUES ('optimize')")
        conn.commit()
        print(
            f"== Part 3: {rows:,} rows (LoCoMo turns replicated), built in {time.perf_counter() - t0:.1f} s, "
            f"{os.path.getsize(path) / 1e6:.1f} MB =="
        )
        index = Index.__new__(Index)
        index.conn, index.name, index.total, index.df = conn, "big", rows, fts5_doc_freq(conn, "big_v")
        sample = random.Random(3).sample(questions, 150)
        for method in ("raw-or", "all-terms", "pruned", "pruned+rerank"):
            times = []
            for q in sample:
                t1 = time.perf_counter()
                if method == "raw-or":  # same text, so the raw OR runs over analysed tokens
                    match = _raw_or_query(q)
                    index.top(match, 10) if match else None
                else:
                    search(index, q, method)
                times.append((time.perf_counter() - t1) * 1000)
            times.sort()
            print(f"{method:15} p50 {statistics.median(times):7.2f} ms  p95 {times[int(len(times) * 0.95)]:7.2f} ms")
    finally:
        conn.close()
        os.remove(path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=int, default=0, help="also time queries over this many rows")
    ap.add_argument("--skip-cjk", action="store_true")
    ap.add_argument("--skip-locomo", action="store_true")
    args = ap.parse_args()
    if not args.skip_cjk:
        part_cjk()
    if not args.skip_locomo:
        part_locomo()
    if args.scale:
        part_scale(args.scale)


if __name__ == "__main__":
    main()
