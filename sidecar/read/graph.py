"""Belief graphs: who believes what, from which events, heard from whom.

JSON form (the ``graph`` reply's ``nodes``/``edges`` lists; see ``GRAPH_FORMAT.md``)::

    {"nodes": [{"id": str, "type": "claim"|"event"|"person"|"place", "label": str, ...}],
     "edges": [{"source": node id, "target": node id, "type": EDGE_TYPE, ...}]}

A **claim** node is one resident's belief on one root (``resident``, ``root``, ``value``,
``subject``, ``confidence``, ``state``, ``source_kind``, ``source``, ``intervention``); an
**event** node is a world event (``event_id``, ``kind``, ``day``, and ``speaker`` for what
was said); **person** and **place** nodes carry ``name``. Edges describe each belief as it
is *now* (``relation`` keeps how the evidence bore on the belief when it arrived):

- ``inferred_from`` claim → event: the event formed the belief, or an intervention set it;
- ``supports`` event → claim: the event's evidence agrees with the current value;
- ``contradicts`` event → claim: the event's evidence disagrees with the current value;
- ``corrected_by`` claim → event: firsthand evidence replaced an earlier value
  (``value_before``, ``subject_before``);
- ``heard_from`` claim → person: someone told the resident the current value;
- ``witnessed`` person → event: the resident saw the event (firsthand evidence);
- ``about`` claim → place or person: the belief concerns this place or person.

Every edge has ``count`` (how many pieces of evidence it stands for) and, except ``about``,
the ``event_id`` and ``day`` of the first of them.

Node ids are opaque, stable strings (``claim:<resident>:<root>``, with ``%`` and ``:``
escaped in the resident; ``event:<id>``; ``person:<id>``; ``place:<id>``). Nodes and edges
come out in a deterministic order, so a graph can be diffed.
"""

from __future__ import annotations

from typing import Any

from ..engine import Belief, same_value
from ..store import Reader
from .phrasing import clip_text
from .queries import NotFound, corrections, evidence_rows, resident_known

__all__ = ["EDGE_TYPES", "NODE_TYPES", "claim_id", "graph", "to_dot"]

NODE_TYPES = ("claim", "event", "person", "place")
EDGE_TYPES = (
    "supports",
    "contradicts",
    "heard_from",
    "witnessed",
    "inferred_from",
    "corrected_by",
    "about",
)


def claim_id(resident: str, root: str) -> str:
    """The node id of one resident's belief.

    Escaping the resident keeps resident ``a:b`` with root ``c`` apart from ``a`` with ``b:c``.
    """
    return f"claim:{resident.replace('%', '%25').replace(':', '%3A')}:{root}"


