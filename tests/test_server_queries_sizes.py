"""Every query answers at any size: a reply always comes, every frame under the limit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgpack
import orjson
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from wsclient import WsClient, running

from protocol import MAX_OUTBOUND, parse_client_frame
from sidecar.engine import parse_event
from sidecar.engine.rules import Rules
from sidecar.read import project
from sidecar.read.narrative import Focus
from sidecar.server.queries import answer
from sidecar.store import Reader, ResultStatus, Writer
from tools.querybench import story

WORLD = "bench"
#: Residents of the shared world: how many beliefs each holds, and what kind.
RESIDENTS = ("mira", "similar", "zh", "few", "quiet")


def _similar(n: int) -> list[dict[str, Any]]:
    """``n`` similar facts (one root family): one bulk line."""
    return [
        {"event_id": f"sim{i}", "day": 400.0, "kind": "observe", "witnesses": ["similar"],
         "claim": {"root": f"tree:{i}", "value": "oak"},
         "subject": f"an old oak stands at spot {i} by the mill road", "places": ["mill"]}
        for i in range(n)
    ]  # fmt: skip


def _zh() -> list[dict[str, Any]]:
    """Chinese subjects, hearsay and doubts: three bytes a character on the wire."""
    out: list[dict[str, Any]] = []
    for i in range(1_200):
        out.append({"event_id": f"zh{i}", "day": 400.0, "kind": "say", "speaker": "阿明",
                    "listeners": ["zh"], "claim": {"root": f"傳聞:{i % 37}:{i}", "value": i},
                    "subject": f"第{i}號傳聞說市集的橋在夜裡被人修好了，" + "詳細" * (i % 9)})  # fmt: skip
        if i % 5 == 0:
            out.append({"event_id": f"zhx{i}", "day": 400.0, "kind": "say", "speaker": "小芳",
                        "listeners": ["zh"], "claim": {"root": f"傳聞:{i % 37}:{i}",
                        "value": -i}, "subject": f"第{i}號傳聞是假的"})  # fmt: skip
    return out


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One world: mira (about 2,000 beliefs, one seen 4,000 times), 300 similar facts,
    1,200 Chinese rumours (more than 50,000 characters), a few beliefs, and a resident who knows nothing."""
    path = tmp_path_factory.mktemp("sizes") / "sizes.db"
    writer = Writer(path, rules=Rules(late_event_days=1000.0), synchronous="OFF")
    events = [*story(2_000, 4_000), *_similar(300), *_zh()]
    events += story(12, 2, resident="few", tag="few", seed=3)
    events += [{"event_id": f"vote{i}", "day": 400.0, "kind": "say", "speaker": "mayor",
                "listeners": [f"voter{i}"], "claim": {"root": "vote:day", "value": i},
                "subject": f"the vote is on day {i}"} for i in range(120)]  # fmt: skip
    events += [{"event_id": f"trust{i}", "day": 400.0, "kind": "trust", "resident": "few",
                "source": "t01", "value": 0.3 + i / 100} for i in range(30)]  # fmt: skip
    events += [{"event_id": "reg", "day": 400.0, "kind": "register",
                "residents": [{"resident": "quiet", "names": {"en": "Quiet"}}]}]  # fmt: skip
    try:
        for start in range(0, len(events), 500):
            batch = [(WORLD, parse_event(e)) for e in events[start : start + 500]]
            bad = [r for r in writer.apply(batch) if r.status is not ResultStatus.APPLIED]
            assert not bad, bad[0]
    finally:
        writer.close()
    return path


@pytest.fixture(scope="module")
def reader(world: Path) -> Reader:
    return Reader(world)


def _check_frames(frames: list[dict[str, Any]], kind: str) -> None:
    """Every part fits in a frame in both encodings, numbered, ``more`` on all but the last."""
    assert frames and {f["type"] for f in frames} == {kind}
    for part, frame in enumerate(frames):
        assert len(msgpack.packb(frame, use_bin_type=True)) <= MAX_OUTBOUND
        assert len(orjson.dumps(frame)) <= MAX_OUTBOUND
        assert (frame["part"], frame["more"]) == (part, part < len(frames) - 1)


