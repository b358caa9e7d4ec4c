"""Belief graphs: JSON shape, edge semantics, and DOT that Graphviz can parse."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from read_world import WORLD, build, observe, open_reader, say, story

from sidecar.read import EDGE_TYPES, NODE_TYPES, NotFound, graph, to_dot
from sidecar.read.graph import (
    ABOUT_SHOWN,
    BadCursor,
    GraphPage,
    claim_id,
    graph_page,
    spool_graph,
)
from sidecar.read.registry import load_registry
from sidecar.store import Reader

_ID = r'"((?:[^"\\]|\\.)*)"'
_NODE = re.compile(rf"^\s*{_ID}\s*\[")
_EDGE = re.compile(rf"^\s*{_ID}\s*->\s*{_ID}\s*\[")


@pytest.fixture(scope="module")
def village(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The story world plus a rumour bob tells two residents and a root with awkward quoting."""
    events = [
        *story(),
        say(40, "bob", ["carol", "erin"], "bridge:state", "broken", "the bridge is broken"),
        observe(41, ["erin"], 'quote"d\\root', "x", 'a "quoted" \\ subject\nover two lines'),
    ]
    return build(tmp_path_factory.mktemp("village") / "v.db", events)


@pytest.fixture(scope="module")
def reader(village: Path) -> Reader:
    """A reader on the village."""
    return open_reader(village)


def _check_shape(g: dict[str, list[dict[str, Any]]]) -> None:
    ids = [n["id"] for n in g["nodes"]]
    assert len(ids) == len(set(ids))
    assert {n["type"] for n in g["nodes"]} <= set(NODE_TYPES)
    assert {e["type"] for e in g["edges"]} <= set(EDGE_TYPES)
    for e in g["edges"]:
        assert e["source"] in ids and e["target"] in ids


def _parse_dot(text: str) -> tuple[set[str], list[tuple[str, str]]]:
    """Structural parse: node declarations and edges, one statement per line."""
    assert text.startswith("digraph ")
    assert text.count("{") == text.count("}")
    nodes, edges = set(), []
    for line in text.splitlines():
        if m := _EDGE.match(line):
            edges.append((m.group(1), m.group(2)))
        elif m := _NODE.match(line):
            nodes.add(m.group(1))
    return nodes, edges


def _unescape(dot_id: str) -> str:
    return re.sub(r"\\(.)", r"\1", dot_id)


def test_resident_graph_shape(reader: Reader) -> None:
    """A resident's graph: allowed node/edge types only, every endpoint a node."""
    g = graph(reader, WORLD, resident="alice")
    _check_shape(g)
    claims = [n for n in g["nodes"] if n["type"] == "claim"]
    assert {n["resident"] for n in claims} == {"alice"}
    assert len(claims) == len(reader.beliefs(WORLD, "alice"))
    assert json.loads(json.dumps(g)) == g


def test_edge_semantics(reader: Reader) -> None:
    """Corrections, contradictions, hearsay sources, witnesses and places become typed edges."""
    g = graph(reader, WORLD, resident="alice")
    edges = {(e["source"], e["type"], e["target"]): e for e in g["edges"]}
    well = claim_id("alice", "well:water")
    (fix,) = [e for (s, t, _), e in edges.items() if s == well and t == "corrected_by"]
    assert fix["value_before"] == "poisoned"
    bridge = claim_id("alice", "bridge:state")
    assert (bridge, "heard_from", "person:bob") in edges
    assert (bridge, "heard_from", "person:carol") not in edges  # carol said otherwise
    assert any(t == "contradicts" and tgt == bridge for (_, t, tgt) in edges)
    assert any(s == "person:alice" and t == "witnessed" for (s, t, _) in edges)
    assert (claim_id("alice", "key:where"), "about", "place:cafe") in edges
    mayor = claim_id("alice", "mayor:mood")
    assert {"person:bob", "person:gina"} <= {
        tgt for (s, t, tgt) in edges if s == mayor and t == "heard_from"
    }


