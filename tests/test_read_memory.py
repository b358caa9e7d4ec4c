"""What the NPC's LLM reads (issue 10): ranking for a focus, bulk facts in one line, acts as
episodes, trust in the people section, and the beliefs filters behind a behaviour tree."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from read_world import WORLD, build, observe, open_reader, say
from wsclient import rebuild_check

from sidecar.read import Focus, project
from sidecar.read.packing import BULK_SAMPLE
from sidecar.store import BeliefFilter, Reader

_n = iter(range(1, 1_000_000))


def act(day: float, actor: str, action: str, status: str, witnesses: list[str]) -> dict[str, Any]:
    return {"event_id": f"a{next(_n)}", "day": day, "kind": "act", "actor": actor,
            "action": action, "status": status, "witnesses": witnesses}  # fmt: skip


def crowded_town() -> list[dict[str, Any]]:
    """The issue's failing case: 120 ordinary trees seen twice (sure), then a few rumours,
    one of them about the well, and Bo's lie that Mira later sees through."""
    events: list[dict[str, Any]] = []
    for i in range(120):
        for day in (1, 2):
            events.append(observe(day, ["mira"], f"tree:{i}", "oak", f"an oak stands at spot {i}"))
    events.append(say(3, "bo", ["mira"], "water:well", "poisoned", "the well is poisoned",
                      places=["well"], importance=0.8))  # fmt: skip
    events.append(say(4, "tom", ["mira"], "festival:day", 12, "the festival is on day 12"))
    events.append(say(5, "kai", ["mira"], "mill:owner", "ana", "Ana owns the mill",
                      places=["mill"]))  # fmt: skip
    events.append(observe(6, ["mira"], "bridge:state", "fixed", "the bridge is fixed",
                          places=["bridge"]))  # fmt: skip
    return events


@pytest.fixture(scope="module")
def town(tmp_path_factory: pytest.TempPathFactory) -> Reader:
    return open_reader(build(tmp_path_factory.mktemp("town") / "t.db", crowded_town()))


def _section(n: Any, name: str) -> list[dict[str, Any]]:
    return next(s for s in n.sections if s["name"] == name)["entries"]  # type: ignore[no-any-return]


def test_bulk_facts_collapse_and_hearsay_survives_a_2000_budget(town: Reader) -> None:
    """120 sure trees become one line; every rumour is still in the text at 2,000 chars."""
    for lang, bulk in (
        ("en", "I know of 120 things of this kind (tree)"),
        ("zh-Hant", "我知道120件"),
    ):
        n = project(town, WORLD, "mira", budget=2000, lang=lang)
        assert len(n.text) <= 2000
        assert bulk in n.text
        assert n.text.count("oak stands") == 1
        sure = _section(n, "sure")  # the bulk line lists a sample and counts every tree
        bulk_entries = [e for e in sure if e["merged"] == "tree"]
        assert len(bulk_entries) == BULK_SAMPLE
        assert {e["members"] for e in bulk_entries} == {120}
        assert next(s for s in n.sections if s["name"] == "sure")["omitted"] == 0
        told = {e["root"] for e in _section(n, "told")}
        assert told == {"water:well", "festival:day", "mill:owner"}


def test_sure_section_holds_only_sure_lines(town: Reader) -> None:
    """Firsthand beliefs below 85 go to "what I think", not "what I am sure of"."""
    n = project(town, WORLD, "mira", budget=5000)
    assert {e["band"] for e in _section(n, "sure")} == {"sure"}
    assert [e["root"] for e in _section(n, "believe")] == ["bridge:state"]
    assert "I think the bridge is fixed (day" in n.text


