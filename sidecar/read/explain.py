"""Why does a resident believe this? One belief, its evidence and its full change history.

:func:`explain` gathers the data (it is what the server's ``explanation`` reply carries, so
it holds only plain str/int/float/bool/None/list/dict values with str keys);
:func:`render_explain` turns it into a timeline a person can read::

    day 1    firsthand  saw: the door is open  (forms)  → formed 78 influencing
    day 3    hearsay    bob said: the door is closed  (contradicts)  → doubted 78→58 doubtful
"""

from __future__ import annotations

from typing import Any

from protocol import belief_summary, change_summary

from ..engine import Belief, Change
from ..engine.texts import wire_text
from ..store import Reader
from ..store.rows import load_json
from .queries import NotFound, resident_known
from .registry import load_registry

__all__ = ["belief_dict", "change_dict", "evidence_summary", "explain", "render_explain"]


def belief_dict(b: Belief) -> dict[str, Any]:
    """The wire's belief summary, plus the fields a person debugging it may want."""
    return {
        **belief_summary(b),
        "heard_from": list(b.heard_from),
        "last_evidence_day": b.last_evidence_day,
        "next_decay_day": b.next_decay_day,
    }


def change_dict(c: Change) -> dict[str, Any]:
    """One change record, in the same keys as the server's explanation history."""
    return change_summary(c)


def evidence_summary(row: dict[str, Any]) -> dict[str, Any]:
    """One evidence row (``Reader.evidence``) as the ``explanation`` reply carries it."""
    return {
        "evidence_id": row["evidence_id"],
        "event_id": row["event_id"],
        "event_kind": row["event_kind"],
        "day": row["day"],
        "source_kind": row["source_kind"],
        "source": row["source_resident"],
        "value": row["value"],
        "subject": wire_text(row["subject"]),
        "relation": row["relation"],
        "op": row["op"],
        "origin": row["origin"],
        "hops": load_json(row["hops"]),
        "trust": row["trust"],
    }


def explain(reader: Reader, world: str, resident: str, root: str) -> dict[str, Any]:
    """The belief, every piece of evidence behind it (oldest first) and every change.

    Raises :class:`~sidecar.read.queries.NotFound` for an unknown resident or a root the
    resident holds no belief on.
    """
    if not resident_known(reader, world, resident):
        raise NotFound(f"resident {resident!r} is unknown in world {world!r}")
    belief = reader.belief(world, resident, root)
    if belief is None:
        raise NotFound(f"{resident!r} holds no belief on {root!r}")
    evidence = [evidence_summary(e) for e in reader.evidence(world, resident, root)]
    mentioned = {resident, belief.source_resident_id} | {e["source"] for e in evidence}
    mentioned |= {hop for e in evidence for hop in e["hops"] or ()}
    registry = load_registry(reader, world)
    return {
        "resident": resident,
        "root": root,
        "belief": belief_dict(belief),
        "evidence": evidence,
        "history": [change_dict(c) for c in reader.history(world, resident, root)],
        # The registered (English) names of the residents mentioned, for the timeline.
        "names": {
            r: registry.name(r, "en")
            for r in sorted(m for m in mentioned if m)
            if registry.registered(r)
        },
    }


# ----------------------------------------------------------------------------- rendering


def _day(day: float) -> str:
    return f"day {day:g}"


def _what(ev: dict[str, Any], names: dict[str, str]) -> str:
    kind, source, subject = ev["event_kind"], ev["source"], ev["subject"]
    if isinstance(subject, dict):  # a language map: this rendering is English
        subject = subject.get("en") or next(iter(subject.values()), "")
    if kind in ("say", "announce"):
        verb = "said" if kind == "say" else "announced"
        heard = f"{names.get(source, source)} {verb}: {subject}"
        hops = ev.get("hops") or []
        if len(hops) > 1:
            heard += f" [via {' → '.join(names.get(h, h) for h in hops)}]"
        if ev.get("trust") is not None:
            heard += f" [trust {ev['trust']:.2f}]"
        return heard
    if kind == "intervene":
        return f"intervention ({ev['op']}): {subject}" if subject else f"intervention ({ev['op']})"
    if kind == "act":
        return f"action: {subject}"
    return f"saw: {subject}"


def _effect(c: dict[str, Any]) -> str:
    before, after = c["prev_confidence"], c["confidence"]
    text = f"→ {c['change']} {after}" if before is None else f"→ {c['change']} {before}→{after}"
    if c["prev_state"] is None:
        text += f" [{c['state']}]"
    elif c["prev_state"] != c["state"]:
        text += f" [{c['prev_state']}→{c['state']}]"
    before_value, value = c["prev_value"], c["value"]
    if before_value is not None and (type(before_value), before_value) != (type(value), value):
        text += f" value {before_value!r}→{value!r}"
    return text


def render_explain(data: dict[str, Any]) -> str:
    """A readable timeline: one line per piece of evidence or aging step, oldest first."""
    b = data["belief"]
    names: dict[str, str] = data.get("names") or {}
    source = b["source_kind"] + (
        f" from {names.get(b['source'], b['source'])}" if b["source"] else ""
    )
    extra = f", intervention: {b['intervention']}" if b["intervention"] else ""
    who = data["resident"]
    lines = [
        f"{names[who]} ({who}) on {data['root']}" if who in names else f"{who} on {data['root']}",
        f"now: {b['subject']!r} (value {b['value']!r}), confidence {b['confidence']}, "
        f"{b['state']}, {source}{extra}",
        "",
    ]
    by_evidence = {c["evidence_id"]: c for c in data["history"] if c["evidence_id"]}
    timeline: list[tuple[float, int, int, str]] = []
    for n, ev in enumerate(data["evidence"]):
        change = by_evidence.get(ev["evidence_id"])
        effect = _effect(change) if change else "→ no change (same source again)"
        head = f"{_day(ev['day']):<9}{ev['source_kind']:<11}{_what(ev, names)}"
        text = f"{head}  ({ev['relation']})  {effect}"
        timeline.append((ev["day"], 1, n, text))
    for n, c in enumerate(data["history"]):
        if not c["evidence_id"]:  # aging: the clock moved, no evidence behind it
            text = f"{_day(c['day']):<9}{'-':<11}time passed  {_effect(c)}"
            timeline.append((c["day"], 0, n, text))
    lines.extend(t[3] for t in sorted(timeline))
    return "\n".join(lines)