def test_root_graph_across_residents(reader: Reader) -> None:
    """With only a root: every resident's belief on it, and whom each heard it from."""
    g = graph(reader, WORLD, root="bridge:state")
    _check_shape(g)
    holders = {n["resident"]: n for n in g["nodes"] if n["type"] == "claim"}
    assert set(holders) == {"alice", "carol", "erin"}
    heard = {(e["source"], e["target"]) for e in g["edges"] if e["type"] == "heard_from"}
    for who in ("carol", "erin"):
        assert (claim_id(who, "bridge:state"), "person:bob") in heard
    assert holders["alice"]["state"] == "doubtful"


def test_single_belief_and_world_graphs(reader: Reader) -> None:
    """Resident plus root narrows to one claim; neither gives the whole world."""
    one = graph(reader, WORLD, resident="alice", root="well:water")
    _check_shape(one)
    assert [n["id"] for n in one["nodes"] if n["type"] == "claim"] == [
        claim_id("alice", "well:water")
    ]
    world = graph(reader, WORLD)
    _check_shape(world)
    assert sum(n["type"] == "claim" for n in world["nodes"]) == len(reader.all_beliefs(WORLD))


def test_not_found(reader: Reader) -> None:
    """Unknown residents and roots nobody holds are NotFound."""
    with pytest.raises(NotFound):
        graph(reader, WORLD, resident="nobody")
    with pytest.raises(NotFound):
        graph(reader, WORLD, root="no:such:root")
    with pytest.raises(NotFound):
        graph(reader, WORLD, resident="alice", root="no:such:root")


def test_claim_ids_do_not_collide() -> None:
    """A colon in a resident id cannot make two different beliefs share a node id."""
    assert claim_id("a:b", "c") != claim_id("a", "b:c")


def test_dot_parses_structurally(reader: Reader) -> None:
    """DOT starts with digraph, balances braces and declares every edge endpoint, quotes and all."""
    for g in (graph(reader, WORLD), graph(reader, WORLD, resident="alice")):
        nodes, edges = _parse_dot(to_dot(g))
        assert edges, "expected edges"
        assert {_unescape(n) for n in nodes} == {n["id"] for n in g["nodes"]}
        for a, b in edges:
            assert a in nodes and b in nodes
        assert len(edges) == len(g["edges"])
    text = to_dot(graph(reader, WORLD, resident="erin"))
    assert '\\"quoted\\"' in text and "\\n" in text and "\nover" not in text


def _cli(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "sidecar.cli", *args], capture_output=True, timeout=60
    )


