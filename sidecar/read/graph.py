"""Belief graphs: who believes what, from which events, heard from whom.

JSON form (the ``graph`` reply's ``nodes``/``edges`` lists; see ``GRAPH_FORMAT.md``)::

    {"nodes": [{"id": str, "type": "claim"|"event"|"person"|"place", "label": str, ...}],
     "edges": [{"source": node id, "target": node id, "type": EDGE_TYPE, ...}]}

A **claim** node is one resident's belief on one root (``resident``, ``root``, ``value``,
``subject`` as the game sent it, ``confidence``, ``state``, ``source_kind``, ``source``,
``intervention``, ``people_count``, ``places_count``); an **event** node is a world event
(``event_id``, ``kind``, ``day``, and ``speaker`` for a ``say`` or ``announce``); **person** and **place** nodes carry ``name`` (the id; a person's ``label`` is
its registered English name where the game registered one). Edges describe each belief as it
is *now* (``relation`` keeps how the evidence bore on the belief when it arrived):

- ``inferred_from`` claim → event: the event formed the belief, or an intervention set it;
- ``supports`` event → claim: the event's evidence agrees with the current value;
- ``contradicts`` event → claim: the event's evidence disagrees with the current value;
- ``corrected_by`` claim → event: firsthand evidence replaced an earlier value
  (``value_before``, ``subject_before``);
- ``heard_from`` claim → person: someone told the resident the current value;
- ``witnessed`` person → event: the resident saw the event (firsthand evidence);
- ``said_by`` event → person: who said or announced it (every telling, also one that the
  belief no longer agrees with, e.g. the rumour a correction overturned);
- ``about`` claim → place or person: the belief concerns this place or person.

Every edge has ``count`` (how many pieces of evidence it stands for) and, except ``about``,
the ``event_id`` and ``day`` of the first of them.

:func:`graph` builds a whole graph (``credence graph``); :func:`graph_page` one page of it,
bounded whatever the belief's size (the ``graph`` query, SPEC §10.5).

Node ids are opaque, stable strings (``claim:<resident>:<root>``, with ``%`` and ``:``
escaped in the resident; ``event:<id>``; ``person:<id>``; ``place:<id>``). Nodes and edges
come out in a deterministic order, so a graph can be diffed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..engine import Belief, same_value
from ..engine.texts import text_in, wire_text
from ..store import Reader
from .phrasing import clip_text
from .queries import (
    Correction,
    NotFound,
    corrections,
    evidence_after,
    evidence_at,
    evidence_rows,
    resident_known,
    root_beliefs_page,
)
from .registry import Registry, load_registry

__all__ = [
    "ABOUT_SHOWN",
    "EDGE_TYPES",
    "NODE_TYPES",
    "BadCursor",
    "GraphPage",
    "claim_id",
    "graph",
    "graph_page",
    "to_dot",
]

NODE_TYPES = ("claim", "event", "person", "place")
EDGE_TYPES = (
    "supports",
    "contradicts",
    "heard_from",
    "witnessed",
    "inferred_from",
    "corrected_by",
    "said_by",
    "about",
)
#: A claim node has ``about`` edges to at most this many of its people and as many of its
#: places (the first the belief gathered); ``people_count`` and ``places_count`` count all.
#: A belief may name hundreds: without the cap one claim could not fit in a frame.
ABOUT_SHOWN = 20


def claim_id(resident: str, root: str) -> str:
    """The node id of one resident's belief.

    Escaping the resident keeps resident ``a:b`` with root ``c`` apart from ``a`` with ``b:c``.
    """
    return f"claim:{resident.replace('%', '%25').replace(':', '%3A')}:{root}"


class BadCursor(ValueError):
    """A graph page's ``after`` that names no evidence of the graph asked for (the server
    answers ``invalid_frame``: only the ``next`` of an earlier page of the same graph fits)."""


class _Builder:
    """Collects nodes and edges once each, in first-seen order."""

    def __init__(self, names: Registry) -> None:
        self.nodes: dict[str, dict[str, Any]] = {}
        self.edges: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.names = names

    def node(self, node_id: str, node_type: str, label: str, **fields: Any) -> str:
        if node_id not in self.nodes:
            self.nodes[node_id] = {"id": node_id, "type": node_type, "label": label, **fields}
        return node_id

    def person(self, name: str) -> str:
        return self.node(f"person:{name}", "person", self.names.name(name, "en"), name=name)

    def edge(self, source: str, target: str, edge_type: str, **fields: Any) -> None:
        key = (source, target, edge_type)
        if key in self.edges:
            self.edges[key]["count"] += 1
        else:
            self.edges[key] = {"source": source, "target": target, "type": edge_type}
            self.edges[key] |= {"count": 1, **fields}

    def claim(self, b: Belief) -> str:
        # A subject given as a language map is stored as its JSON text: the label is readable
        # text (English, else the language given), ``subject`` the map as the game sent it.
        return self.node(
            claim_id(b.resident, b.root),
            "claim",
            clip_text(text_in(b.subject, "en"), 60),
            resident=b.resident,
            root=b.root,
            value=b.value,
            subject=wire_text(b.subject),
            confidence=b.confidence,
            state=str(b.state),
            source_kind=str(b.source_kind),
            source=b.source_resident_id,
            intervention=None if b.intervention is None else str(b.intervention),
            people_count=len(b.people),
            places_count=len(b.places),
        )

    def about(self, b: Belief) -> None:
        """The claim's ``about`` edges: its first people and places (:data:`ABOUT_SHOWN`)."""
        cid = claim_id(b.resident, b.root)
        for place in b.places[:ABOUT_SHOWN]:
            self.edge(cid, self.node(f"place:{place}", "place", place, name=place), "about")
        for person in b.people[:ABOUT_SHOWN]:
            self.edge(cid, self.person(person), "about")

    def evidence(self, belief: Belief, row: dict[str, Any], fix: Correction | None) -> None:
        """The event node of one piece of evidence and the edges it stands for."""
        cid = claim_id(belief.resident, belief.root)
        event = self.node(
            f"event:{row['event_id']}",
            "event",
            f"{row['event_kind']} {row['event_id']}: {clip_text(text_in(row['subject'], 'en'), 40)}",
            event_id=row["event_id"],
            kind=row["event_kind"],
            day=row["day"],
            **({} if row.get("event_speaker") is None else {"speaker": row["event_speaker"]}),
        )
        facts = {"event_id": row["event_id"], "day": row["day"], "relation": row["relation"]}
        agrees = same_value(row["value"], belief.value)
        if fix is not None and fix.event_id == row["event_id"]:
            before = {
                "value_before": fix.value_before,
                "subject_before": wire_text(fix.subject_before),
            }
            self.edge(cid, event, "corrected_by", **facts, **before)
        elif row["op"] is not None or (row["relation"] == "forms" and agrees):
            self.edge(cid, event, "inferred_from", **facts)
        elif agrees:
            self.edge(event, cid, "supports", **facts)
        else:
            self.edge(event, cid, "contradicts", **facts)
        when = {"event_id": row["event_id"], "day": row["day"]}
        if row["source_kind"] == "firsthand":
            self.edge(self.person(row["resident"]), event, "witnessed", **when)
        elif row["source_kind"] == "hearsay":
            self.edge(event, self.person(row["source_resident"]), "said_by", **when)
            if agrees:  # a speaker who said otherwise is no source of this belief
                self.edge(cid, self.person(row["source_resident"]), "heard_from", **when)

    def result(self) -> dict[str, list[dict[str, Any]]]:
        return {"nodes": list(self.nodes.values()), "edges": list(self.edges.values())}


