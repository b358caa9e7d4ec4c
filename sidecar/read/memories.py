"""Narrative items that are not one belief each: act episodes and trust in people.

**Acts as episodes.** Every ``act`` a resident did or witnessed is its own piece of evidence
(one per event), whatever the rules made of the ``action:<actor>:<action>`` belief. The
narrative reads them as episodes, per actor and action: how many times it was done and when
last, and the latest time it failed ("I fetched water 20 times, most recently yesterday.
Today, my attempt to fetch water was refused."). The action beliefs themselves stay
queryable; they are not phrased as "I'm sure that mira did fetch water".

**Trust.** Whom I trust or distrust and why: the trust table, phrased by band (trust at
least 0.7, below 0.45, or between), with the change record behind the latest move ("I
distrust Bo: Bo told me that the well is poisoned, but I saw otherwise (...)").
"""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from ..engine import Belief, SourceKind, State
from ..store import Reader, StoreError
from ..store.rows import load_json
from .items import Item, clip_text, tier_of
from .wording import Words

__all__ = ["TRUST_HIGH", "TRUST_LOW", "act_items", "trust_items"]

#: Trust bands of the people section.
TRUST_HIGH = 0.7
TRUST_LOW = 0.45
#: Longest quoted subject in a trust reason.
REASON_SUBJECT = 120


def _rows(reader: Reader, sql: str, params: Sequence[Any]) -> list[sqlite3.Row]:
    try:
        return reader.conn.execute(sql, tuple(params)).fetchall()
    except sqlite3.Error as exc:
        raise StoreError(f"query failed: {exc}") from exc


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def act_items(
    reader: Reader,
    world: str,
    resident: str,
    beliefs: Mapping[str, Belief],
    words: Words,
    action_label: Any,
    today: float,
) -> list[Item]:
    """One item per (actor, action) the resident did or saw done, phrased as episodes.

    ``action_label(action)`` gives an action's label in the narrative's language.
    """
    rows = _rows(
        reader,
        # The resident's action evidence only (a range of index evidence_by_belief), then
        # each one's event: never the world's events, nor the resident's other evidence.
        "SELECT ev.root, e.body FROM evidence ev CROSS JOIN events e "
        "ON e.world = ev.world AND e.event_id = ev.event_id "
        "WHERE ev.world = ? AND ev.resident = ? AND ev.root >= 'action:' "
        "AND ev.root < 'action;' AND e.kind = 'act' ORDER BY e.seq",
        (world, resident),
    )
    episodes: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for root, body in rows:
        episodes[root].append(load_json(body))
    items = []
    for root, acts in episodes.items():
        belief = beliefs.get(root)
        if belief is None:
            continue
        actor, action = acts[0]["actor"], acts[0]["action"]
        mine = actor == resident
        who = words.self_name if mine else words.name(actor)
        whose = words.self_whose if mine else words.whose.format(who=words.name(actor))
        label = action_label(action)
        done = [a for a in acts if a["status"] == "completed"]
        failed = [a for a in acts if a["status"] != "completed"]
        parts = []
        if done:
            template = words.act_done_one if len(done) == 1 else words.act_done_many
            parts.append(
                template.format(
                    Who=_cap(who),
                    did=words.past(label),
                    n=len(done),
                    when=words.when(done[-1]["day"], today),
                )
            )
        if failed:
            last = failed[-1]
            parts.append(
                words.act_failed.format(
                    When=_cap(words.when(last["day"], today)),
                    whose=whose,
                    act=label,
                    status=words.act_status[last["status"]],
                )
            )
        text = (" " if words.lang == "en" else "").join(parts)
        counts: dict[str, int] = {}
        for a in acts:
            counts[a["status"]] = counts.get(a["status"], 0) + 1
        items.append(
            Item(
                belief=belief,
                section="acts",
                band="act",
                tier=tier_of("acts", False),
                group=None,
                prepared=(text, text),
                extra={
                    "actor": actor,
                    "action": action,
                    "episodes": counts,
                    "last_day": acts[-1]["day"],
                    "_people": (actor,),
                },
            )
        )
    return items


def _reason(
    reader: Reader, world: str, resident: str, history: Sequence[Any]
) -> dict[str, Any] | None:
    """What moved trust last, from evidence: the told subject and what was seen."""
    for change in reversed(history):
        if change.detail not in ("confirmed", "contradicted", "corrected"):
            continue
        if not change.evidence_id:
            continue
        found = _rows(
            reader,
            "SELECT root, subject FROM evidence WHERE world = ? AND evidence_id = ?",
            (world, change.evidence_id),
        )
        if not found:
            continue
        root, seen = found[0]["root"], found[0]["subject"]
        told = _rows(
            reader,
            "SELECT subject_before FROM changes WHERE world = ? AND resident = ? AND root = ? "
            "AND event_id = ? AND kind <> 'trust' ORDER BY seq LIMIT 1",
            (world, resident, root, change.event_id),
        )
        before = told[0]["subject_before"] if told else None
        return {
            "change": change.detail,
            "event_id": change.event_id,
            "day": change.day,
            "root": root,
            "told": before,
            "seen": seen,
        }
    return None


def trust_items(reader: Reader, world: str, resident: str, words: Words) -> list[Item]:
    """One item per source the resident's trust table holds (moved or set)."""
    by_source: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in reader.trust(world, resident):
        by_source[row["source"]].append(row)
    items = []
    for source, rows in by_source.items():
        general = next((r for r in rows if r["topic"] is None), None)
        value = float((general or rows[0])["value"])
        history = sorted((c for r in rows for c in r["history"]), key=lambda c: c.seq)
        who = words.name(source)
        if value >= TRUST_HIGH:
            text = words.trust_high.format(who=who)
        elif value < TRUST_LOW:
            text = words.trust_low.format(who=who)
        else:
            text = words.trust_mid.format(who=who)
        if general is None:
            text += words.trust_on.format(t=words.who([r["topic"] for r in rows]))
        reason = _reason(reader, world, resident, history)
        if reason is not None and reason["told"]:
            x = " ".join(reason["told"].split()).rstrip(".。")
            y = " ".join((reason["seen"] or "").split()).rstrip(".。")
            x = clip_text(words.first_person(x), REASON_SUBJECT)
            y = clip_text(words.first_person(y), REASON_SUBJECT)
            template = words.trust_right if reason["change"] == "confirmed" else words.trust_wrong
            full = text + template.format(who=who, x=x, y=y) + words.stop
        else:
            full = text + words.stop
        first = history[0].day if history else 0.0
        last = history[-1].day if history else 0.0
        belief = Belief(
            resident=resident,
            root=f"trust:{source}",
            value=round(value * 100),
            subject=(reason or {}).get("told") or "",
            confidence=round(value * 100),
            state=State.INFLUENCING,
            source_kind=SourceKind.FIRSTHAND,
            source_resident_id=None,
            formed_day=first,
            updated_day=last,
            last_evidence_day=last,
            people=(source,),
        )
        items.append(
            Item(
                belief=belief,
                section="people",
                band="trust",
                tier=tier_of("people", False),
                group=None,
                prepared=(full, text + words.stop),
                extra={
                    "person": source,
                    "trust": value,
                    "topic_trust": {r["topic"]: r["value"] for r in rows if r["topic"]},
                    "reason": reason,
                    "_people": (source,),
                },
            )
        )
    return items
