"""Narrative projection: wording carries the epistemic state, and the budget always holds."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgpack
import pytest
from read_world import WORLD, build, crowd, intervene, observe, open_reader, say, story, zh_story

from sidecar.read import MIN_BUDGET, NotFound, project
from sidecar.store import Reader

SEEN_EN = ("saw", "seen", "see ")
SEEN_ZH = ("看到", "看見", "親眼")


@pytest.fixture(scope="module")
def village(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The small story world with every section filled for alice."""
    return build(tmp_path_factory.mktemp("village") / "v.db", story())


@pytest.fixture(scope="module")
def reader(village: Path) -> Reader:
    """A reader on the village."""
    return open_reader(village)


@pytest.fixture(scope="module")
def crowded(tmp_path_factory: pytest.TempPathFactory) -> Reader:
    """A resident with about 400 beliefs, 25 of them contested or corrected."""
    return open_reader(build(tmp_path_factory.mktemp("crowd") / "c.db", crowd()))


@pytest.fixture(scope="module")
def padded(tmp_path_factory: pytest.TempPathFactory) -> Reader:
    """The crowd again, with contested subjects long enough to need cutting."""
    events = crowd(subject_pad=" because " + "of reasons " * 20)
    return open_reader(build(tmp_path_factory.mktemp("padded") / "p.db", events))


def _entries(n: object, section: str | None = None) -> list[dict[str, object]]:
    sections = n.sections  # type: ignore[attr-defined]
    return [e for s in sections if section in (None, s["name"]) for e in s["entries"]]


def _narrated(r: Reader, resident: str = "alice") -> int:
    """How many memories a narrative covers: every belief but ``believes:`` ones ("Bo
    claims…", which only repeat the told and corrected lines) and ``action:`` ones (told as
    episodes, one per actor and action), plus one trust line per source in the trust table."""
    beliefs = r.beliefs(WORLD, resident)
    plain = sum(1 for b in beliefs if not b.root.startswith(("believes:", "action:")))
    acts = sum(1 for b in beliefs if b.root.startswith("action:"))
    return plain + acts + len({row["source"] for row in r.trust(WORLD, resident)})


def _line(text: str, needle: str) -> str:
    return next(line for line in text.splitlines() if needle in line)


def test_full_text_has_sections_in_order(reader: Reader) -> None:
    """With room for everything, every section appears once, in the documented order."""
    n = project(reader, WORLD, "alice")
    assert not n.compressed and n.omitted == 0
    headings = [
        "What I am sure of:",
        "What I was told (unconfirmed):",
        "What I doubt:",
        "What struck me as wrong:",
        "What I used to believe:",
        "How I see people:",
        "Faded memories:",
    ]
    positions = [n.text.index(h) for h in headings]
    assert positions == sorted(positions)
    assert [s["name"] for s in n.sections] == [
        "sure", "believe", "told", "said", "acts", "doubts", "anomalies", "corrections", "owe",
        "goals", "people", "faded",
    ]  # fmt: skip


def test_bands_en(reader: Reader) -> None:
    """Firsthand confidence ≥85 reads "sure", 65–84 "think"; implants are "somehow remembered"."""
    text = project(reader, WORLD, "alice").text
    assert "- I'm sure that the key is on the counter (day 1)." in text
    assert "- I think the café door is closed (day 1)." in text
    assert "- I somehow remember that there is gold in the cellar (day 5)." in text


def test_unsure_band_after_soften(tmp_path: Path) -> None:
    """A firsthand belief softened below 65 but still influencing is "not certain"."""
    db = build(tmp_path / "s.db", [
        observe(1, ["alice"], "cat:where", "roof", "the cat is on the roof"),
        intervene(2, "alice", "soften", "cat:where"),
    ])  # fmt: skip
    r = open_reader(db)
    assert (
        "I'm not certain, but I think the cat is on the roof (day 1)."
        in project(r, WORLD, "alice").text
    )
    assert (
        "我不太確定，但我覺得the cat is on the roof（第1天）。"
        in project(r, WORLD, "alice", lang="zh-Hant").text
    )