def _beliefs(reader: Reader, world: str, resident: str | None, root: str | None) -> list[Belief]:
    if resident is not None and not resident_known(reader, world, resident):
        raise NotFound(f"resident {resident!r} is unknown in world {world!r}")
    if resident is not None and root is not None:
        one = reader.belief(world, resident, root)
        if one is None:
            raise NotFound(f"{resident!r} holds no belief on {root!r}")
        return [one]
    if resident is not None:
        return reader.beliefs(world, resident)
    if root is not None:
        found = reader.on_root(world, root)
        if not found:
            raise NotFound(f"no resident of world {world!r} holds a belief on {root!r}")
        return found
    return reader.all_beliefs(world)


def graph(
    reader: Reader, world: str, resident: str | None = None, root: str | None = None
) -> dict[str, list[dict[str, Any]]]:
    """The whole belief graph of one resident (optionally one root), of one root across
    every resident, or of the whole world when neither is given (``credence graph``; the
    wire's ``graph`` query answers a page of it: :func:`graph_page`).

    Raises :class:`~sidecar.read.queries.NotFound` for an unknown resident, or a root that
    nobody in scope believes anything about.
    """
    beliefs = _beliefs(reader, world, resident, root)
    g = _Builder(load_registry(reader, world))
    current: dict[tuple[str, str], Belief] = {}
    for b in beliefs:
        g.claim(b)
        current[(b.resident, b.root)] = b
    fixes = corrections(reader, world, resident, root)
    for row in evidence_rows(reader, world, resident, root):
        key = (row["resident"], row["root"])
        belief = current.get(key)
        if belief is not None:
            g.evidence(belief, row, fixes.get(key))
    for b in beliefs:
        g.about(b)
    return g.result()