def test_focus_ranks_what_bears_on_it_first_and_says_why(town: Reader) -> None:
    """With the well in focus, the well rumour leads the told section; its why names the
    matched term and the score's parts."""
    n = project(town, WORLD, "mira", budget=2000, focus=Focus(places=("well",)))
    first = _section(n, "told")[0]
    assert first["root"] == "water:well"
    why = first["why"]
    assert why["matched"] == ["place:well"] and why["tier"] == 2
    assert why["importance"] == 0.8 and why["relevance"] == 0.5
    assert why["score"] == pytest.approx(
        3 * why["relevance"] + why["recency"] + why["importance"] + 0.5 * why["confidence"],
        abs=1e-3,
    )
    unfocused = project(town, WORLD, "mira", budget=2000)
    assert all(e["why"]["matched"] == [] for s in unfocused.sections for e in s["entries"])


def test_under_a_tight_budget_focused_hearsay_beats_sure_facts(town: Reader) -> None:
    """At 250 characters (not everything fits), the focused rumour is kept and the bulk trees
    are not."""
    n = project(town, WORLD, "mira", budget=250, focus=Focus(people=("kai",)))
    assert "Ana owns the mill" in n.text
    assert "oak" not in n.text
    assert len(n.text) <= 250 and n.omitted > 0


def test_ranking_is_deterministic(town: Reader) -> None:
    """The same world and focus give byte-identical text and sections."""
    focus = Focus(places=("mill",), topics=("festival",))
    a = project(town, WORLD, "mira", budget=700, focus=focus)
    b = project(town, WORLD, "mira", budget=700, focus=focus)
    assert a.text == b.text
    assert json.dumps(a.to_dict(), sort_keys=True) == json.dumps(b.to_dict(), sort_keys=True)


# --------------------------------------------------------------------------- acts


@pytest.fixture(scope="module")
def chores(tmp_path_factory: pytest.TempPathFactory) -> Reader:
    events = [act(d, "mira", "fetch_water", "completed", ["kai"]) for d in range(1, 21)]
    events.append(act(21, "mira", "fetch_water", "rejected", ["kai"]))
    events.append(act(21, "kai", "go_home", "completed", ["mira"]))
    return open_reader(build(tmp_path_factory.mktemp("chores") / "c.db", events))


def test_acts_read_as_episodes_in_the_first_person(chores: Reader) -> None:
    """20 fetches and one refusal: both hold, in one line, and no doubt about fetching."""
    n = project(chores, WORLD, "mira")
    assert (
        "- I fetched water 20 times, last yesterday. "
        "Today, my attempt to fetch water was refused." in n.text
    )
    assert "- Kai went home today." in n.text  # a sentence starts with a capital
    assert "doubt" not in n.text and "did fetch water" not in n.text
    (mine,) = [e for e in _section(n, "acts") if e["actor"] == "mira"]
    assert mine["episodes"] == {"completed": 20, "rejected": 1}


def test_acts_seen_by_another_resident_and_in_zh_hant(chores: Reader) -> None:
    """Kai saw Mira's fetches; the same episodes read in Traditional Chinese too."""
    n = project(chores, WORLD, "kai")
    assert "- Mira fetched water 20 times" in n.text
    assert "Today, mira's attempt to fetch water was refused." in n.text
    zh = project(chores, WORLD, "mira", lang="zh-Hant").text
    assert "我fetch water了20次，最近一次是昨天。今天我想要fetch water，但被拒絕了。" in zh


def test_routine_acts_do_not_announce_a_change_every_day(chores: Reader) -> None:
    """Once an action belief is at 100, further completions add evidence, not change records."""
    history = chores.history(WORLD, "mira", "action:mira:fetch_water")
    assert [c.kind.value for c in history][:4] == [
        "formed",
        "reinforced",
        "reinforced",
        "reinforced",
    ]
    assert len(history) == 5  # formed, three reinforcements to 100, the refusal's doubt
    belief = chores.belief(WORLD, "mira", "action:mira:fetch_water")
    assert belief is not None and belief.evidence_count == 21 and len(belief.evidence_refs) == 10


# --------------------------------------------------------------------------- trust