def test_hearsay_names_its_sources(reader: Reader) -> None:
    """Hearsay says who told it, every source, and (once, in the heading) that it is
    unconfirmed."""
    n = project(reader, WORLD, "alice")
    assert "- Bob and gina told me that the mayor is angry (day 30)." in n.text
    assert n.text.count("unconfirmed") == 2  # the told heading, and the people section's line
    zh = project(reader, WORLD, "alice", lang="zh-Hant")
    assert "- bob和gina告訴我the mayor is angry（第30天）。" in zh.text


@pytest.mark.parametrize("budget", [MIN_BUDGET, 300, 450, 700, 2000])
def test_hearsay_never_phrased_as_seen(reader: Reader, crowded: Reader, budget: int) -> None:
    """No hearsay belief's line says it was seen, in either language, at any budget."""
    for r in (reader, crowded):
        for lang, seen in (("en", SEEN_EN), ("zh-Hant", SEEN_ZH)):
            n = project(r, WORLD, "alice", budget=budget, lang=lang)
            for e in _entries(n):
                if e["source_kind"] == "hearsay" and e["merged"] is None:
                    assert not any(word in str(e["text"]) for word in seen), e["text"]
                if e["source_kind"] == "hearsay":
                    text = str(e["text"]).lower()
                    named = str(e["source"]) in text or "someone" in text or "有人" in text
                    assert named, text


def test_implanted_never_phrased_as_seen_or_revealed(reader: Reader) -> None:
    """An implanted memory is "somehow remembered": not seen, not called an implant."""
    for lang, seen in (("en", SEEN_EN), ("zh-Hant", SEEN_ZH)):
        n = project(reader, WORLD, "alice", lang=lang)
        (entry,) = [e for e in _entries(n, "believe") if e["source_kind"] == "implanted"]
        text = str(entry["text"])
        assert not any(word in text for word in seen)
        assert "implant" not in text and "植入" not in text
        assert ("somehow remember" in text) if lang == "en" else ("不知怎的" in text)


def test_correction_phrased_used_to_think_until_saw(reader: Reader) -> None:
    """A correction reads "I used to think X (A told me), until I saw Y" (en and zh)."""
    en = project(reader, WORLD, "alice").text
    assert (
        "- I used to think the well water is poisoned (bob told me), "
        "until I saw the well water is clean on day 4. I first doubted it on day 3." in en
    )
    zh = project(reader, WORLD, "alice", lang="zh-Hant").text
    assert (
        "- 我以前以為the well water is poisoned（是bob告訴我的），"
        "直到第4天我親眼看到the well water is clean。第3天我就開始懷疑了。" in zh
    )


def test_correction_of_firsthand_belief(tmp_path: Path) -> None:
    """A firsthand belief corrected by firsthand evidence names no informant."""
    db = build(tmp_path / "c.db", [
        observe(1, ["alice"], "lamp:state", "on", "the lamp is on"),
        observe(2, ["alice"], "lamp:state", "off", "the lamp is off"),
        observe(3, ["alice"], "lamp:state", "off", "the lamp is off"),
    ])  # fmt: skip
    n = project(open_reader(db), WORLD, "alice")
    assert (
        "- I used to think the lamp is on, until I saw the lamp is off today. "
        "I first doubted it yesterday." in n.text
    )
    (entry,) = _entries(n, "corrections")
    assert entry["value_before"] == "on" and entry["subject_before"] == "the lamp is on"


def test_doubt_and_anomaly_wording(reader: Reader) -> None:
    """Doubts name who said what, and what contradicts it; anomalies say something is wrong."""
    en = project(reader, WORLD, "alice").text
    assert (
        "- I doubt what bob told me: the bridge is broken "
        "(carol told me otherwise: the bridge was fixed)." in en
    )
    assert "- Something strikes me as wrong: I remember that dave owns the silver ring" in en
    zh = project(reader, WORLD, "alice", lang="zh-Hant").text
    assert (
        "我開始懷疑bob告訴我的事：the bridge is broken"
        "（carol跟我說的不一樣：the bridge was fixed）。" in zh
    )
    assert "有件事不對勁：我記得dave owns the silver ring" in zh