@dataclass(frozen=True, slots=True)
class GraphPage:
    """One page of a belief graph: its nodes and edges, and where the next page starts."""

    nodes: list[dict[str, Any]]
    edges: list[dict[str, Any]]
    #: The ``after`` of the next page (the evidence id of this page's last event node), or
    #: None on the last page.
    next: str | None


def graph_page(
    reader: Reader,
    world: str,
    resident: str | None = None,
    root: str | None = None,
    *,
    after: str | None = None,
    limit: int = 100,
) -> GraphPage:
    """One page of the graph of one belief, of one resident's beliefs, or of one root across
    every resident (SPEC §10.5): at most ``limit`` pieces of evidence, so at most ``limit``
    event nodes, whatever the belief's size.

    The graph is walked belief by belief (a resident's in root order, a root's in resident
    order), each belief's evidence in log order (the order its events were accepted);
    ``after`` is the evidence id the previous page ended at. A page holds the claim node of
    every belief it has evidence of (a belief whose evidence spans pages is on each of them),
    the person and place nodes its edges reach, and edges between its own nodes only, each
    counting the page's own evidence. A claim's ``about`` edges come on the page that holds
    its first evidence, so joining pages by node id and edge (source, target, type), adding
    ``count``, gives the whole graph. Every query is one index range from the cursor: the
    last page of a belief seen 10,000 times costs what its first costs.

    Raises :class:`NotFound` as :func:`graph` does; :class:`BadCursor` for an ``after`` that
    is no evidence of this graph.
    """
    if resident is None and root is None:
        raise ValueError("a graph page needs a resident, a root or both")
    if resident is not None and not resident_known(reader, world, resident):
        raise NotFound(f"resident {resident!r} is unknown in world {world!r}")
    one: Belief | None = None
    if resident is not None and root is not None:
        one = reader.belief(world, resident, root)
        if one is None:
            raise NotFound(f"{resident!r} holds no belief on {root!r}")
    start: Belief | None = one
    position: tuple[float, str] | None = None
    if after is not None:
        at = evidence_at(reader, world, after)
        if at is None or (resident, root) != (
            at[0] if resident is not None else None,
            at[1] if root is not None else None,
        ):
            raise BadCursor(
                "field 'after' names no event node of this graph: pass the 'next' of the "
                "previous page of the same graph query"
            )
        start = one or reader.belief(world, at[0], at[1])
        if start is None:
            raise BadCursor("field 'after' names evidence of no belief of this graph")
        position = (at[2], after)
    taken: list[tuple[Belief, list[dict[str, Any]], bool]] = []
    room, more = limit, False

    def take(belief: Belief, since: tuple[float, str] | None) -> None:
        nonlocal room, more
        # One row more than there is room for says whether the belief goes on.
        rows = evidence_after(reader, world, belief.resident, belief.root, after=since,
                              limit=room + 1)  # fmt: skip
        if len(rows) > room:
            rows, more = rows[:room], True
        room -= len(rows)
        if rows:  # every belief has evidence: it was formed by some
            taken.append((belief, rows, since is None))

    if start is not None:
        take(start, position)
    if one is None and not more:
        key = "" if start is None else (start.root if resident is not None else start.resident)
        if resident is not None:
            following = reader.beliefs(world, resident, after_root=key, limit=room + 1)
        else:
            assert root is not None
            following = root_beliefs_page(reader, world, root, after=key, limit=room + 1)
            if start is None and not following:
                raise NotFound(f"no resident of world {world!r} holds a belief on {root!r}")
        for belief in following:
            if room == 0:
                more = True
                break
            take(belief, None)
            if more:
                break
    g = _Builder(load_registry(reader, world))
    for belief, rows, first in taken:
        g.claim(belief)
        # The belief's latest correction (partial index ``changes_corrected``: a few rows).
        held = (belief.resident, belief.root)
        fix = corrections(reader, world, *held).get(held)
        for row in rows:
            g.evidence(belief, row, fix)
        if first:
            g.about(belief)
    out = g.result()
    last = taken[-1][1][-1]["evidence_id"] if more and taken else None
    return GraphPage(nodes=out["nodes"], edges=out["edges"], next=last)