def _joined_sections(frames: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """SPEC §11: concatenate ``sections``, then join runs of one section."""
    out: list[dict[str, Any]] = []
    for frame in frames:
        for section in frame["sections"]:
            if out and out[-1]["name"] == section["name"]:
                out[-1]["entries"] += section["entries"]
            else:
                out.append({**section, "entries": list(section["entries"])})
    return out


_focus = st.fixed_dictionaries(
    {},
    optional={
        "people": st.lists(st.sampled_from(["t01", "t05", "阿明", "quiet", "nobody"]), max_size=3),
        "places": st.lists(st.sampled_from(["place3", "mill", "place17"]), max_size=2),
        "roots": st.lists(st.sampled_from(["fact:", "tree:", "傳聞:", "well:"]), max_size=2),
        "topics": st.lists(st.sampled_from(["well", "橋", "oak"]), max_size=2),
    },
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    resident=st.sampled_from(RESIDENTS),
    budget=st.one_of(st.integers(200, 50_000), st.sampled_from([200, 600, 2_000, 20_000, 50_000])),
    lang=st.sampled_from(["en", "zh-Hant"]),
    focus=_focus,
)
@example(resident="zh", budget=50_000, lang="zh-Hant", focus={})
@example(resident="zh", budget=20_000, lang="zh-Hant", focus={"people": ["阿明"]})
@example(resident="similar", budget=600, lang="en", focus={})
@example(resident="mira", budget=50_000, lang="en", focus={})
@example(resident="quiet", budget=200, lang="zh-Hant", focus={})
def test_narrative_answers_at_any_size(
    reader: Reader, resident: str, budget: int, lang: str, focus: dict[str, list[str]]
) -> None:
    """Any resident, budget 200–50,000, either language, any focus: a reply, each frame
    under 60 KiB, whose joined text is the narrative within budget and whose sections are
    the nine, each entry naming its line."""
    frame = {"type": "narrative", "resident": resident, "budget": budget, "lang": lang,
             "focus": focus, "rid": 1}  # fmt: skip
    frames = answer(reader, WORLD, parse_client_frame(frame))
    _check_frames(frames, "narrative")
    text = "".join(f["text"] for f in frames)
    wanted = project(
        reader, WORLD, resident, budget=budget, lang=lang,
        focus=Focus(**{k: tuple(dict.fromkeys(v)) for k, v in focus.items()}),
    )  # fmt: skip
    assert text == wanted.text and len(text) <= budget
    sections = _joined_sections(frames)
    assert [s["name"] for s in sections] == [s["name"] for s in wanted.sections]
    assert sections == wanted.sections
    for section in sections:
        assert all(e["text"] in text for e in section["entries"])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    resident=st.sampled_from(RESIDENTS),
    limit=st.one_of(st.none(), st.integers(1, 10_000)),
    root=st.sampled_from(["well:water", "tree:7", "fact:3:4", "rumour:5", "nothing:here"]),
)
@example(resident="mira", limit=None, root="well:water")
@example(resident="mira", limit=10_000, root="well:water")
@example(resident="mira", limit=100, root="well:water")
def test_beliefs_and_explain_answer_at_any_size(
    reader: Reader, resident: str, limit: int | None, root: str
) -> None:
    """beliefs and explain of any resident, with or without a limit, even of the belief
    seen 4,000 times: a reply (or not_found), every frame under 60 KiB, refs bounded."""
    extra = {} if limit is None else {"limit": limit}
    frames = answer(reader, WORLD, parse_client_frame({"type": "beliefs", "resident": resident,
                                                      "rid": 2, **extra}))  # fmt: skip
    _check_frames(frames, "beliefs")
    beliefs = [b for f in frames for b in f["beliefs"]]
    stored = reader.beliefs(WORLD, resident)
    assert [b["root"] for b in beliefs] == [b.root for b in stored][: limit or None]
    assert all(len(b["evidence_refs"]) <= 10 for b in beliefs)
    if reader.belief(WORLD, resident, root) is None:
        return
    query = {"type": "explain", "resident": resident, "root": root, "rid": 3, **extra}
    frames = answer(reader, WORLD, parse_client_frame(query))
    _check_frames(frames, "explanation")
    evidence = [e for f in frames for e in f["evidence"]]
    total = reader.evidence_count(WORLD, resident, root)
    assert frames[0]["evidence_total"] == total
    assert len(evidence) == min(total, limit or total)
    every = reader.evidence(WORLD, resident, root)
    assert [e["evidence_id"] for e in evidence] == [e["evidence_id"] for e in every][
        -len(evidence) :
    ]