def test_people_section_says_whom_i_distrust_and_why(tmp_path: Path) -> None:
    """Bo's lie, seen through: "I distrust bo: what bo told me proved false", the pair itself
    said once, by the correction line."""
    r = open_reader(
        build(
            tmp_path / "w.db",
            [
                say(1, "bo", ["mira"], "water:well", "poisoned", "the well is poisoned"),
                observe(2, ["mira"], "water:well", "clean", "the well is clean"),
                observe(3, ["mira"], "water:well", "clean", "the well is clean"),
                say(4, "tom", ["mira"], "bread:price", "high", "bread is dear"),
                observe(5, ["mira"], "bread:price", "high", "bread is dear"),
            ],
        )
    )
    n = project(r, WORLD, "mira")
    people = {e["person"]: e for e in _section(n, "people") if e.get("person")}
    assert people["bo"]["trust"] == 0.35 and people["bo"]["reason"]["change"] == "corrected"
    assert "- I distrust bo: what bo told me proved false." in n.text
    assert n.text.count("the well is poisoned") == 1  # the correction line, not again
    assert "the well is poisoned (bo told me), until I saw the well is clean" in n.text
    assert people["tom"]["trust"] == 0.65
    assert "I am not sure how far to trust tom: tom told me that bread is dear" in n.text
    zh = project(r, WORLD, "mira", lang="zh-Hant").text
    assert "我不信任bo：bo跟我說的結果不是真的" in zh


# --------------------------------------------------------------------------- beliefs filters


def test_belief_filters(town: Reader) -> None:
    """Root, prefix, states, places, people and minimum confidence narrow a listing."""
    one = town.beliefs(WORLD, "mira", where=BeliefFilter(root="water:well"))
    assert [b.root for b in one] == ["water:well"]
    trees = town.beliefs(WORLD, "mira", where=BeliefFilter(prefixes=("tree:",)))
    assert len(trees) == 120
    both = town.beliefs(WORLD, "mira", where=BeliefFilter(prefixes=("mill:", "water:")))
    assert [b.root for b in both] == ["mill:owner", "water:well"]
    at = town.beliefs(WORLD, "mira", where=BeliefFilter(places=("well", "bridge")))
    assert [b.root for b in at] == ["bridge:state", "water:well"]
    sure = town.beliefs(WORLD, "mira", where=BeliefFilter(min_confidence=86))
    assert len(sure) == 120
    told_by_bo = town.beliefs(WORLD, "mira", where=BeliefFilter(people=("bo",)))
    assert [b.root for b in told_by_bo] == ["believes:bo:water:well"]
    states = town.beliefs(WORLD, "mira", where=BeliefFilter(states=("doubtful",)))
    assert states == []