def test_cli_graph(village: Path, tmp_path: Path) -> None:
    """`credence graph` writes DOT or JSON, to stdout or --out; unknown residents exit 2."""
    base = ["graph", "--db", str(village), "--world", WORLD]
    out = tmp_path / "g.dot"
    done = _cli(*base, "--resident", "alice", "--format", "dot", "--out", str(out))
    assert done.returncode == 0, done.stderr
    nodes, edges = _parse_dot(out.read_text(encoding="utf-8"))
    assert all(a in nodes and b in nodes for a, b in edges)
    js = _cli(*base, "--root", "bridge:state", "--format", "json")
    assert js.returncode == 0, js.stderr
    _check_shape(json.loads(js.stdout))
    bad = _cli(*base, "--resident", "nobody", "--format", "json")
    assert bad.returncode == 2 and "unknown" in bad.stderr.decode()


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo town (registered names, a rumour corrected by sightings), made by the real CLI."""
    path = tmp_path_factory.mktemp("demo") / "demo.db"
    done = subprocess.run([sys.executable, "-m", "sidecar.cli", "demo", "--db", str(path)],
                          capture_output=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return path


def test_corrected_belief_graph_links_each_telling_to_its_speaker(demo_db: Path) -> None:
    """The rumour a correction overturned keeps said_by edges from its tellings to the speakers."""
    g = graph(open_reader(demo_db), "demo-town", resident="mira", root="water:well")
    _check_shape(g)
    said = {(e["source"], e["target"]) for e in g["edges"] if e["type"] == "said_by"}
    assert said == {("event:demo-2", "person:bo"), ("event:demo-4", "person:tom")}
    assert not [e for e in g["edges"] if e["type"] == "heard_from"]  # she believes otherwise now


def test_cli_graph_shows_registered_names(demo_db: Path) -> None:
    """`credence graph` labels people and the holder's cluster with their registered names."""
    base = ["graph", "--db", str(demo_db), "--world", "demo-town", "--resident", "mira"]
    dot = subprocess.run([sys.executable, "-m", "sidecar.cli", *base, "--root", "water:well"],
                         capture_output=True, text=True, timeout=60)  # fmt: skip
    assert dot.returncode == 0, dot.stderr
    assert '"person:tom" [label="Old Tom"' in dot.stdout
    assert 'label="beliefs of Mira"' in dot.stdout
    assert '"event:demo-4" -> "person:tom" [label="said_by"' in dot.stdout
    js = subprocess.run([sys.executable, "-m", "sidecar.cli", *base, "--format", "json"],
                        capture_output=True, text=True, timeout=60)  # fmt: skip
    people = {
        n["name"]: n["label"] for n in json.loads(js.stdout)["nodes"] if n["type"] == "person"
    }
    assert people["bo"] == "Bo" and people["mira"] == "Mira"


def test_cli_graph_names_a_holder_it_saw_no_evidence_of(tmp_path: Path) -> None:
    """A holder whose only belief was implanted (no event she witnessed, so the graph never
    named her while it was built) is named by her registered name in the DOT cluster written
    afterwards, and the whole world's DOT is what the in-memory graph gives."""
    db = build(tmp_path / "implant.db", [
        {"event_id": "r", "day": 0, "kind": "register",
         "residents": [{"resident": "kit", "names": {"en": "Kit the Smith"}}]},
        {"event_id": "i1", "day": 1, "kind": "intervene", "resident": "kit", "op": "implant",
         "claim": {"root": "mood", "value": "calm"}, "subject": "I am calm"},
    ])  # fmt: skip
    done = _cli("graph", "--db", str(db), "--world", WORLD)
    assert done.returncode == 0, done.stderr.decode()
    reader = open_reader(db)
    assert done.stdout.decode() == to_dot(graph(reader, WORLD), load_registry(reader, WORLD))
    assert 'label="beliefs of Kit the Smith"' in done.stdout.decode()


# ------------------------------------------------------------------------- pages (SPEC §10.5)


def _pages(reader: Reader, limit: int, **scope: str) -> list[GraphPage]:
    """Every page of one graph, following ``next`` until it is None."""
    pages, after = [], None
    while True:
        page = graph_page(reader, WORLD, **scope, after=after, limit=limit)
        pages.append(page)
        if page.next is None:
            return pages
        assert len(pages) < 1000, "the pages do not end"
        after = page.next


def _merged(pages: list[GraphPage]) -> tuple[dict[str, dict[str, Any]], dict[tuple[str, ...], int]]:
    """Pages joined as SPEC §10.5 says: nodes by id, edges by (source, target, type), counts added."""
    nodes: dict[str, dict[str, Any]] = {}
    counts: dict[tuple[str, ...], int] = {}
    for page in pages:
        for n in page.nodes:
            assert nodes.setdefault(n["id"], n) == n  # a node repeated on a later page is the same
        for e in page.edges:
            key = (e["source"], e["target"], e["type"])
            counts[key] = counts.get(key, 0) + e["count"]
    return nodes, counts


