"""Active Memory latency per turn (A2, A3, A5) and compaction without a model (C1).

    python bench/recall_perf.py [--quick] [--calls N] [--fresh] [--no-write]
    python -m bench --only recall          # the same, as a section of bench/results/latest.md

1. Recall. One agent home is seeded once and cached under `.bench-data/recall-perf-*`:
   - the workspace gets real Markdown files — a MEMORY.md of curated items (some with
     `<!-- trigger: … -->` phrases, some superseded, expired or untrusted), dated daily notes
     `memory/YYYY-MM-DD.md` and session excerpts `memory/YYYY-MM-DD-HHMM.md` — until the
     chunker (same settings as the index) says they make the target number of chunks; they
     are then indexed through `Engine.memory_index()` with embedding provider "none";
   - the transcript store gets the target number of DM messages (dmScope `main`, so
     rememberAcrossConversations is on): the main session, dashboard threads and stale
     per-peer direct rows, plus some group/cron/sub-agent traffic that recall must skip.
     Sessions are inserted with `store.insert_session`, messages with `transcript.append`
     inside `store.transaction()` in batches of 2,000 (same rows, same FTS index text as a
     live append).
   Latency is `clawkeep.recall.service.recall(rt, text, "agent:main:main", model=None)`,
   warm (each message once as warm-up, then the timed calls), for (a) messages that hit a
   trusted MEMORY.md entry (lane 1 ends the step), (b) past questions with no lane-1 hit
   (deterministic lane 2: memory_search + the other DM transcripts), (c) ordinary messages
   (lane-1 miss, no recall intent: what every turn pays). Baselines in the same run: a bare
   read + parse of MEMORY.md, and raw FTS5 queries (same MATCH strings the engine builds,
   `ORDER BY rank LIMIT 50`) on the same transcript and memory-chunk tables through a
   separate stdlib sqlite3 connection. Lane 2 is broken down into its steps, and profiled
   with cProfile whenever a target is missed.
2. Compaction. A 200-turn transcript (user/assistant turns, some tool calls, with ticket ids,
   URLs, paths, UUIDs, versions, e-mails, SHAs, tasks and decisions) is compacted with
   `clawkeep.context.compaction.compact(store, session, [], …)` and written with
   `clawkeep.sessions.compactions.record_compaction` — no model, so the built-in
   extractive summary — with the default keepRecentTokens and with a small one; wall time
   and how many identifiers of the compacted turns appear verbatim in the summary.
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import io
import json
import os
import platform
import pstats
import random
import shutil
import sqlite3
import sys
import time
import uuid
from collections import Counter, defaultdict
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if __package__ in (None, ""):  # `python bench/recall_perf.py`
    sys.path.insert(0, str(REPO))

from bench.common import match_of  # noqa: E402
from clawkeep import Engine  # noqa: E402
from clawkeep.config.active_memory import active_memory_config, remember_across_conversations  # noqa: E402
from clawkeep.context import compaction  # noqa: E402
from clawkeep.memory import items as memory_items  # noqa: E402
from clawkeep.memory import service as memory  # noqa: E402
from clawkeep.memory.chunking import chunk_lines  # noqa: E402
from clawkeep.recall import lanes  # noqa: E402
from clawkeep.recall import service as recall_service  # noqa: E402
from clawkeep.recall.detector import classify  # noqa: E402
from clawkeep.sessions import compactions, transcript  # noqa: E402
from clawkeep.sessions.service import find_session  # noqa: E402
from clawkeep.storage import AgentStore, EntryRecord, SessionRecord, open_agent_store_file  # noqa: E402
from clawkeep.text.query import parse_query  # noqa: E402

CORPUS_VERSION = "rp1"
DATA = REPO / ".bench-data"
RESULTS = Path(__file__).resolve().parent / "results"
CONFIG = {"agents": {"defaults": {"memorySearch": {"provider": "none"}}}}  # dmScope: default "main"
MAIN_KEY = "agent:main:main"

TARGET_LANE1_P50 = 0.010
TARGET_LANE2_P50 = 0.050
FULL = {"chunks": 10_000, "messages": 100_000, "memory_items": 1_000, "calls": 60, "compaction_reps": 5,
        "lane1_sizes": [100, 1_000, 5_000]}
QUICK = {"chunks": 1_500, "messages": 10_000, "memory_items": 300, "calls": 50, "compaction_reps": 2,
         "lane1_sizes": [100, 1_000]}
SEED_BATCH = 2_000
DAY_MS = 86_400_000
NOW = datetime(2026, 3, 2, 15, 0, tzinfo=UTC)  # fixed so the seeded corpus is reproducible
NOW_MS = int(NOW.timestamp() * 1000)


# =============================================================================================
# Small helpers (self-contained: this file runs without the rest of bench/)


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def ms(seconds: float) -> str:
    value = seconds * 1000
    if value != value:
        return "–"
    return f"{value:.3f}" if value < 1 else f"{value:.2f}" if value < 100 else f"{value:.0f}"


def ratio(a: float, b: float) -> str:
    if not b or a != a or b != b:
        return "–"
    return f"{a / b:.1f}×" if a / b >= 1 else f"{a / b:.3f}×"


def md_table(headers: list[str], rows: list[list[Any]]) -> str:
    def cell(v: Any) -> str:
        return str(v).replace("|", "\\|").replace("\n", " ")

    out = ["| " + " | ".join(map(cell, headers)) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join(map(cell, row)) + " |" for row in rows]
    return "\n".join(out)


def load_average() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def machine() -> dict[str, str]:
    cpu = platform.processor() or "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"cores": str(os.cpu_count()), "cpu": cpu, "python": sys.version.split()[0],
            "sqlite": sqlite3.sqlite_version, "os": platform.platform()}


def log(message: str) -> None:
    print(f"[recall_perf] {message}", file=sys.stderr, flush=True)


def timed(fn, reps: int = 1) -> list[float]:
    out = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


# =============================================================================================
# Corpus: vocabulary, planted facts and questions

FIRST = ("Alice Bruno Chen Dara Elif Farid Greta Hiro Ines Jonas Kofi Lena Mateo Nadia Omar Priya Quinn Rosa "
         "Sven Tariq Uma Viktor Wen Yara Zoe").split()
PLACES = ("Lisbon Berlin Osaka Toronto Nairobi Denver Porto Seoul Lyon Austin Krakow Hanoi Oslo Valencia "
          "Melbourne Dublin Bogota Tallinn").split()
TOPICS = {
    "work": ("deploy release budget roadmap standup retro incident review sprint backlog offsite contract "
             "invoice client proposal deadline meeting migration rollout outage dashboard metrics hiring "
             "interview onboarding quarterly planning estimate vendor license audit").split(),
    "code": ("python typescript postgres redis kubernetes docker terraform pipeline branch merge refactor "
             "endpoint schema index query cache latency timeout retry webhook cron queue worker logging "
             "tracing benchmark regression flaky test fixture linter").split(),
    "life": ("groceries dinner recipe pasta curry bakery laundry plumber landlord rent garden balcony bike "
             "train flight hotel luggage passport museum concert birthday gift cinema yoga running swim "
             "doctor pharmacy insurance taxes mortgage").split(),
    "people": ("sister brother parents cousin neighbour colleague manager mentor friend partner kids "
               "teacher coach roommate").split(),
}
ALL_WORDS = [w for ws in TOPICS.values() for w in ws]
VERBS = ("moved checked booked fixed postponed cancelled confirmed reviewed shipped drafted sent paid "
         "updated tested compared ordered rescheduled discussed").split()
FILLER_TEMPLATES = (
    "I {verb} the {w1} for {person} and the {w2} is next.",
    "Can you help me think through the {w1} and the {w2} before {day}?",
    "The {w1} took longer than expected, mostly because of the {w2}.",
    "{person} said the {w1} in {place} went fine, but the {w2} still needs work.",
    "Quick note: {w1} {verb} on {day}; {w2} still open.",
    "I'm not sure whether to prioritise the {w1} or the {w2} this week.",
    "We talked about the {w1} with {person}; no decision on the {w2} yet.",
    "Here is a summary: the {w1} is done, the {w2} is blocked on {person}, and the {w3} can wait.",
    "Thanks, that helps with the {w1}. Let me check the {w2} tomorrow.",
    "Option A keeps the {w1} simple; option B moves the {w2} to {place} and costs more.",
    "Reminder for myself: {w1} at {hour}:00, then {w2}.",
    "I looked at the {w1} numbers: {n1} last month versus {n2} now.",
)
ZH_FILLER = (
    "我今天把{a}的事情处理完了，{b}还要再等等。",
    "下午和同事讨论了{a}，大家觉得{b}可以先放一放。",
    "周末去超市买了{a}，顺便看了看{b}。",
    "这个{a}方案我觉得还行，不过{b}那边还没确认。",
)
ZH_WORDS = "预算 项目 会议 报告 装修 旅行 机票 酒店 体检 保险 课程 搬家 合同 面试 周报 发布".split()
DAYS = "Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split()


def filler(rng: random.Random) -> str:
    if rng.random() < 0.07:
        a, b = rng.sample(ZH_WORDS, 2)
        return rng.choice(ZH_FILLER).format(a=a, b=b)
    topic = rng.choice(list(TOPICS.values()))
    w1, w2, w3 = rng.sample(topic, 3)
    text = rng.choice(FILLER_TEMPLATES).format(
        verb=rng.choice(VERBS), w1=w1, w2=w2, w3=w3, person=rng.choice(FIRST), place=rng.choice(PLACES),
        day=rng.choice(DAYS), hour=rng.randint(7, 20), n1=rng.randint(10, 999), n2=rng.randint(10, 999))
    if rng.random() < 0.35:  # a second, unrelated sentence
        text += " " + filler(rng)
    return text


# Lane 1: trusted MEMORY.md entries with one-word triggers, and messages that hit them.
LANE1 = [
    ("standup", "Standup is at 09:30 on weekdays in the Aurora room"),
    ("dentist", "My dentist is Dr. Okafor at Harbor Dental, +1 415 555 0142"),
    ("passport", "My passport expires on 2029-04-17; it is kept in the blue folder"),
    ("wifi", "The home wifi is called Larkspur-5G"),
    ("allergy", "I have a penicillin allergy"),
    ("landlord", "My landlord is Mr. Ferreira, he prefers WhatsApp over e-mail"),
    ("locker", "My gym locker is number 214"),
    ("vegetarian", "I am vegetarian on weekdays"),
    ("timezone", "I work in the Europe/Lisbon timezone"),
    ("payroll", "Payroll runs on the 25th; receipts go to finance@acme.example"),
    ("oncall", "My oncall week is every fourth week, handover on Mondays"),
    ("editor", "My editor is Neovim with the gruvbox theme"),
    ("shoe", "My shoe size is EU 43"),
    ("pediatrician", "The kids' pediatrician is Dr. Lindqvist"),
    ("mortgage", "Our mortgage is with Caixa, fixed until 2031"),
    ("bloodtype", "My bloodtype is O negative"),
    ("newsletter", "I write the team newsletter every second Friday"),
    ("carpool", "Carpool with Jonas on Tuesdays and Thursdays"),
    ("therapist", "Therapist sessions are on Wednesdays at 18:00"),
    ("budgeting", "For budgeting I use YNAB with a monthly review"),
    ("laptop", "My work laptop is a ThinkPad X1 Carbon gen 11, asset tag ACM-44812"),
    ("keyboard", "I type on a split keyboard with the Colemak layout"),
    ("coffee", "I take my coffee black, no sugar"),
    ("cat", "Our cat is called Miso and needs her pill at 08:00"),
    ("piano", "Piano lessons are on Saturday mornings with Ms. Adeyemi"),
    ("marathon", "I am training for the Porto marathon in November"),
    ("nickname", "Call me Sam, not Samantha"),
    ("pronouns", "My pronouns are she/her"),
    ("birthday", "My birthday is on 12 August"),
    ("anniversary", "Our wedding anniversary is on 3 June"),
    ("github", "My GitHub handle is samk-dev"),
    ("shell", "I use fish as my shell"),
    ("linter", "The team linter is ruff with line length 110"),
    ("branch", "Release branches are named release/YYYY.MM"),
    ("vpn", "The office VPN is WireGuard, config in ~/vpn/acme.conf"),
    ("printer", "The office printer is on the third floor, queue name PRN-3F"),
    ("parking", "My parking spot is B2-17"),
    ("insurance", "Health insurance is with Medis, member id MD-5521907"),
    ("accountant", "My accountant is Rui Matos, taxes due by end of June"),
    ("plants", "Water the plants on Sundays; the fern needs misting"),
    ("language", "I am learning Japanese, JLPT N4 level"),
    ("glasses", "My glasses prescription is -2.25 both eyes"),
    ("recycling", "Recycling goes out on Thursday evenings"),
    ("babysitter", "The babysitter is Ana, she is free on Fridays"),
    ("bank", "My main bank is Revolut; savings are at ING"),
    ("seat", "I prefer an aisle seat on flights"),
    ("frequentflyer", "My frequentflyer number is TP 88231104"),
    ("hotelpreference", "I prefer hotels with a gym"),
    ("podcast", "I listen to the Hard Fork podcast on commutes"),
    ("novel", "I am reading Pachinko, chapter 12"),
    ("climbing", "Climbing gym on Mondays and Thursdays"),
    ("sourdough", "My sourdough starter is fed every 12 hours"),
    ("compost", "The compost bin is emptied every second week"),
    ("volunteering", "I volunteer at the food bank on the first Saturday of the month"),
    ("guitar", "My guitar is tuned to drop D"),
    ("camera", "My camera is a Fujifilm X-T4"),
    ("monitor", "The external monitor is a Dell U2723QE"),
    ("router", "The router admin page is 192.168.1.1"),
    ("pharmacy", "My pharmacy is Farmacia Estrela on Rua Augusta"),
    ("physio", "Physio appointments are on Tuesdays at 07:30"),
]
LANE1_QUERIES = ("quick question about the {t}", "can you check the {t} thing for me", "{t}?",
                 "I need to sort out the {t} today", "what about my {t}")

# Lane 2: facts planted in other DM transcripts (and some in daily notes), and past questions.
RARE_FACTS = [
    ("kayak rental", "The kayak rental is on pier nine, ask for Marta"),
    ("boiler service", "The boiler service is booked with Thermofix for the 14th"),
    ("piano tuner", "The piano tuner comes every spring, his name is Aurelio"),
    ("visa appointment", "The visa appointment is at the consulate on Avenida Liberdade, slot 10:40"),
    ("wine cellar", "The wine cellar key is in the red box in the hallway"),
    ("storage unit", "The storage unit is number 318 at SafeStore Almada"),
    ("bike lock", "The bike lock code is 7316"),
    ("roof leak", "The roof leak was fixed by Telhados Silva, warranty two years"),
    ("tax refund", "The tax refund was 842 euros, paid in May"),
    ("wedding venue", "The wedding venue is Quinta do Lago, capacity 120"),
    ("conference talk", "My conference talk is about zero-downtime Postgres migrations"),
    ("chess club", "The chess club meets at the library on Thursdays at 19:00"),
    ("sailing course", "The sailing course starts on 9 May at the Belem marina"),
    ("spare key", "The spare key is with the neighbour in flat 3B"),
    ("car inspection", "The car inspection is due in October at the Inspecar centre"),
    ("book club", "The book club picked Klara and the Sun for next month"),
    ("dog walker", "The dog walker is Tiago, 15 euros per walk"),
    ("solar panels", "The solar panels quote from SunPower was 6,400 euros"),
    ("moving truck", "The moving truck is reserved with Hertz for Saturday 8am"),
    ("tennis partner", "My tennis partner Farid plays on Sunday mornings"),
    ("grant application", "The grant application deadline is 30 April, portal id GA-77310"),
    ("flu shot", "The flu shot is at the health centre, walk-in on Wednesdays"),
    ("guest room", "The guest room mattress is the firm one from IKEA"),
    ("fishing trip", "The fishing trip with my cousin is in Sesimbra in July"),
    ("escape room", "The escape room booking is for six people on Friday"),
    ("pottery class", "The pottery class uses the kiln on Mondays"),
    ("hiking route", "The hiking route is the Rota Vicentina, stage three"),
    ("ski trip", "The ski trip is in Andorra, chalet booked via Airbnb"),
    ("jazz festival", "The jazz festival tickets are in my e-mail from Ticketline"),
    ("aquarium filter", "The aquarium filter cartridge is the Fluval 307 type"),
]
COMMON_FACTS = [
    ("offsite budget", "We decided the offsite budget is 12k EUR, hotel included"),
    ("release freeze", "The release freeze starts on the 18th, only hotfixes after that"),
    ("hiring plan", "The hiring plan is two backend engineers and one designer this quarter"),
    ("migration rollout", "The migration rollout goes region by region, Europe first"),
    ("vendor contract", "The vendor contract renews in September; notice period 60 days"),
    ("flight home", "My flight home is TP1351 on Sunday at 18:05"),
    ("dinner recipe", "The dinner recipe was the green curry with extra lime"),
    ("garden plan", "The garden plan is tomatoes on the balcony and herbs by the window"),
    ("warranty claim", "The warranty claim number is CLM-2291-884"),
    ("interview loop", "The interview loop is system design, coding and a culture chat"),
    ("incident review", "The incident review concluded the cache timeout caused the outage"),
    ("quarterly planning", "Quarterly planning is on the 3rd, bring the roadmap draft"),
    ("housewarming gift", "The housewarming gift for my sister is a ceramics workshop voucher"),
    ("rent increase", "The rent increase is 2 percent from January"),
    ("test fixture", "The flaky test fixture was the shared postgres container"),
]
ZH_FACTS = [
    ("装修方案", "装修方案选了北欧风格，预算十五万"),
    ("体检报告", "体检报告说血脂有点高，医生建议三个月后复查"),
    ("旅行计划", "旅行计划是十月去云南，先到昆明再去大理"),
    ("搬家日期", "搬家日期定在下个月八号，搬家公司是蚂蚁搬家"),
    ("课程安排", "课程安排是每周二和周四晚上上日语课"),
]
PAST_TEMPLATES = (
    "what did I tell you about the {x}?",
    "do you remember what I said about the {x}?",
    "what was the {x} thing we talked about?",
    "didn't I mention something about the {x} before?",
    "what did we decide about the {x} last time?",
)
ZH_PAST = ("我上次说的那个{x}是什么来着？", "你还记得我说过的{x}吗？")
ORDINARY = (
    "Let's plan the week: gym, groceries and the release notes.",
    "Write a short haiku about autumn in Lisbon.",
    "Convert 42 miles to kilometres.",
    "Draft a polite reply declining the invitation.",
    "How do I reverse a list in Python?",
    "Summarise the pros and cons of electric cars.",
    "帮我写一封请假邮件。",
    "Give me three dinner ideas with chickpeas.",
    "Explain what a Bloom filter is in two sentences.",
    "Translate 'good morning' into Korean.",
)


@dataclass
class Question:
    text: str
    answer: str  # a phrase of the planted fact (sanity check of the summary)
    kind: str  # lane1 | rare | common | zh


@dataclass
class Manifest:
    version: str
    sizes: dict[str, int]
    chunks: int = 0
    files: int = 0
    memory_items: int = 0
    messages: int = 0
    dm_messages: int = 0
    sessions: dict[str, int] = field(default_factory=dict)
    seed_seconds: dict[str, float] = field(default_factory=dict)
    lane1: list[dict] = field(default_factory=list)
    lane2: list[dict] = field(default_factory=list)


# =============================================================================================
# Seeding


def _memory_md(rng: random.Random, n_items: int) -> tuple[str, list[Question]]:
    """MEMORY.md with `n_items` bullets: the lane-1 trigger entries plus ordinary curated facts."""
    lines = ["# Memory", "", "Curated long-term facts. Edited by hand and by `memory remember`.", ""]
    questions = []
    section = 0
    trigger_every = max(1, n_items // len(LANE1))
    lane1 = list(LANE1)
    for i in range(n_items):
        if i % 40 == 0:
            section += 1
            lines += ["", f"## {rng.choice(['Work', 'Home', 'Health', 'Travel', 'Projects', 'People'])} {section}", ""]
        if lane1 and i % trigger_every == 0:
            trigger, fact = lane1.pop(0)
            stamp = f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
            marker = f" <!-- ck:id=m-{rng.getrandbits(32):08x}; at={stamp} -->"
            lines.append(f"- {fact} <!-- trigger: {trigger} -->" + (marker if i % 2 else ""))
            for template in LANE1_QUERIES[:2]:
                questions.append(Question(template.format(t=trigger), fact.split()[-1], "lane1"))
            continue
        topic = rng.choice(list(TOPICS.values()))
        w1, w2 = rng.sample(topic, 2)
        person = rng.choice(FIRST)
        fact = rng.choice((
            f"{person} handles the {w1}; ask before changing the {w2}",
            f"I prefer doing the {w1} before the {w2}",
            f"The {w1} checklist lives in the {w2} doc",
            f"{person} from {rng.choice(PLACES)} owns the {w1} budget line {rng.randint(100, 999)}",
            f"Never schedule the {w1} on {rng.choice(DAYS)}s",
        ))
        attrs = {}
        roll = rng.random()
        if roll < 0.4:
            stamp = f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
            attrs = {"id": f"m-{rng.getrandbits(32):08x}", "at": stamp}
        if roll < 0.05:
            attrs["supersededBy"] = f"m-{rng.getrandbits(32):08x}"
        elif roll < 0.08:
            attrs["expires"] = "2025-06-30"
        elif roll < 0.1:
            attrs["trust"] = "untrusted"
        lines.append(f"- {fact}" + (memory_items.render_marker(attrs) if attrs else ""))
    return "\n".join(lines) + "\n", questions


def _daily_note(rng: random.Random, day: date, planted: list[str]) -> str:
    lines = [f"# {day.isoformat()}", "", "## Notes", ""]
    for _ in range(rng.randint(8, 30)):
        lines.append(f"- {filler(rng)}")
    for fact in planted:
        lines.append(f"- {fact}")
    lines += ["", "## Log", ""]
    for _ in range(rng.randint(10, 40)):
        lines.append(" ".join(filler(rng) for _ in range(rng.randint(1, 3))))
    return "\n".join(lines) + "\n"


def _excerpt(rng: random.Random, moment: datetime, key: str, session_id: str) -> str:
    body = [f"# Session: {moment:%Y-%m-%d %H:%M:%S} UTC", "", f"- Session key: {key}",
            f"- Session id: {session_id}", "- Reason: daily reset", "", "## Conversation", ""]
    for i in range(rng.randint(4, 15)):
        body.append(f"{'user' if i % 2 == 0 else 'assistant'}: {filler(rng)}")
    return "\n".join(body) + "\n"


def _count_chunks(text: str, tokens: int, overlap: int) -> int:
    lines = text.splitlines()
    states = memory_items.line_states(lines)
    classes = [(st.weight, st.expires is not None, st.session) for st in states]
    return len(chunk_lines([memory_items.parse_marker(line)[0] for line in lines], chunk_tokens=tokens,
                           overlap_tokens=overlap, classes=classes))


@dataclass
class _Plan:
    record: SessionRecord
    count: int


def seed(home: Path, sizes: dict[str, int]) -> Manifest:
    rng = random.Random(20260302)
    manifest = Manifest(CORPUS_VERSION, dict(sizes))
    eng = Engine.open(home=home, config=CONFIG)
    rt = eng.runtime
    ws = memory.workspace(rt)
    (ws / "memory").mkdir(parents=True, exist_ok=True)
    chunking = rt.config.agents.defaults.memory_search.chunking

    # --- questions and planted facts -------------------------------------------------------
    memory_text, lane1_questions = _memory_md(rng, sizes["memory_items"])
    lane2: list[Question] = []
    plants: list[tuple[str, str]] = []  # (subject, fact sentence)
    for facts, kind in ((RARE_FACTS, "rare"), (COMMON_FACTS, "common")):
        for i, (subject, fact) in enumerate(facts):
            plants.append((subject, fact))
            for j in range(2):
                template = PAST_TEMPLATES[(i + j * 2) % len(PAST_TEMPLATES)]
                lane2.append(Question(template.format(x=subject), fact.split(",")[0].split()[-1], kind))
    for subject, fact in ZH_FACTS:
        plants.append((subject, fact))
        for template in ZH_PAST:
            lane2.append(Question(template.format(x=subject), subject, "zh"))

    # --- sessions plan ---------------------------------------------------------------------
    started = time.perf_counter()
    store = rt.store()
    total_dm = sizes["messages"]
    n_dashboard = max(10, total_dm // 140)
    n_direct = max(5, total_dm // 1000)
    main_count = total_dm // 8
    rest = total_dm - main_count
    weights = [rng.paretovariate(1.6) for _ in range(n_dashboard + n_direct)]
    scale = rest / sum(weights)
    counts = [max(2, int(w * scale)) for w in weights]
    counts[0] += rest - sum(counts)
    if counts[0] < 2:  # rounding pushed it negative: spread the difference
        counts[0] = 2
    plans: list[_Plan] = []

    def plan(key: str, kind: str, chat_type: str | None, channel: str | None, count: int, peer: str | None = None,
             meta: dict | None = None) -> None:
        start = NOW_MS - rng.randint(30, 700) * DAY_MS
        record = SessionRecord(session_id=str(uuid.uuid4()), key=key, agent_id="main", kind=kind, chat_type=chat_type,
                               channel=channel, peer=peer, session_started_at=start, updated_at=start,
                               created_at=start, meta=dict(meta or {}))
        plans.append(_Plan(record, count))

    plan(MAIN_KEY, "main", "direct", None, main_count)
    for i in range(n_dashboard):
        plan(f"agent:main:dashboard:{uuid.UUID(int=rng.getrandbits(128), version=4)}", "dashboard", "direct",
             "dashboard", counts[i])
    channels = ["telegram", "slack", "whatsapp", "discord"]
    for i in range(n_direct):
        ch = rng.choice(channels)
        peer = f"{rng.choice(FIRST).lower()}{i}"
        plan(f"agent:main:{ch}:direct:{peer}", "direct", "direct", ch, counts[n_dashboard + i], peer=peer)
    non_dm = max(100, total_dm // 20)
    for i in range(40):
        plan(f"agent:main:slack:group:g{i}", "group", "group", "slack", non_dm // 80)
    for i in range(20):
        plan(f"agent:main:cron:job{i}", "cron", None, None, non_dm // 80)
    for _ in range(10):
        plan(f"agent:main:subagent:{uuid.UUID(int=rng.getrandbits(128), version=4)}", "subagent", None, None,
             non_dm // 40)

    # every message gets a time inside its session's life; planted facts go into DM sessions other than main
    events: list[tuple[int, int, str]] = []  # (ts, plan index, text)
    for index, p in enumerate(plans):
        span = max(1, NOW_MS - DAY_MS - p.record.session_started_at)
        stamps = sorted(p.record.session_started_at + rng.randint(0, span) for _ in range(p.count))
        for ts in stamps:
            events.append((ts, index, ""))
    dm_plans = [i for i, p in enumerate(plans) if p.record.kind in ("dashboard", "direct") and p.count >= 4]
    planted_at: dict[int, str] = {}
    events.sort()
    positions_by_plan: dict[int, list[int]] = defaultdict(list)
    for pos, (_, index, _) in enumerate(events):
        positions_by_plan[index].append(pos)
    for _, fact in plants:
        owner = rng.choice(dm_plans)
        pos = rng.choice(positions_by_plan[owner])
        planted_at[pos] = fact

    for p in plans:
        p.record.message_count = p.count
    with store.transaction():
        for p in plans:
            store.insert_session(p.record)
            transcript.append(store, EntryRecord(transcript.new_entry_id(), p.record.session_id, "session",
                                                 p.record.session_started_at, meta={"key": p.record.key}))
    last: dict[int, int] = {}
    written = dm_written = 0
    for start in range(0, len(events), SEED_BATCH):
        with store.transaction():
            for pos in range(start, min(len(events), start + SEED_BATCH)):
                ts, index, _ = events[pos]
                p = plans[index]
                role = "user" if rng.random() < 0.5 else "assistant"
                text = filler(rng)
                if pos in planted_at:
                    role, text = "user", f"{planted_at[pos]}. {filler(rng)}"
                transcript.append(store, EntryRecord(transcript.new_entry_id(), p.record.session_id, "message", ts,
                                                     role=role, content=transcript.text_blocks(text)))
                last[index] = ts
                written += 1
                dm_written += p.record.kind in ("main", "dashboard", "direct")
        if (start // SEED_BATCH) % 10 == 0:
            log(f"transcripts: {written:,}/{len(events):,}")
    with store.transaction():
        for index, p in enumerate(plans):
            fresh = store.get_session(p.record.session_id)
            assert fresh is not None
            fresh.updated_at = fresh.last_interaction_at = last.get(index, fresh.updated_at)
            store.update_session(fresh)
    manifest.seed_seconds["transcripts"] = time.perf_counter() - started
    manifest.messages = written
    manifest.dm_messages = dm_written
    manifest.sessions = dict(Counter(p.record.kind for p in plans))

    # --- memory files ----------------------------------------------------------------------
    started = time.perf_counter()
    (ws / "MEMORY.md").write_text(memory_text, encoding="utf-8")
    chunks = _count_chunks(memory_text, chunking.tokens, chunking.overlap)
    files = 1
    note_plants = [fact for _, fact in plants[::3]]
    day = NOW.date() - timedelta(days=1)
    dashboards = [p.record for p in plans if p.record.kind == "dashboard"]
    while chunks < sizes["chunks"]:
        if rng.random() < 0.25:
            moment = datetime.combine(day, datetime.min.time(), tzinfo=UTC) + timedelta(minutes=rng.randint(0, 1439))
            owner = rng.choice(dashboards)
            text = _excerpt(rng, moment, owner.key, owner.session_id)
            path = ws / "memory" / f"{moment:%Y-%m-%d-%H%M}.md"
        else:
            planted = [note_plants.pop()] if note_plants and rng.random() < 0.2 else []
            text = _daily_note(rng, day, planted)
            path = ws / "memory" / f"{day.isoformat()}.md"
            day -= timedelta(days=1)
        if path.exists():
            continue
        path.write_text(text, encoding="utf-8")
        chunks += _count_chunks(text, chunking.tokens, chunking.overlap)
        files += 1
    manifest.seed_seconds["memory files"] = time.perf_counter() - started
    started = time.perf_counter()
    report = eng.memory_index()
    manifest.seed_seconds["memory index (provider none)"] = time.perf_counter() - started
    manifest.chunks = report["chunks"]
    manifest.files = files
    manifest.memory_items = sizes["memory_items"]

    # --- keep only questions the detector and lanes agree on ------------------------------
    manifest.lane1 = [q.__dict__ for q in lane1_questions]
    manifest.lane2 = [q.__dict__ for q in lane2]
    eng.close()
    return manifest


def prepared_home(sizes: dict[str, int], fresh: bool) -> tuple[Path, Manifest]:
    tag = f"recall-perf-{CORPUS_VERSION}-{sizes['chunks']}c-{sizes['messages']}m-{sizes['memory_items']}i"
    root = DATA / tag
    manifest_path = root / "manifest.json"
    if fresh and root.exists():
        shutil.rmtree(root)
    if manifest_path.exists():
        data = json.loads(manifest_path.read_text())
        log(f"using cached seeded home {root}")
        return root / "home", Manifest(**data)
    if root.exists():
        shutil.rmtree(root)  # a seed that did not finish
    (root / "home").mkdir(parents=True)
    log(f"seeding {root} (once; cached afterwards)")
    manifest = seed(root / "home", sizes)
    manifest_path.write_text(json.dumps(manifest.__dict__, indent=1, ensure_ascii=False))
    return root / "home", manifest


# =============================================================================================
# Recall measurements


@dataclass
class Series:
    name: str
    times: list[float]
    results: list[dict]

    @property
    def p50(self) -> float:
        return percentile(self.times, 50)

    @property
    def p95(self) -> float:
        return percentile(self.times, 95)


def run_calls(rt, texts: list[str], calls: int, *, key: str = MAIN_KEY, lane: int | None = None,
              excluded: list[str] | None = None) -> Series:
    """Warm each text once (keeping only those answered by `lane`, if given), then at least
    `calls` timed calls cycling through the texts, so that every text is timed at least once."""
    kept = []
    for text in texts:
        result = recall_service.recall(rt, text, key, model=None)
        if lane is None or result.lane == lane:
            kept.append(text)
        elif excluded is not None:
            excluded.append(f"{text} (lane {result.lane})")
    texts = kept
    times, results = [], []
    for i in range(max(calls, len(texts))):
        text = texts[i % len(texts)]
        start = time.perf_counter()
        result = recall_service.recall(rt, text, key, model=None)
        times.append(time.perf_counter() - start)
        results.append({"text": text, **result.to_json()})
    return Series("", times, results)


@contextmanager
def memory_search_without_sync():
    """Counterfactual only: memory.search(..., sync=False) while inside (the index is already fresh)."""
    original = memory.search
    memory.search = functools.partial(original, sync=False)  # type: ignore[assignment]
    try:
        yield
    finally:
        memory.search = original  # type: ignore[assignment]


def profile_calls(rt, texts: list[str], calls: int, top: int = 14) -> list[list[Any]]:
    """cProfile over `calls` recalls: the functions with the most own time (ms per call)."""
    profiler = cProfile.Profile()
    profiler.enable()
    for i in range(calls):
        recall_service.recall(rt, texts[i % len(texts)], MAIN_KEY, model=None)
    profiler.disable()
    stats = pstats.Stats(profiler, stream=io.StringIO())
    rows = []
    for (filename, line, func), (_, ncalls, tottime, cumtime, _) in stats.stats.items():  # type: ignore[attr-defined]
        short = filename.split("/src/", 1)[-1] if "/src/" in filename else Path(filename).name
        rows.append((tottime, cumtime, ncalls, f"{short}:{line} {func}"))
    by_own = sorted(rows, reverse=True)[:top]
    return [[name, f"{tot / calls * 1000:.2f}", f"{cum / calls * 1000:.2f}", f"{n / calls:.0f}"]
            for tot, cum, n, name in by_own]


def lane2_steps(rt, questions: list[str], reps: int) -> list[tuple[str, float]]:
    """p50 of each step of a deterministic lane-2 recall, called the way service.recall calls it."""
    _, session = find_session(rt, MAIN_KEY)
    settings = active_memory_config(rt.config)
    options = settings.config
    across = remember_across_conversations(rt.config)
    index = memory.open_index(rt)
    store = rt.store()
    ws = memory.workspace(rt)
    steps: dict[str, list[float]] = defaultdict(list)

    def step(name: str, fn) -> Any:
        start = time.perf_counter()
        out = fn()
        steps[name].append(time.perf_counter() - start)
        return out

    def one(q: str) -> None:
        step("active_memory_config (pydantic)", lambda: active_memory_config(rt.config))
        step("find_session", lambda: find_session(rt, MAIN_KEY))
        step("classify (past-question detector)", lambda: classify(q))
        step("lane 1 (MEMORY.md scan, miss)", lambda: lanes.lane_one(
            memory.workspace(rt), q, min_score=options.lane_one.min_score, max_entries=options.lane_one.max_entries,
            max_chars=options.lane_one.max_chars, today=memory.today(rt)))
        step("memory index sync (nothing changed)", lambda: index.sync())
        files = step("  of which items.memory_files() (pathlib rglob + sort)", lambda: memory_items.memory_files(ws))
        step("  of which one stat() per file", lambda: [(ws / rel).stat() for rel in files])
        step("  of which store.files() + fingerprint + meta + chunk_count",
             lambda: (index.store.files("memory"), index.store.get_meta("fingerprint") == index.fingerprint(),
                      index.store.chunk_count()))
        step("memory_search without sync", lambda: memory.search(rt, q, limit=6, sync=False))
        step("memory evidence (= sync + search + filter)",
             lambda: recall_service._memory_evidence(rt, session, q, across))
        step("  store.list_sessions()", lambda: store.list_sessions())
        ev = step("transcript evidence (list + df + FTS + rerank)",
                  lambda: recall_service._transcript_evidence(rt, session, q))
        evidence = recall_service._memory_evidence(rt, session, q, across) + ev
        step("deterministic_summary", lambda: lanes.deterministic_summary(evidence, q, options.max_summary_chars))

    for r in range(reps):
        one(questions[r % len(questions)])
    return [(name, percentile(values, 50)) for name, values in steps.items()]


def raw_fts_baselines(rt, questions: list[str], reps: int) -> dict[str, float]:
    """Raw FTS5 on the same tables, same MATCH strings, separate stdlib connection."""
    store = rt.store()
    index = memory.open_index(rt)
    agent_db = memory.memory_database_path(rt).parent / "agent.sqlite"
    memory_db = memory.memory_database_path(rt)
    matches_t, matches_m = [], []
    for q in questions:
        parsed = parse_query(q)
        if parsed is None:
            continue
        matches_t.append(match_of(parsed.select(store.document_frequency, store.indexed_documents())))
        matches_m.append(match_of(parsed.select(index.store.document_frequency, index.store.chunk_count())))
    out: dict[str, list[float]] = defaultdict(list)
    conn_t = sqlite3.connect(f"file:{agent_db}?mode=ro", uri=True)
    conn_m = sqlite3.connect(f"file:{memory_db}?mode=ro", uri=True)
    try:
        for i in range(len(matches_t) + reps):  # first pass warms the page cache
            mt, mm = matches_t[i % len(matches_t)], matches_m[i % len(matches_m)]
            start = time.perf_counter()
            conn_t.execute("SELECT rowid, rank FROM entries_fts WHERE entries_fts MATCH ? ORDER BY rank LIMIT 50",
                           (mt,)).fetchall()
            middle = time.perf_counter()
            conn_m.execute("SELECT rowid, rank FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY rank LIMIT 50",
                           (mm,)).fetchall()
            end = time.perf_counter()
            if i >= len(matches_t):
                out["transcript"].append(middle - start)
                out["memory"].append(end - middle)
                out["both"].append(end - start)
    finally:
        conn_t.close()
        conn_m.close()
    return {k: percentile(v, 50) for k, v in out.items()} | {f"{k}_p95": percentile(v, 95) for k, v in out.items()}


def parse_baseline(path: Path, reps: int) -> tuple[float, float]:
    def parse() -> None:
        memory_items.parse_items("MEMORY.md", path.read_text(encoding="utf-8"))

    times = timed(parse, reps + 5)[5:]
    return percentile(times, 50), percentile(times, 95)


def lane1_size_sweep(sizes: list[int], calls: int) -> list[list[Any]]:
    """Lane 1 alone against MEMORY.md files of several sizes (a small scratch home each)."""
    rows = []
    for n in sizes:
        scratch = DATA / "tmp" / f"recall-lane1-{n}-{os.getpid()}"
        shutil.rmtree(scratch, ignore_errors=True)
        scratch.mkdir(parents=True)
        try:
            eng = Engine.open(home=scratch, config=CONFIG)
            rt = eng.runtime
            ws = memory.workspace(rt)
            ws.mkdir(parents=True, exist_ok=True)
            text, questions = _memory_md(random.Random(n), n)
            (ws / "MEMORY.md").write_text(text, encoding="utf-8")
            eng.message("hello")  # creates agent:main:main
            texts = [q.text for q in questions]
            series = run_calls(rt, texts, calls)
            lane1 = sum(1 for r in series.results if r["lane"] == 1)
            base50, _ = parse_baseline(ws / "MEMORY.md", calls)
            cold = []
            for i in range(5):  # the first call after an edit parses the file again
                with (ws / "MEMORY.md").open("a", encoding="utf-8") as fh:
                    fh.write(f"<!-- edit {i} -->\n")
                cold += timed(lambda r=rt, t=texts[0]: recall_service.recall(r, t, MAIN_KEY, model=None))
            rows.append([f"{n:,}", f"{len(text) // 1024} KiB", ms(series.p50), ms(series.p95),
                         ms(percentile(cold, 50)), ms(base50), ratio(series.p50, base50),
                         f"{lane1}/{len(series.results)}"])
            eng.close()
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    return rows


def bench_recall(sizes: dict[str, int], fresh: bool, calls: int) -> tuple[list[str], dict[str, Any]]:
    home, manifest = prepared_home(sizes, fresh)
    eng = Engine.open(home=home, config=CONFIG)
    rt = eng.runtime
    assert remember_across_conversations(rt.config), "dmScope main must turn rememberAcrossConversations on"
    lane1_texts = [q["text"] for q in manifest.lane1]
    lane2_qs = [q for q in manifest.lane2 if classify(q["text"]).past_question]
    dropped = [q["text"] for q in manifest.lane2 if not classify(q["text"]).past_question]
    lane2_texts = [q["text"] for q in lane2_qs]
    ordinary = [t for t in ORDINARY if not classify(t).past_question]

    log("warm-up and lane 1 …")
    lane1_missed: list[str] = []
    s1 = run_calls(rt, lane1_texts, calls, lane=1, excluded=lane1_missed)
    log("lane 2 …")
    lane1_first: list[str] = []
    s2 = run_calls(rt, lane2_texts, calls, lane=2, excluded=lane1_first)
    lane2_texts = sorted({r["text"] for r in s2.results})
    with memory_search_without_sync():
        s2_nosync = run_calls(rt, lane2_texts, calls)
    log("ordinary turns …")
    s0 = run_calls(rt, ordinary, calls)

    # sanity: which lane answered, and does the lane-2 summary carry the planted answer
    lane1_ok = sum(1 for r in s1.results if r["lane"] == 1 and r["status"] == "ok")
    lane2_lane = sum(1 for r in s2.results if r["lane"] == 2)
    lane2_nosync = sum(1 for r in s2_nosync.results if r["lane"] == 2)
    answers = {q["text"]: q["answer"] for q in lane2_qs}
    lane2_found = sum(1 for r in s2.results if r["summary"] and answers[r["text"]].lower() in r["summary"].lower())
    lane2_ok = sum(1 for r in s2.results if r["status"] == "ok")
    ordinary_none = sum(1 for r in s0.results if r["status"] == "none" and r["lane"] is None)

    log("baselines …")
    memory_md = memory.workspace(rt) / "MEMORY.md"
    parse50, parse95 = parse_baseline(memory_md, calls)
    raw = raw_fts_baselines(rt, lane2_texts, calls)
    log("lane-2 steps …")
    steps = lane2_steps(rt, lane2_texts, calls)
    step_p50 = dict(steps)

    info = machine()
    blocks = []
    blocks.append(
        f"Seeded home: {manifest.chunks:,} memory chunks from {manifest.files:,} real Markdown files "
        f"(MEMORY.md with {manifest.memory_items:,} items, {len(LANE1)} of them with trigger phrases; daily notes "
        f"and session excerpts) indexed by `Engine.memory_index()` with provider \"none\" "
        f"({manifest.seed_seconds.get('memory index (provider none)', 0):.0f} s); {manifest.messages:,} transcript "
        f"messages, {manifest.dm_messages:,} of them in DM sessions "
        f"({', '.join(f'{v} {k}' for k, v in manifest.sessions.items())}) seeded through the store API in "
        f"batches of {SEED_BATCH:,} ({manifest.seed_seconds.get('transcripts', 0):.0f} s). dmScope `main` "
        f"(rememberAcrossConversations on). Calls: `recall(rt, text, \"{MAIN_KEY}\", model=None)`, warm, "
        f"≥ {calls} timed calls per row (every message at least once).")
    rows = [
        ["(a) lane 1: strong trusted MEMORY.md hit", ms(s1.p50), ms(s1.p95), f"≤ {TARGET_LANE1_P50 * 1000:.0f}",
         "✅" if s1.p50 <= TARGET_LANE1_P50 else "❌", f"bare read+parse of MEMORY.md: {ms(parse50)}",
         ratio(s1.p50, parse50), f"lane 1 ok {lane1_ok}/{len(s1.results)}"],
        ["(b) deterministic lane 2: past question, no lane-1 hit", ms(s2.p50), ms(s2.p95),
         f"≤ {TARGET_LANE2_P50 * 1000:.0f}", "✅" if s2.p50 <= TARGET_LANE2_P50 else "❌",
         f"raw FTS5 on transcript table: {ms(raw['transcript'])} (+ memory chunks: {ms(raw['both'])})",
         f"{ratio(s2.p50, raw['transcript'])} ({ratio(s2.p50, raw['both'])})",
         f"lane 2 {lane2_lane}/{len(s2.results)}, ok {lane2_ok}, planted fact in summary {lane2_found}"],
        ["(b′) same, memory index sync skipped (what a watcher-kept index would cost)", ms(s2_nosync.p50),
         ms(s2_nosync.p95), f"≤ {TARGET_LANE2_P50 * 1000:.0f}", "✅" if s2_nosync.p50 <= TARGET_LANE2_P50 else "❌",
         f"raw FTS5 on transcript table: {ms(raw['transcript'])} (+ memory chunks: {ms(raw['both'])})",
         f"{ratio(s2_nosync.p50, raw['transcript'])} ({ratio(s2_nosync.p50, raw['both'])})",
         f"lane 2 {lane2_nosync}/{len(s2_nosync.results)}"],
        ["(c) ordinary message: lane-1 miss, no recall intent", ms(s0.p50), ms(s0.p95), "–", "",
         f"bare read+parse of MEMORY.md: {ms(parse50)}", ratio(s0.p50, parse50),
         f"status none {ordinary_none}/{len(s0.results)}"],
    ]
    blocks.append("### Active Memory added latency per turn (ms)\n\n" + md_table(
        ["case", "p50", "p95", "target p50", "", "baseline p50 (same run)", "ratio p50", "check"], rows))
    blocks.append("### Where a deterministic lane-2 recall spends its time (p50 per step, ms)\n\n" + md_table(
        ["step", "p50 ms", "share of lane-2 p50"],
        [[name, ms(value), f"{value / s2.p50 * 100:.0f}%"] for name, value in steps]))
    data: dict[str, Any] = {
        "machine": info, "manifest": {k: v for k, v in manifest.__dict__.items() if k not in ("lane1", "lane2")},
        "lane1": {"p50": s1.p50, "p95": s1.p95, "ok": lane1_ok, "n": len(s1.results), "missed": lane1_missed},
        "lane2": {"p50": s2.p50, "p95": s2.p95, "lane2": lane2_lane, "ok": lane2_ok, "found": lane2_found,
                  "n": len(s2.results), "answered_by_lane1_first": lane1_first},
        "lane2_without_sync": {"p50": s2_nosync.p50, "p95": s2_nosync.p95},
        "ordinary": {"p50": s0.p50, "p95": s0.p95},
        "baselines": {"parse_memory_md_p50": parse50, "parse_memory_md_p95": parse95, **raw},
        "steps_p50": step_p50, "dropped_not_past": dropped,
    }
    misses = []
    if s1.p50 > TARGET_LANE1_P50:
        misses.append(("lane 1", lane1_texts))
    if s2.p50 > TARGET_LANE2_P50:
        misses.append(("lane 2", lane2_texts))
    for name, texts in misses:
        log(f"profiling {name} (target missed) …")
        prof = profile_calls(rt, texts, calls)
        blocks.append(f"### cProfile of {name} ({calls} calls; target missed): most own time\n\n" + md_table(
            ["function", "own ms/call", "cumulative ms/call", "calls/recall"], prof))
        data[f"profile_{name}"] = prof
    log("lane-1 MEMORY.md size sweep …")
    sweep = lane1_size_sweep(sizes["lane1_sizes"], calls)
    blocks.append("### Lane 1 against MEMORY.md size (scratch home, same messages)\n\n" + md_table(
        ["MEMORY.md items", "size", "recall p50 ms", "p95 ms", "first call after an edit ms", "bare parse p50 ms",
         "ratio p50", "lane 1 hits"], sweep))
    data["lane1_sweep"] = sweep
    if lane1_missed:
        blocks.append(f"_{len(lane1_missed)} generated lane-1 messages did not hit lane 1 and are not in row (a): "
                      f"{'; '.join(lane1_missed[:4])}{' …' if len(lane1_missed) > 4 else ''}_")
    if lane1_first:
        blocks.append(f"_{len(lane1_first)} of the generated past questions were answered by lane 1 (a trusted "
                      f"entry's one-word trigger or most of its words occur in the question) and are not in row (b): "
                      f"{'; '.join(lane1_first[:4])}{' …' if len(lane1_first) > 4 else ''}_")
    if dropped:
        blocks.append(f"_{len(dropped)} generated past questions were not classified as past questions and were "
                      f"left out: {', '.join(dropped[:5])}{' …' if len(dropped) > 5 else ''}_")
    eng.close()
    return blocks, data


# =============================================================================================
# Compaction


IDENT_KINDS = ("ticket", "url", "path", "uuid", "version", "email", "sha", "tool-only")


def _identifiers(rng: random.Random) -> dict[str, str]:
    project = rng.choice(["api", "billing", "search", "mobile", "infra", "web"])
    return {
        "ticket": rng.choice([f"JIRA-{rng.randint(100, 9999)}", f"INC-2026{rng.randint(1000, 9999)}",
                              f"OPS-{rng.randint(10, 999)}", f"#{rng.randint(100, 9999)}"]),
        "url": rng.choice([f"https://github.com/acme/{project}/pull/{rng.randint(10, 999)}",
                           f"https://grafana.acme.dev/d/{rng.getrandbits(24):06x}/latency?orgId=1&from=now-6h",
                           f"https://docs.acme.dev/{project}/runbooks/restart-{rng.randint(1, 9)}.html"]),
        "path": rng.choice([f"/etc/{project}/config.yaml", f"~/src/{project}/Makefile",
                            f"/var/log/{project}/error-{rng.randint(1, 30)}.log",
                            f"./scripts/deploy_{project}.sh", f"src/{project}/handlers/users.py"]),
        "uuid": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
        "version": rng.choice([f"v{rng.randint(1, 4)}.{rng.randint(0, 20)}.{rng.randint(0, 9)}",
                               f"{rng.randint(1, 3)}.{rng.randint(0, 12)}.{rng.randint(0, 30)}"]),
        "email": f"{rng.choice(FIRST).lower()}.{rng.choice(['ops', 'dev', 'pm'])}@acme.example",
        "sha": rng.choice([f"{rng.getrandbits(28):07x}", f"{rng.getrandbits(160):040x}"]),
        "tool-only": f"/tmp/build-{rng.getrandbits(32):08x}/artifact.tar.gz",
    }


USER_TURNS = (
    "Can you look at {ticket}? It started after we shipped {version}.",
    "The failing run is {url} — the error mentions {path}.",
    "Please file it under {ticket} and cc {email}.",
    "We need to roll back commit {sha} before Friday.",
    "Record id {uuid} is the one that broke the import.",
    "Let's pin {version} and update {path} accordingly.",
    "I'll ping {email} about {ticket} after lunch.",
    "Here is the dashboard: {url}. Latency doubled since {version}.",
)
ASSISTANT_TURNS = (
    "I checked {ticket}: the regression comes from commit {sha}, which changed {path}.",
    "Decision: we keep {version} and revert only {sha}. Next step: update {url} with the notes.",
    "The record {uuid} fails validation; I suggest we ask {email} to re-export it.",
    "Noted. I'll draft the rollback for {ticket} and link {url}.",
    "The config at {path} still points to the old host; we should change it before {version} ships.",
)
TASKS = ("TODO: update the changelog for {version}.", "We need to notify {email} before the rollout.",
         "Don't forget to close {ticket} once verified.", "I'll write the postmortem for {ticket} tomorrow.")
DECISIONS = ("We decided to ship {version} on Thursday.", "Agreed: {ticket} is a blocker for the release.",
             "Decision: keep the old endpoint until {version}.")


@dataclass
class BuiltTranscript:
    session: SessionRecord
    planted: dict[int, list[tuple[str, str]]]  # seq → [(kind, identifier)]
    tasks: dict[int, list[str]]
    decisions: dict[int, list[str]]
    last_ts: int
    messages: int


def build_transcript(store: AgentStore, rng: random.Random, turns: int = 200) -> BuiltTranscript:
    key = f"agent:main:dashboard:{uuid.uuid4()}"  # not from rng: the same transcript is built more than once
    ts = NOW_MS - turns * 600_000
    session = SessionRecord(session_id=str(uuid.uuid4()), key=key, agent_id="main", kind="dashboard",
                            chat_type="direct", channel="dashboard", session_started_at=ts, updated_at=ts,
                            created_at=ts)
    planted: dict[int, list[tuple[str, str]]] = defaultdict(list)
    tasks: dict[int, list[str]] = defaultdict(list)
    decisions: dict[int, list[str]] = defaultdict(list)
    count = 0

    def add(role: str, content: list[dict], idents: list[tuple[str, str]], task: str | None = None,
            decision: str | None = None) -> None:
        nonlocal ts, count
        ts += rng.randint(5_000, 120_000)
        entry = transcript.append(store, EntryRecord(transcript.new_entry_id(), session.session_id, "message", ts,
                                                     role=role, content=content))
        planted[entry.seq] += idents
        if task:
            tasks[entry.seq].append(task)
        if decision:
            decisions[entry.seq].append(decision)
        count += 1

    with store.transaction():
        store.insert_session(session)
        for turn in range(turns):
            ids = _identifiers(rng)
            values = dict(ids)
            user = rng.choice(USER_TURNS)
            text = " ".join(filler(rng) for _ in range(rng.randint(0, 2)))
            user_text = (text + " " + user.format(**values)).strip()
            task = rng.choice(TASKS).format(**values) if turn % 9 == 3 else None
            if task:
                user_text += " " + task
            add("user", transcript.text_blocks(user_text),
                [(k, ids[k]) for k in IDENT_KINDS if k != "tool-only" and ids[k] in user_text], task)
            if turn % 7 == 5:  # a tool round trip: the identifier in the tool result only
                call_id = f"call_{rng.getrandbits(40):010x}"
                add("assistant", [{"type": "toolCall", "id": call_id, "name": "exec",
                                   "arguments": {"cmd": f"ls {ids['tool-only']}"}}], [("tool-only", ids["tool-only"])])
                add("tool", [{"type": "toolResult", "toolCallId": call_id, "isError": False,
                              "content": f"{ids['tool-only']}\n{rng.randint(1000, 99999)} bytes"}], [])
            reply = rng.choice(ASSISTANT_TURNS).format(**values)
            reply = " ".join([reply, *(filler(rng) for _ in range(rng.randint(1, 4)))])
            decision = rng.choice(DECISIONS).format(**values) if turn % 11 == 6 else None
            if decision:
                reply += " " + decision
            add("assistant", transcript.text_blocks(reply),
                [(k, ids[k]) for k in IDENT_KINDS if k != "tool-only" and ids[k] in reply], None, decision)
        fresh = store.get_session(session.session_id)
        assert fresh is not None
        fresh.message_count = count
        fresh.updated_at = fresh.last_interaction_at = ts
        store.update_session(fresh)
    return BuiltTranscript(fresh, planted, tasks, decisions, ts, count)


def bench_compaction(reps: int) -> tuple[list[str], dict[str, Any]]:
    from clawkeep.config import config_from_dict as _cfg  # noqa: PLC0415

    default_keep = _cfg({}).agents.defaults.compaction.keep_recent_tokens
    small_keep = 2_000
    scratch = DATA / "tmp" / f"recall-compaction-{os.getpid()}"
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    store = open_agent_store_file(scratch / "agent.sqlite", "main")
    rows, data = [], {}
    lost_examples: dict[str, set[str]] = defaultdict(set)
    try:
        for label, keep in ((f"default keepRecentTokens ({default_keep:,})", default_keep),
                            (f"small keepRecentTokens ({small_keep:,})", small_keep)):
            times, stats = [], []
            for rep in range(reps):
                built = build_transcript(store, random.Random(1000 + rep))
                start = time.perf_counter()
                result = compaction.compact(store, built.session, [], at=built.last_ts + 1000,
                                            keep_recent_tokens=keep)
                assert result.compacted and result.summary is not None
                compactions.record_compaction(store, built.session, result, at=built.last_ts + 1000)
                times.append(time.perf_counter() - start)
                messages, latest = compaction.active_messages(store, built.session)
                first_kept = latest.meta["firstKeptSeq"] if latest else 0
                older = [seq for seq in built.planted if seq < first_kept]
                per_kind: dict[str, list[int]] = defaultdict(lambda: [0, 0])
                for seq in older:
                    for kind, ident in built.planted[seq]:
                        per_kind[kind][1] += 1
                        if ident in result.summary:
                            per_kind[kind][0] += 1
                        else:
                            lost_examples[kind].add(ident)
                tasks = [t for seq in older for t in built.tasks.get(seq, [])]
                decisions = [d for seq in older for d in built.decisions.get(seq, [])]
                stats.append({
                    "compacted": result.compacted_messages, "kept": result.kept_messages,
                    "before": result.tokens_before, "after": result.tokens_after, "summary_chars": len(result.summary),
                    "kinds": {k: tuple(v) for k, v in per_kind.items()},
                    "tasks": (sum(1 for t in tasks if t in result.summary), len(tasks)),
                    "decisions": (sum(1 for d in decisions if d in result.summary), len(decisions)),
                })
            first = stats[0]
            text_kinds = [k for k in IDENT_KINDS if k != "tool-only"]
            kept_text = sum(first["kinds"].get(k, (0, 0))[0] for k in text_kinds)
            total_text = sum(first["kinds"].get(k, (0, 0))[1] for k in text_kinds)
            tool = first["kinds"].get("tool-only", (0, 0))
            rows.append([label, f"{first['compacted'] + first['kept']}", f"{first['compacted']}", f"{first['kept']}",
                         ms(percentile(times, 50)), ms(max(times)),
                         f"{first['before']:,} → {first['after']:,}", f"{first['summary_chars']:,}",
                         f"{kept_text}/{total_text}" + (" ✅" if kept_text == total_text else " ❌"),
                         f"{tool[0]}/{tool[1]}", f"{first['tasks'][0]}/{first['tasks'][1]}",
                         f"{first['decisions'][0]}/{first['decisions'][1]}"])
            data[label] = {"times": times, "stats": stats}
            kinds_row = [label] + [f"{first['kinds'].get(k, (0, 0))[0]}/{first['kinds'].get(k, (0, 0))[1]}"
                                   for k in IDENT_KINDS]
            data.setdefault("per_kind_rows", []).append(kinds_row)
    finally:
        store.close()
        shutil.rmtree(scratch, ignore_errors=True)
    blocks = ["### Compaction of a 200-turn transcript without a model (extractive summary, identifierPolicy "
              "strict)\n\n" + md_table(
                  ["keepRecentTokens", "messages", "compacted", "kept", "wall p50 ms", "wall max ms",
                   "tokens before → after", "summary chars", "identifiers of compacted user/assistant text "
                   "kept verbatim", "identifiers only in tool call/result kept", "open tasks kept verbatim",
                   "decisions kept verbatim"], rows),
              "Per identifier kind (kept/appearing in the compacted turns, first repetition):\n\n" + md_table(
                  ["keepRecentTokens", *IDENT_KINDS], data["per_kind_rows"])]
    if any(lost_examples.values()):
        examples = "; ".join(f"{k}: {', '.join(sorted(v)[:3])}" for k, v in lost_examples.items() if v)
        blocks.append(f"_Lost identifiers (examples): {examples}._")
    data["lost_examples"] = {k: sorted(v)[:10] for k, v in lost_examples.items()}
    blocks[0] += (f"\n\nTurns: user messages with 0–2 filler sentences plus identifiers (ticket ids, URLs, paths, "
                  f"UUIDs, versions, e-mails, SHAs), a task every 9th turn, a decision every 11th, a tool call + "
                  f"result every 7th. Wall time of `compact(store, session, [], at=…, keep_recent_tokens=…)` over "
                  f"{reps} fresh copies.")
    return blocks, data


# =============================================================================================
# Entry points


def run(quick: bool = False, calls: int | None = None, fresh: bool = False,
        only: tuple[str, ...] = ("recall", "compaction")) -> tuple[str, dict[str, Any]]:
    sizes = dict(QUICK if quick else FULL)
    calls = max(50, calls or sizes["calls"])
    info = machine()
    blocks: list[str] = [f"Machine: {info['cores']} cores ({info['cpu']}), Python {info['python']}, "
                         f"SQLite {info['sqlite']}, {info['os']}."]
    data: dict[str, Any] = {"mode": "quick" if quick else "full", "loadavg_start": load_average(), "machine": info}
    started = time.perf_counter()
    if "recall" in only:
        b, d = bench_recall(sizes, fresh, calls)
        blocks += b
        data["recall"] = d
    if "compaction" in only:
        log("compaction …")
        b, d = bench_compaction(sizes["compaction_reps"])
        blocks += b
        data["compaction"] = d
    data["seconds"] = time.perf_counter() - started
    data["loadavg_end"] = load_average()
    blocks.append(f"_Load average (1/5/15 min) at start: {data['loadavg_start']}; at end: {data['loadavg_end']} "
                  f"(2 cores shared with other work). Run took {data['seconds']:.0f} s._")
    return "\n\n".join(blocks), data


def section(progress: Any = None, quick: bool = False):
    """For `python -m bench --only recall`: the same run as a `bench.common.Section`."""
    from bench.common import Section  # noqa: PLC0415 - only when run through bench/__main__.py

    markdown, data = run(quick=quick)
    return Section("recall", "Active Memory latency and no-model compaction", [markdown], data)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="small corpus (smoke run)")
    p.add_argument("--calls", type=int, default=0, help="timed calls per case (≥ 50)")
    p.add_argument("--fresh", action="store_true", help="re-seed the cached home")
    p.add_argument("--only", default="recall,compaction", help="recall, compaction or both")
    p.add_argument("--no-write", action="store_true", help="do not write bench/results/recall_perf.md")
    args = p.parse_args(argv)
    only = tuple(x.strip() for x in args.only.split(",") if x.strip())
    markdown, data = run(quick=args.quick, calls=args.calls, fresh=args.fresh, only=only)
    head = f"# Active Memory latency and no-model compaction ({data['mode']})\n"
    print(head + "\n" + markdown)
    if not args.no_write:
        RESULTS.mkdir(parents=True, exist_ok=True)
        (RESULTS / "recall_perf.md").write_text(head + "\n" + markdown + "\n", encoding="utf-8")
        (RESULTS / "recall_perf.json").write_text(json.dumps(data, indent=1, ensure_ascii=False, default=str) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