class _Builder:
    """Collects nodes and edges once each, in first-seen order."""

    def __init__(self) -> None:
        self.nodes: dict[str, dict[str, Any]] = {}
        self.edges: dict[tuple[str, str, str], dict[str, Any]] = {}

    def node(self, node_id: str, node_type: str, label: str, **fields: Any) -> str:
        if node_id not in self.nodes:
            self.nodes[node_id] = {"id": node_id, "type": node_type, "label": label, **fields}
        return node_id

    def person(self, name: str) -> str:
        return self.node(f"person:{name}", "person", name, name=name)

    def edge(self, source: str, target: str, edge_type: str, **fields: Any) -> None:
        key = (source, target, edge_type)
        if key in self.edges:
            self.edges[key]["count"] += 1
        else:
            self.edges[key] = {"source": source, "target": target, "type": edge_type}
            self.edges[key] |= {"count": 1, **fields}

    def claim(self, b: Belief) -> str:
        return self.node(
            claim_id(b.resident, b.root),
            "claim",
            clip_text(b.subject, 60),
            resident=b.resident,
            root=b.root,
            value=b.value,
            subject=b.subject,
            confidence=b.confidence,
            state=str(b.state),
            source_kind=str(b.source_kind),
            source=b.source_resident_id,
            intervention=None if b.intervention is None else str(b.intervention),
        )


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
    """The belief graph of one resident (optionally one root), of one root across every
    resident, or of the whole world when neither is given.

    Raises :class:`~sidecar.read.queries.NotFound` for an unknown resident, or a root that
    nobody in scope believes anything about.
    """
    beliefs = _beliefs(reader, world, resident, root)
    g = _Builder()
    current: dict[tuple[str, str], Belief] = {}
    for b in beliefs:
        g.claim(b)
        current[(b.resident, b.root)] = b
    fixes = corrections(reader, world, resident, root)
    fixed_by = {(key, fix.event_id) for key, fix in fixes.items()}
    for row in evidence_rows(reader, world, resident, root):
        key = (row["resident"], row["root"])
        belief = current.get(key)
        if belief is None:
            continue
        cid = claim_id(*key)
        event = g.node(
            f"event:{row['event_id']}",
            "event",
            f"{row['event_kind']} {row['event_id']}: {clip_text(row['subject'], 40)}",
            event_id=row["event_id"],
            kind=row["event_kind"],
            day=row["day"],
        )
        facts = {"event_id": row["event_id"], "day": row["day"], "relation": row["relation"]}
        agrees = same_value(row["value"], belief.value)
        if (key, row["event_id"]) in fixed_by:
            fix = fixes[key]
            before = {"value_before": fix.value_before, "subject_before": fix.subject_before}
            g.edge(cid, event, "corrected_by", **facts, **before)
        elif row["op"] is not None or (row["relation"] == "forms" and agrees):
            g.edge(cid, event, "inferred_from", **facts)
        elif agrees:
            g.edge(event, cid, "supports", **facts)
        else:
            g.edge(event, cid, "contradicts", **facts)
        when = {"event_id": row["event_id"], "day": row["day"]}
        if row["source_kind"] == "firsthand":
            g.edge(g.person(row["resident"]), event, "witnessed", **when)
        elif row["source_kind"] == "hearsay":
            g.nodes[event].setdefault("speaker", row["source_resident"])
            if agrees:  # a speaker who said otherwise is no source of this belief
                g.edge(cid, g.person(row["source_resident"]), "heard_from", **when)
    for b in beliefs:
        cid = claim_id(b.resident, b.root)
        for place in b.places:
            g.edge(cid, g.node(f"place:{place}", "place", place, name=place), "about")
        for person in b.people:
            g.edge(cid, g.person(person), "about")
    return {"nodes": list(g.nodes.values()), "edges": list(g.edges.values())}


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
    "about": 'color="gray60", style=dotted, arrowhead=none',
}


def _q(text: object) -> str:
    """A DOT double-quoted string; a newline becomes DOT's ``\\n`` line break."""
    s = str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\r", "")
    return '"' + s.replace("\n", "\\n") + '"'


def _node_line(node: dict[str, Any]) -> str:
    label = node["label"]
    style = _NODE_STYLE[node["type"]]
    if node["type"] == "claim":
        detail = f"{node['confidence']} {node['state']} · {node['source_kind']}"
        if node.get("source"):
            detail += f" ({node['source']})"
        label = f"{label}\n{node['root']} = {node['value']!r}\n{detail}"
        style += f', color="{_STATE_COLOR.get(node["state"], "black")}"'
    return f"    {_q(node['id'])} [label={_q(label)}, {style}];"


def to_dot(g: dict[str, list[dict[str, Any]]]) -> str:
    """Graphviz DOT for a graph from :func:`graph`: each holder's beliefs in a cluster."""
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
        lines.append(f"        label={_q('beliefs of ' + resident)};")
        lines.extend("    " + _node_line(node) for node in claims)
        lines.append("    }")
    for e in g["edges"]:
        label = e["type"] if e.get("count", 1) == 1 else f"{e['type']} ×{e['count']}"
        ends = f"{_q(e['source'])} -> {_q(e['target'])}"
        lines.append(f"    {ends} [label={_q(label)}, {_EDGE_STYLE[e['type']]}];")
    lines.append("}")
    return "\n".join(lines) + "\n"