def test_cli_beliefs_and_focused_narrative(tmp_path: Path) -> None:
    """credence beliefs filters like the query; credence narrative takes a focus."""
    db = build(tmp_path / "cli.db", crowded_town())
    base = [sys.executable, "-m", "sidecar.cli"]
    out = subprocess.run(
        [*base, "beliefs", "--db", str(db), "--world", WORLD, "--resident", "mira",
         "--place", "well", "--json"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert [b["root"] for b in json.loads(out.stdout)] == ["water:well"]
    text = subprocess.run(
        [*base, "narrative", "--db", str(db), "--world", WORLD, "--resident", "mira",
         "--budget", "300", "--person", "kai"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert "Ana owns the mill" in text
    missing = subprocess.run(
        [*base, "beliefs", "--db", str(db), "--world", WORLD, "--resident", "nobody"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert missing.returncode == 2 and "nobody" in missing.stderr


# --------------------------------------------------------------------------- registry


def register(day: float = 0) -> dict[str, Any]:
    return {
        "event_id": f"r{next(_n)}", "day": day, "kind": "register",
        "residents": [
            {"resident": "mira", "names": {"en": "Mira", "zh-Hant": "米拉"}},
            {"resident": "kai", "names": {"en": "Kai", "zh-Hant": "阿凱"}},
            {"resident": "bo", "names": {"en": "Bo", "zh-Hant": "阿博"}},
            {"resident": "ana", "names": {"en": "Ana"}},
        ],
        "actions": [{"action": "fetch_water", "names": {"en": "fetch water", "zh-Hant": "打水"}}],
    }  # fmt: skip


@pytest.fixture(scope="module")
def named(tmp_path_factory: pytest.TempPathFactory) -> Reader:
    events = [register()]
    events += [act(d, "mira", "fetch_water", "completed", ["kai"]) for d in (1, 2)]
    events.append(act(3, "mira", "fetch_water", "rejected", ["kai"]))
    events.append(say(3, "bo", ["kai"], "water:well", "poisoned", "the well is poisoned"))
    events.append(observe(4, ["kai"], "water:well", "clean", "the well is clean"))
    events.append(observe(4, ["kai"], "water:well", "clean", "the well is clean"))
    return open_reader(build(tmp_path_factory.mktemp("named") / "n.db", events))


def test_registered_names_replace_ids_in_both_languages(named: Reader) -> None:
    """Kai's narrative names Mira and Bo, never their ids; the action reads in its label."""
    en = project(named, WORLD, "kai").text
    assert "- Mira fetched water 2 times, last on day 2. Yesterday, Mira's attempt" in en
    assert "I distrust Bo: what Bo told me proved false." in en
    assert "(Bo told me)" in en
    assert "mira" not in en and "bo " not in en
    zh = project(named, WORLD, "kai", lang="zh-Hant").text
    assert "米拉打了2次水，最近一次是第2天。昨天米拉想要打水，但被拒絕了。" in zh
    assert "我不信任阿博：阿博跟我說的結果不是真的" in zh and "是阿博告訴我的" in zh
    mine = project(named, WORLD, "mira", lang="zh-Hant").text
    assert "我打了2次水" in mine and "昨天我想要打水，但被拒絕了。" in mine


def test_a_registered_resident_without_memories_gets_an_empty_narrative(named: Reader) -> None:
    """Ana is only registered: her narrative is the empty one, not not_found."""
    for lang, empty in (
        ("en", "I don't remember anything in particular."),
        ("zh-Hant", "我沒有什麼特別的記憶。"),
    ):
        assert project(named, WORLD, "ana", lang=lang).text == empty
    assert named.registry(WORLD)["residents"]["ana"] == {"en": "Ana"}


def test_focus_matches_registered_names_in_subjects(tmp_path: Path) -> None:
    """A focus on person "ana" matches a subject that names her "Ana"."""
    r = open_reader(build(tmp_path / "f.db", [register(), *crowded_town()]))
    n = project(r, WORLD, "mira", focus=Focus(people=("ana",)))
    told = _section(n, "told")
    assert told[0]["root"] == "mill:owner" and told[0]["why"]["matched"] == ["person:ana"]


def test_register_is_logged_and_rebuilds_exactly(tmp_path: Path) -> None:
    """rebuild --check replays the register event into the same registry."""
    db = build(tmp_path / "r.db", [register(), act(1, "mira", "fetch_water", "completed", [])])
    rebuild_check(db)


@pytest.mark.parametrize("lang", ["en", "zh-Hant"])
def test_under_any_budget_focused_lines_come_before_plain_sure_facts(
    town: Reader, lang: str
) -> None:
    """Budget sweep with Tom and Kai in focus, both languages: the budget holds, the omitted
    count is exact, and no plain sure fact is shown while what Tom or Kai told is left out."""
    focus = Focus(people=("tom", "kai"))
    told_by_focus = {"festival:day", "mill:owner"}
    for budget in range(200, 2400, 97):
        n = project(town, WORLD, "mira", budget=budget, lang=lang, focus=focus)
        assert len(n.text) <= budget
        assert n.omitted == sum(int(s["omitted"]) for s in n.sections)
        told = {e["root"]: e for e in _section(n, "told")}
        for root in told_by_focus & told.keys():
            assert told[root]["why"]["tier"] == 2 and told[root]["why"]["matched"]
        if any(not e["why"]["matched"] for e in _section(n, "sure")):
            assert told_by_focus <= told.keys(), (budget, n.text)


def test_own_subjects_read_in_the_first_person(tmp_path: Path) -> None:
    """Subjects that start with the resident's own name (id or registered, any case) read as
    "I"/"my"/"我"; a correction by one's own doing is "until I drew…", not "until I saw I…"."""
    r = open_reader(
        build(
            tmp_path / "self.db",
            [
                register(),
                say(1, "bo", ["mira"], "water:well", "poisoned", "the well is poisoned"),
                observe(2, ["mira"], "water:well", "clean", "Mira drew a bucket; it is clear"),
                observe(3, ["mira"], "water:well", "clean", "Mira drew a bucket; it is clear"),
                observe(3, ["mira"], "mira:bucket", "full", "mira's bucket is full"),
                observe(3, ["mira"], "kai:bucket", "empty", "Miranda's bucket is empty"),
                observe(3, ["mira", "kai"], "rope:state", "frayed", "米拉的繩子磨損了"),
            ],
        )
    )
    en = project(r, WORLD, "mira").text
    assert "(Bo told me), until I drew a bucket; it is clear today." in en
    assert "I think my bucket is full (day 3)." in en
    assert "I think Miranda's bucket is empty (day 3)." in en  # not a self-name: left alone
    assert re.search(r"\bMira\b", en) is None  # never named by its own name (Miranda is not it)
    zh = project(r, WORLD, "mira", lang="zh-Hant").text
    assert "我認為我的繩子磨損了（第3天）。" in zh
    assert "直到今天我drew a bucket" in zh  # an English subject, the name still not said
    assert "Mira" not in zh and "米拉" not in zh
    kai = project(r, WORLD, "kai", lang="zh-Hant").text
    assert "我認為米拉的繩子磨損了（第3天）。" in kai  # someone else's subject keeps the name


@pytest.mark.parametrize("lang", ["en", "zh-Hant"])
def test_a_narrative_reads_the_names_it_shows_not_the_registry(
    tmp_path: Path, lang: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A world that registered 3,000 residents: Mira's narrative names her three tellers by
    their registered names, reading the names of the residents it names (a handful), never
    the whole registry (a narrative took 16.6 ms at 10,000 names, 90.8 at 50,000)."""
    names = {"en": "Teller", "zh-Hant": "說者"}
    crowd = [
        {"resident": f"t{n:04d}", "names": {k: f"{v}{n}" for k, v in names.items()}}
        for n in range(3000)
    ]
    events = [{"event_id": f"g{i}", "day": 0, "kind": "register", "residents": crowd[i : i + 250]}
              for i in range(0, 3000, 250)]  # fmt: skip
    events += [say(1 + n, f"t{n:04d}", ["mira"], f"news:{n}", "yes", f"news {n}") for n in range(3)]
    r = open_reader(build(tmp_path / "crowd.db", events))
    asked: list[str] = []
    names_of = Reader.names_of

    def counted(self: Reader, world: str, resident: str) -> dict[str, str] | None:
        asked.append(resident)
        return names_of(self, world, resident)

    def whole(self: Reader, world: str) -> Any:
        raise AssertionError("the whole registry was read")

    monkeypatch.setattr(Reader, "names_of", counted)
    monkeypatch.setattr(Reader, "registry", whole)
    n = project(r, WORLD, "mira", budget=2000, lang=lang)
    for t in range(3):
        assert f"{names[lang]}{t}" in n.text
    assert len(set(asked)) <= 10 and len(asked) == len(set(asked))  # each read once