@pytest.mark.parametrize(
    "scope",
    [{"resident": "alice"}, {"root": "bridge:state"}, {"resident": "alice", "root": "well:water"},
     {"root": "well:water"}, {"resident": "erin"}],
    ids=lambda s: ",".join(f"{k}={v}" for k, v in s.items()),
)  # fmt: skip
@pytest.mark.parametrize("limit", [1, 2, 3, 1000])
def test_pages_join_to_the_whole_graph(reader: Reader, scope: dict[str, str], limit: int) -> None:
    """Walking every page with any limit and joining them gives exactly the whole graph; each
    page holds at most ``limit`` event nodes, and every edge of it joins nodes of that page."""
    pages = _pages(reader, limit, **scope)
    whole = graph(reader, WORLD, **scope)
    for page in pages:
        _check_shape({"nodes": page.nodes, "edges": page.edges})
        assert sum(n["type"] == "event" for n in page.nodes) <= limit
        assert page.nodes, "an empty page before the last"
    nodes, counts = _merged(pages)
    assert nodes == {n["id"]: n for n in whole["nodes"]}
    assert counts == {(e["source"], e["target"], e["type"]): e["count"] for e in whole["edges"]}
    if limit == 1000:
        assert len(pages) == 1


def test_a_page_continues_inside_a_belief_and_after_it(reader: Reader) -> None:
    """A belief with several pieces of evidence spans pages at limit 1: its claim node is on
    each, the next page starts with the evidence after the cursor, the last page's next is None."""
    pages = _pages(reader, 1, resident="alice", root="well:water")
    evidence = reader.evidence(WORLD, "alice", "well:water")
    assert len(pages) == len(evidence) > 1
    for page in pages:
        claims = [n["id"] for n in page.nodes if n["type"] == "claim"]
        assert claims == [claim_id("alice", "well:water")]
    assert pages[-1].next is None and all(p.next for p in pages[:-1])
    shown = [next(n["event_id"] for n in p.nodes if n["type"] == "event") for p in pages]
    order = sorted(evidence, key=lambda e: (e["day"], e["evidence_id"]))
    assert shown == [e["event_id"] for e in order]


def test_a_bad_cursor_is_refused(reader: Reader) -> None:
    """An after that is no evidence of this graph (made up, or another belief's) is BadCursor."""
    other = reader.evidence(WORLD, "carol", "bridge:state")[0]["evidence_id"]
    for scope, after in (
        ({"resident": "alice"}, "no-such-evidence"),
        ({"resident": "alice"}, other),
        ({"resident": "alice", "root": "well:water"}, other),
        ({"root": "well:water"}, other),
    ):
        with pytest.raises(BadCursor):
            graph_page(reader, WORLD, **scope, after=after)
    with pytest.raises(NotFound):
        graph_page(reader, WORLD, root="no:such:root")
    with pytest.raises(NotFound):
        graph_page(reader, WORLD, resident="nobody")


def test_a_language_map_subject_is_labelled_with_its_text(tmp_path: Path) -> None:
    """A subject given as {en, zh-Hant}: the claim and event labels read the English text (or
    the other language where English is missing); the claim's subject keeps the map."""
    both = {"en": "The well is poisoned", "zh-Hant": "井水有毒"}
    db = build(tmp_path / "texts.db", [
        observe(1, ["mira"], "water:well", "poisoned", both),
        observe(2, ["mira"], "lamp", "lit", {"zh-Hant": "燈亮著"}),
    ])  # fmt: skip
    reader = open_reader(db)
    paged = list(_merged(_pages(reader, 1, resident="mira"))[0].values())
    for nodes in (graph(reader, WORLD, resident="mira")["nodes"], paged):
        claims = {n["root"]: n for n in nodes if n["type"] == "claim"}
        assert claims["water:well"]["label"] == "The well is poisoned"
        assert claims["water:well"]["subject"] == both
        assert claims["lamp"]["label"] == "燈亮著"
        assert claims["lamp"]["subject"] == {"zh-Hant": "燈亮著"}
        events = sorted(n["label"] for n in nodes if n["type"] == "event")
        assert events[0].endswith(": The well is poisoned") and events[1].endswith(": 燈亮著")
        assert not any("{" in n["label"] for n in nodes)