def test_people_and_faded(reader: Reader) -> None:
    """Relation beliefs go under people; faded hearsay is "someone once told me"."""
    n = project(reader, WORLD, "alice")
    people = {e["root"] for e in _entries(n, "people")}
    assert people == {"relation:bob:alice", "relation:dave:alice", "trust:bob"}
    assert "- Carol told me that dave resents me (day 31, unconfirmed)." in n.text
    assert "- Someone once told me that the fair is in spring." in n.text
    zh = project(reader, WORLD, "alice", lang="zh-Hant").text
    assert "- 以前好像有人跟我說過the fair is in spring。" in zh


def test_zh_hant_natural_phrasing(tmp_path: Path) -> None:
    """Traditional Chinese subjects read as natural sentences in every section."""
    n = project(open_reader(build(tmp_path / "z.db", zh_story())), WORLD, "阿美", lang="zh-Hant")
    for expected in (
        "- 我很確定鑰匙在櫃檯上（第1天）。",
        "- 我認為咖啡館的門關著（第1天）。",
        "- 阿明告訴我鎮長在生氣（第2天）。",
        "- 我開始懷疑阿明告訴我的事：橋斷了（小芳跟我說的不一樣：橋已經修好了）。",
        "- 我以前以為井水有毒（是阿明告訴我的），直到昨天我親眼看到井水是乾淨的。第3天我就開始懷疑了。",
        "- 小芳告訴我大衛對我懷恨在心（第5天，未經證實）。",
    ):
        assert expected in n.text


def test_deterministic_and_wire_friendly(crowded: Reader) -> None:
    """The same beliefs give the same text; to_dict survives JSON and msgpack round trips."""
    a = project(crowded, WORLD, "alice", budget=1500)
    b = project(crowded, WORLD, "alice", budget=1500)
    assert a == b
    data = a.to_dict()
    assert json.loads(json.dumps(data)) == data
    assert msgpack.unpackb(msgpack.packb(data, use_bin_type=True), raw=False) == data


def test_errors(reader: Reader) -> None:
    """Unknown language or a budget under the minimum: ValueError; unknown resident: NotFound."""
    with pytest.raises(ValueError, match="language"):
        project(reader, WORLD, "alice", lang="fr")
    with pytest.raises(ValueError, match="at least 200"):
        project(reader, WORLD, "alice", budget=MIN_BUDGET - 1)
    with pytest.raises(NotFound):
        project(reader, WORLD, "nobody")


def test_known_resident_without_beliefs(reader: Reader, tmp_path: Path) -> None:
    """A resident the world knows but who believes nothing and said nothing gets a plain
    sentence; one who believes nothing but spoke remembers what it said (own words)."""
    register = {"event_id": "reg-quiet", "day": 0, "kind": "register",
                "residents": [{"resident": "quiet", "names": {"en": "Quiet"}}]}  # fmt: skip
    quiet = open_reader(build(tmp_path / "q.db", [register]))
    assert project(quiet, WORLD, "quiet").text == "I don't remember anything in particular."
    assert project(quiet, WORLD, "quiet", lang="zh-Hant").text == "我沒有什麼特別的記憶。"
    gossip = project(reader, WORLD, "bob").text
    assert gossip.startswith("What I told others:\n- I told alice that the mayor is angry")


# ------------------------------------------------------------------------------ budget


@pytest.mark.parametrize("lang", ["en", "zh-Hant"])
def test_crowd_within_budget_keeps_every_doubt_and_correction(crowded: Reader, lang: str) -> None:
    """400 beliefs in 2000 characters: within budget, all 25 protected beliefs still listed."""
    n = project(crowded, WORLD, "alice", budget=2000, lang=lang)
    assert n.compressed and len(n.text) <= 2000
    for section, count in (("doubts", 12), ("anomalies", 5), ("corrections", 8)):
        entries = _entries(n, section)
        assert len(entries) == count, section
        for e in entries:
            assert str(e["subject"]) in n.text