# ----------------------------------------------------------------------------------- DOT

_NODE_STYLE = {
    "claim": 'shape=box, style="rounded,filled", fillcolor="#ffffff"',
    "event": 'shape=note, style=filled, fillcolor="#f2f2f2"',
    "person": 'shape=ellipse, style=filled, fillcolor="#e8f0ff"',
    "place": 'shape=house, style=filled, fillcolor="#eaf7e6"',
}
_STATE_COLOR = {
    "influencing": "black",
    "doubtful": "orange",
    "anomalous": "red",
    "corrected": "blue",
    "past": "gray",
}
_EDGE_STYLE = {
    "supports": 'color="darkgreen"',
    "contradicts": 'color="red"',
    "heard_from": 'color="purple", style=dashed',
    "witnessed": 'color="gray40"',
    "inferred_from": 'color="black"',
    "corrected_by": 'color="blue", penwidth=2',
    "said_by": 'color="purple"',
    "about": 'color="gray60", style=dotted, arrowhead=none',
}


def _q(text: object) -> str:
    """A DOT double-quoted string; a newline becomes DOT's ``\\n`` line break."""
    s = str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\r", "")
    return '"' + s.replace("\n", "\\n") + '"'


def _node_line(node: dict[str, Any], names: Registry | None = None) -> str:
    label = node["label"]
    style = _NODE_STYLE[node["type"]]
    if node["type"] == "claim":
        detail = f"{node['confidence']} {node['state']} · {node['source_kind']}"
        if node.get("source"):
            source = node["source"] if names is None else names.name(node["source"], "en")
            detail += f" ({source})"
        label = f"{label}\n{node['root']} = {node['value']!r}\n{detail}"
        style += f', color="{_STATE_COLOR.get(node["state"], "black")}"'
    return f"    {_q(node['id'])} [label={_q(label)}, {style}];"


def to_dot(g: dict[str, list[dict[str, Any]]], names: Registry | None = None) -> str:
    """Graphviz DOT for a graph from :func:`graph`: each holder's beliefs in a cluster,
    labelled with the holder's registered name when ``names`` has one."""
    lines = ["digraph credence {", "    rankdir=LR;", '    node [fontname="Helvetica"];',
             '    edge [fontname="Helvetica", fontsize=10];']  # fmt: skip
    holders: dict[str, list[dict[str, Any]]] = {}
    for node in g["nodes"]:
        if node["type"] == "claim":
            holders.setdefault(node["resident"], []).append(node)
        else:
            lines.append(_node_line(node))
    for n, (resident, claims) in enumerate(holders.items()):
        lines.append(f"    subgraph cluster_{n} {{")
        holder = resident if names is None else names.name(resident, "en")
        lines.append(f"        label={_q('beliefs of ' + holder)};")
        lines.extend("    " + _node_line(node, names) for node in claims)
        lines.append("    }")
    for e in g["edges"]:
        label = e["type"] if e.get("count", 1) == 1 else f"{e['type']} ×{e['count']}"
        ends = f"{_q(e['source'])} -> {_q(e['target'])}"
        lines.append(f"    {ends} [label={_q(label)}, {_EDGE_STYLE[e['type']]}];")
    lines.append("}")
    return "\n".join(lines) + "\n"