@settings(max_examples=10, deadline=None)
@given(root=st.sampled_from(["festival:day", "well:water", "tree:3", "傳聞:3:3", "none"]))
@example(root="vote:day")
def test_distribution_and_graph_answer(reader: Reader, root: str) -> None:
    """distribution of any root (120 residents holding 120 values: the head lists the 50
    commonest and counts them all), and the graph of the busiest belief, page under 60 KiB."""
    frames = answer(reader, WORLD, parse_client_frame({"type": "distribution", "root": root,
                                                      "rid": 4}))  # fmt: skip
    _check_frames(frames, "distribution")
    values = {repr(b.value) for b in reader.on_root(WORLD, root)}
    assert frames[0]["values_total"] == len(values)
    assert len(frames[0]["values"]) == min(50, len(values))
    if root == "well:water":
        graph = {"type": "graph", "resident": "mira", "root": root, "rid": 5}
        _check_frames(answer(reader, WORLD, parse_client_frame(graph)), "graph")


def test_trust_entries_list_the_latest_changes(reader: Reader) -> None:
    """A trust moved 30 times lists its latest 20 change records and counts all 30."""
    [frame] = answer(reader, WORLD, parse_client_frame({"type": "trust", "resident": "few",
                                                       "rid": 6}))  # fmt: skip
    [entry] = [e for e in frame["entries"] if e["source"] == "t01"]
    every = reader.history(WORLD, "few", "trust:t01")
    assert entry["history_total"] == len(every) >= 30
    assert [c["seq"] for c in entry["history"]] == [c.seq for c in every][-20:]


async def test_largest_replies_over_the_wire(world: Path, tmp_path: Path) -> None:
    """Over a real server, in msgpack and in JSON: the 50,000-character zh-Hant narrative,
    300 similar facts at budget 600, and explain of the belief seen 4,000 times all answer
    in frames under 60 KiB that join into the whole reply."""
    async with running(tmp_path, db=world) as sc:
        for json in (False, True):
            async with WsClient(sc.url, world=WORLD, json=json) as c:
                for query in (
                    {"type": "narrative", "resident": "zh", "budget": 50_000, "lang": "zh-Hant"},
                    {"type": "narrative", "resident": "mira", "budget": 50_000},
                    {"type": "narrative", "resident": "similar", "budget": 600},
                    {"type": "explain", "resident": "mira", "root": "well:water"},
                    {"type": "beliefs", "resident": "mira"},
                ):
                    rid = f"{query['type']}-{query['resident']}-{json}"
                    await c.send({**query, "rid": rid})
                    parts = [await c.next_received(lambda f, r=rid: f.get("rid") == r)]
                    while parts[-1].frame.get("more"):
                        parts.append(await c.next_received(lambda f, r=rid: f.get("rid") == r))
                    assert all(p.size <= MAX_OUTBOUND and p.text == json for p in parts)
                    frames = [p.frame for p in parts]
                    assert frames[-1]["type"] != "error", frames[-1]
                    if query["type"] == "narrative":
                        text = "".join(f["text"] for f in frames)
                        assert 0 < len(text) <= query.get("budget", 2000)
                        if query["resident"] == "zh":
                            assert len(text) > 40_000 and len(text.encode()) > 2 * MAX_OUTBOUND
                    if query["type"] == "explain":
                        assert sum(len(f["evidence"]) for f in frames) == 4_000