def test_crowd_merges_lines_and_counts_what_is_left_out(crowded: Reader) -> None:
    """Beliefs about one place share a line; the note counts exactly what is not shown."""
    n = project(crowded, WORLD, "alice", budget=2000)
    assert re.search(r"^- About (cafe|market|inn|mill|forge|chapel|dock|farm): ", n.text, re.M)
    merged = [e for e in _entries(n) if e["merged"]]
    assert len(merged) >= 2 and len({e["merged"] for e in merged}) >= 1
    shown = len(_entries(n))
    total = _narrated(crowded)
    assert total >= 395
    assert n.omitted == total - shown == sum(int(s["omitted"]) for s in n.sections)
    assert f"({n.omitted} more memories left out)" in n.text


def test_priority_people_before_plain_beliefs(crowded: Reader) -> None:
    """Under pressure, beliefs about people are kept before plain ones; faded ones go first."""
    n = project(crowded, WORLD, "alice", budget=2000)
    people = _entries(n, "people")
    assert len([e for e in people if str(e["root"]).startswith("relation:")]) == 10
    assert _entries(n, "faded") == []


def test_long_contested_subjects_are_whole_lines_or_counted(padded: Reader) -> None:
    """When contested subjects are too long, whole lines are shown and the rest counted:
    no line is cut inside (no "…" stub), and every contested belief is shown or counted."""
    for lang in ("en", "zh-Hant"):
        n = project(padded, WORLD, "alice", budget=2000, lang=lang)
        assert len(n.text) <= 2000
        assert "…" not in n.text
        for e in _entries(n, "doubts") + _entries(n, "corrections") + _entries(n, "anomalies"):
            assert " ".join(str(e["subject"]).split()) in n.text
        shown = {name: len(_entries(n, name)) for name in ("doubts", "anomalies", "corrections")}
        for name, total in (("doubts", 12), ("anomalies", 5), ("corrections", 8)):
            section = next(s for s in n.sections if s["name"] == name)
            assert shown[name] + section["omitted"] == total
            assert shown[name] == total or str(total - shown[name]) in n.text


def test_budget_is_a_hard_ceiling(crowded: Reader, padded: Reader) -> None:
    """Every budget from the minimum up is respected, in both languages."""
    for r in (crowded, padded):
        for budget in range(MIN_BUDGET, 4000, 163):
            for lang in ("en", "zh-Hant"):
                n = project(r, WORLD, "alice", budget=budget, lang=lang)
                assert len(n.text) <= budget, (budget, lang)
                assert n.omitted == _narrated(r) - len(_entries(n))


def test_tiny_budget_still_says_beliefs_are_contested(tmp_path: Path) -> None:
    """Hundreds of doubts in 200 characters: counted, never silently dropped."""
    events = []
    for i in range(300):
        events.append(say(1, "bob", ["alice"], f"d{i}", "yes", f"rumour {i} is true"))
        events.append(say(2, "carol", ["alice"], f"d{i}", "no", f"rumour {i} is false"))
    for i in range(150):
        events.append(say(1, "bob", ["alice"], f"c{i}", "bad", f"pie {i} is bad"))
        events.append(observe(2, ["alice"], f"c{i}", "good", f"pie {i} is good"))
        events.append(observe(3, ["alice"], f"c{i}", "good", f"pie {i} is good"))
    r = open_reader(build(tmp_path / "t.db", events))
    en = project(r, WORLD, "alice", budget=MIN_BUDGET)
    assert len(en.text) <= MIN_BUDGET
    doubts = len([e for e in _entries(en, "doubts")])
    assert f"(and {300 - doubts} more things I doubt)" in en.text or "300 things I doubt" in en.text
    assert "150" in en.text and "corrected" in en.text
    zh = project(r, WORLD, "alice", budget=MIN_BUDGET, lang="zh-Hant")
    assert len(zh.text) <= MIN_BUDGET and "懷疑" in zh.text and "糾正" in zh.text


def test_budget_large_enough_means_no_compression(crowded: Reader) -> None:
    """With room for everything nothing is merged or left out."""
    n = project(crowded, WORLD, "alice", budget=50_000)
    assert not n.compressed and n.omitted == 0 and "left out" not in n.text
    assert not any(e["merged"] for e in _entries(n))


# --------------------------------------------------------------------------------- CLI