def test_about_edges_are_bounded_and_counted(tmp_path: Path) -> None:
    """A belief about 300 people: about edges to the first ABOUT_SHOWN, people_count says 300."""
    people = [f"p{i:03d}" for i in range(300)]
    db = build(
        tmp_path / "crowd.db", [observe(1, ["mira"], "crowd", "big", "a crowd", people=people)]
    )
    page = graph_page(open_reader(db), WORLD, resident="mira")
    claim = next(n for n in page.nodes if n["type"] == "claim")
    assert claim["people_count"] == 300 and claim["places_count"] == 0
    about = [e["target"] for e in page.edges if e["type"] == "about"]
    assert about == [f"person:{p}" for p in people[:ABOUT_SHOWN]]


@pytest.mark.parametrize(
    "scope",
    [{}, {"resident": "alice"}, {"resident": "erin"}, {"root": "bridge:state"},
     {"resident": "alice", "root": "well:water"}],
    ids=lambda s: ",".join(f"{k}={v}" for k, v in s.items()) or "world",
)  # fmt: skip
@pytest.mark.parametrize("fmt", ["dot", "json"])
def test_a_spooled_graph_writes_byte_for_byte_what_the_whole_graph_gives(
    reader: Reader, scope: dict[str, str], fmt: str
) -> None:
    """``credence graph`` builds into a temporary file and writes from there (a whole world's
    graph is never held): the same text as DOT of the graph in memory, or its JSON, for every
    scope; a quoted, two-line subject and a rumour told by several included."""
    whole = graph(reader, WORLD, **scope)
    if fmt == "dot":
        expected = to_dot(whole, load_registry(reader, WORLD))
    else:
        expected = json.dumps(whole, ensure_ascii=False, indent=2) + "\n"
    out = io.StringIO()
    with spool_graph(reader, WORLD, **scope) as spooled:
        spooled.write(out, fmt)
    assert out.getvalue() == expected
    assert len(expected) > 200


def test_a_spooled_graph_keeps_corrections_names_and_odd_values(
    demo_db: Path, tmp_path: Path
) -> None:
    """The demo town (registered names, a rumour corrected by sightings) and values a game
    may send (text in two scripts, the largest integer, a boolean, a subject in two
    languages): the same JSON and DOT."""
    odd = build(tmp_path / "odd.db", [
        observe(1, ["mira"], "stall", "茶 and bread", "the stall"),
        observe(2, ["mira", "kai"], "stall", 2**53 - 1, {"en": "stall", "zh-Hant": "攤"}),
        say(3, "kai", ["mira"], "rain", True, "it will rain"),
    ])  # fmt: skip
    for db, world, scope in (
        (demo_db, "demo-town", {}),
        (odd, WORLD, {}),
        (odd, WORLD, {"root": "stall"}),
    ):
        r = open_reader(db)
        whole = graph(r, world, **scope)
        for fmt, expected in (
            ("dot", to_dot(whole, load_registry(r, world))),
            ("json", json.dumps(whole, ensure_ascii=False, indent=2) + "\n"),
        ):
            out = io.StringIO()
            with spool_graph(r, world, **scope) as spooled:
                spooled.write(out, fmt)
            assert out.getvalue() == expected, (db.name, fmt)


def test_a_spooled_graph_of_an_unknown_scope_fails_before_anything_is_written(
    reader: Reader,
) -> None:
    for scope in ({"resident": "nobody"}, {"root": "no:such"}, {"resident": "alice", "root": "no"}):
        with pytest.raises(NotFound):
            spool_graph(reader, WORLD, **scope)