def _cli(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "sidecar.cli", *args], capture_output=True, timeout=60
    )


def test_cli_narrative(village: Path) -> None:
    """`credence narrative` prints the text (UTF-8 for zh-Hant) or, with --json, the wire form."""
    out = _cli("narrative", "--db", str(village), "--world", WORLD, "--resident", "alice")
    assert out.returncode == 0, out.stderr
    assert out.stdout.decode("utf-8").startswith("What I am sure of:")
    zh = _cli("narrative", "--db", str(village), "--world", WORLD, "--resident", "alice",
              "--lang", "zh-Hant", "--budget", "300", "--json")  # fmt: skip
    assert zh.returncode == 0, zh.stderr
    data = json.loads(zh.stdout.decode("utf-8"))
    assert data["lang"] == "zh-Hant" and len(data["text"]) <= 300 and data["compressed"]


def test_cli_narrative_errors(village: Path, tmp_path: Path) -> None:
    """Missing database, unknown world or resident and a tiny budget exit 2 with a message."""
    cases = [
        (
            ["--db", str(tmp_path / "none.db"), "--world", WORLD, "--resident", "alice"],
            "no database",
        ),
        (["--db", str(village), "--world", "elsewhere", "--resident", "alice"], "no world"),
        (["--db", str(village), "--world", WORLD, "--resident", "nobody"], "unknown"),
        (
            ["--db", str(village), "--world", WORLD, "--resident", "alice", "--budget", "10"],
            "must be an integer from 200 to 50000, not 10",
        ),
    ]
    for args, message in cases:
        out = _cli("narrative", *args)
        assert out.returncode == 2 and message in out.stderr.decode(), (args, out.stderr)
    assert not (tmp_path / "none.db").exists()


# ------------------------------------------------------------------- issue 18 wording


def test_a_suppressed_memory_is_not_narrated_and_firsthand_brings_it_back(tmp_path: Path) -> None:
    """suppress hides a memory from the narrative (not "faded"); seeing it again revives it."""
    events = [
        observe(1, ["alice"], "letter:hidden", "mill", "Ana hid a letter under the mill"),
        intervene(2, "alice", "suppress", "letter:hidden"),
    ]
    db = build(tmp_path / "s.db", events)
    assert "letter" not in project(open_reader(db), WORLD, "alice").text
    db = build(
        tmp_path / "t.db",
        [
            *events,
            observe(3, ["alice"], "letter:hidden", "mill", "Ana hid a letter under the mill"),
        ],
    )
    assert "Ana hid a letter under the mill" in project(open_reader(db), WORLD, "alice").text


def test_an_active_intervention_is_never_dropped_under_budget(tmp_path: Path) -> None:
    """An implanted memory stays in the text at the smallest budget, beside 60 plain facts."""
    events = [
        observe(1, ["alice"], f"item{i}:where", "inn", f"item {i} lies at the inn {i}")
        for i in range(60)
    ]
    events.append(
        intervene(2, "alice", "implant", "cellar:gold", "yes", "there is gold in the cellar")
    )
    r = open_reader(build(tmp_path / "i.db", events))
    for lang in ("en", "zh-Hant"):
        n = project(r, WORLD, "alice", budget=MIN_BUDGET, lang=lang)
        assert "there is gold in the cellar" in n.text, n.text


def test_tellers_by_origin_interpretation_past_event_and_no_stray_capital(tmp_path: Path) -> None:
    """Every teller named, a repeated telling as "repeated it"; an interpretation follows
    its line; a day now past reads in the past; "The …" is embedded as "the …"."""
    r = open_reader(
        build(
            tmp_path / "o.db",
            [
                say(1, "bob", ["alice", "carol"], "well:water", "bad", "The well water is bad"),
                say(2, "carol", ["alice"], "well:water", "bad", "the well water is bad"),
                say(3, "dave", ["alice"], "well:water", "bad", "the well water is bad"),
                say(3, "erin", ["alice"], "fair:day", 5, "the fair is on day 5"),
                observe(
                    4,
                    ["alice"],
                    "fence:north",
                    "broken",
                    "Kai broke the fence",
                    interpretations={"alice": "he did it on purpose"},
                ),
                {"event_id": "tick-9", "day": 9, "kind": "tick"},
            ],
        )
    )
    text = project(r, WORLD, "alice").text
    assert "Bob and dave told me that the well water is bad, and carol repeated it (day 1)." in text
    assert "Erin told me that the fair was on day 5 (day 3)." in text
    assert "Kai broke the fence (day 4). I think he did it on purpose." in text
    assert "The well" not in text


def test_lost_trust_outranks_a_routine_act(tmp_path: Path) -> None:
    """A trust line's score does not use the trust value as its confidence: "I distrust bob"
    is kept before another's routine chores when only one of them fits."""
    events = [
        say(1, "bob", ["alice"], "well:water", "poisoned", "the well water is poisoned"),
        observe(2, ["alice"], "well:water", "clean", "the well water is clean"),
        observe(3, ["alice"], "well:water", "clean", "the well water is clean"),
    ]
    events += [
        {"event_id": f"a{d}", "day": d, "kind": "act", "actor": "kai", "action": "feed_hens",
         "status": "completed", "witnesses": ["alice"]}
        for d in range(3, 9)
    ]  # fmt: skip
    r = open_reader(build(tmp_path / "t.db", events))
    kept = []
    for budget in range(MIN_BUDGET, 600, 10):
        n = project(r, WORLD, "alice", budget=budget)
        if "fed the hens" in n.text:
            assert "I distrust bob" in n.text, n.text
        kept.append("I distrust bob" in n.text and "fed the hens" not in n.text)
    assert any(kept)  # some budget holds the trust line and not the chores
    trust = next(e for e in _entries(n, "people") if e["root"] == "trust:bob")
    assert trust["why"]["confidence"] == 1.0 and trust["why"]["importance"] == 1.0


@pytest.mark.parametrize(
    ("lang", "pattern"),
    [
        ("en", r"- T0(, t\d+){4} and 15 others told me that the mill burned down \(day 1\)\."),
        ("zh-Hant", r"t0(、t\d+){4}和另外15人"),
    ],
)
def test_a_rumour_half_the_town_told_names_five_and_counts_the_rest(
    tmp_path: Path, lang: str, pattern: str
) -> None:
    """Twenty tellers of one rumour: its line names five and counts the rest, so it stays a
    line an NPC can read (it named all twenty, in both languages)."""
    tellers = [f"t{i}" for i in range(20)]
    r = open_reader(
        build(
            tmp_path / "crowd.db",
            [say(1, t, ["alice"], "mill:state", "burned", "the mill burned down") for t in tellers],
        )
    )
    text = project(r, WORLD, "alice", lang=lang).text
    assert re.search(pattern, text), text
    assert len(set(re.findall(r"(?<![A-Za-z0-9])[tT]\d+(?![0-9])", text))) == 5


def test_a_source_trusted_on_fifty_topics_is_one_bounded_entry(tmp_path: Path) -> None:
    """Alice trusts Bob in general and on 50 topics: the people entry lists the 20 topics
    furthest from her general trust, and counts all 50 (it listed every topic)."""
    events: list[dict[str, Any]] = [
        {"event_id": "g", "day": 1, "kind": "trust", "resident": "alice", "source": "bob",
         "value": 0.5},
    ] + [
        {"event_id": f"t{i}", "day": 1, "kind": "trust", "resident": "alice", "source": "bob",
         "topic": f"topic{i:02d}", "value": round(0.5 + (i - 25) / 60, 4)}
        for i in range(50)
    ]  # fmt: skip
    r = open_reader(build(tmp_path / "topics.db", events))
    narrative = project(r, WORLD, "alice")
    (entry,) = [
        e for s in narrative.sections if s["name"] == "people" for e in s["entries"]
        if e.get("person") == "bob"
    ]  # fmt: skip
    assert entry["topic_trust_count"] == 50
    furthest = sorted(range(50), key=lambda i: (-abs(i - 25), f"topic{i:02d}"))[:20]
    assert sorted(entry["topic_trust"]) == sorted(f"topic{i:02d}" for i in furthest)
