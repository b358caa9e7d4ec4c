"""The epistemic guard for proposals from an external memory organizer.

An organizer (typically an LLM that rewrites a resident's memories) may reword a belief — its
subject and the resident's interpretation — but never what makes it a belief: its value, its
provenance (source kind and source), its state (an open doubt, an anomaly, a correction) or
its confidence. Those change only with evidence or an explicit player intervention. Claims
are identified by root, so two beliefs on different roots are never merged. A resident's view
of another resident (``relation:…``) is rewritten by no frame at all without new evidence.

The structural checks on world events live in :mod:`sidecar.engine.events` (``_guard``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from .events import Edit
from .model import Belief, State, same_value

__all__ = ["REASONS", "judge_edits"]

#: Every reason code a verdict can carry.
REASONS = {
    "no_such_belief": "the resident holds no belief on this root",
    "merges_distinct_claims": "beliefs on different roots are different claims and are never merged",
    "changes_value_without_evidence": "a belief's value changes only with evidence",
    "changes_provenance": "source kind and source resident are never rewritten",
    "hides_contradiction": "an open doubt or anomaly cannot be edited away",
    "erases_correction": "a correction stays a correction",
    "changes_state_without_evidence": "a belief's state changes only with evidence",
    "changes_confidence_without_evidence": "confidence changes only with evidence",
    "changes_tags_without_evidence": "people, places and topics come from evidence",
    "relationship_without_evidence": "a view of another resident changes only with evidence",
    "empty_text": "subject and interpretation must not be empty",
    "introduces_person": "an edit names a person who appears in none of the belief's evidence",
    "no_edit": "the edit changes nothing",
}


def _verdict(root: str, reasons: list[str]) -> dict[str, Any]:
    return {"root": root, "accepted": not reasons, "reasons": reasons}


#: Resident id → every label the text may name it by: its id and its registered names.
People = Mapping[str, Sequence[str]]


def _names(text: str, label: str) -> bool:
    """Whether ``text`` names ``label``: a whole word, any case, for alphabetic labels
    ("Bo", not "Bob"); as written for others (Chinese names have no word boundaries)."""
    if label.isascii():
        return re.search(rf"(?<!\w){re.escape(label)}(?!\w)", text, re.IGNORECASE) is not None
    return label in text


def _named(texts: Iterable[str], people: People) -> set[str]:
    return {
        p for p, labels in people.items() for t in texts for label in labels if _names(t, label)
    }


def _introduced(texts: Iterable[str], belief: Belief, people: People) -> set[str]:
    """The residents ``texts`` name that nothing behind ``belief`` does: not its holder, its
    people, its sources or the residents a rumour passed through, nor its current text."""
    known = {belief.resident, *belief.people, *belief.heard_from, *belief.hops}
    if belief.source_resident_id:
        known.add(belief.source_resident_id)
    known |= _named((t for t in (belief.subject, belief.interpretation) if t), people)
    return _named(texts, people) - known


def _judge(edit: Edit, belief: Belief | None, people: People) -> list[str]:
    if belief is None:
        return ["no_such_belief"]
    reasons: list[str] = []
    if edit.merge and any(other != belief.root for other in edit.merge):
        reasons.append("merges_distinct_claims")
    if edit.value is not None and not same_value(edit.value, belief.value):
        reasons.append("changes_value_without_evidence")
    if (edit.source_kind is not None and edit.source_kind != str(belief.source_kind)) or (
        edit.source is not None and edit.source != belief.source_resident_id
    ):
        reasons.append("changes_provenance")
    if edit.state is not None and edit.state != str(belief.state):
        if belief.state in (State.DOUBTFUL, State.ANOMALOUS):
            reasons.append("hides_contradiction")
        elif belief.state is State.CORRECTED:
            reasons.append("erases_correction")
        else:
            reasons.append("changes_state_without_evidence")
    if edit.confidence is not None and edit.confidence != belief.confidence:
        reasons.append("changes_confidence_without_evidence")
    for tag in ("people", "places", "topics"):
        tags = getattr(edit, tag)
        if tags is not None and tags != getattr(belief, tag):
            reasons.append("changes_tags_without_evidence")
            break
    texts = {k: v for k in ("subject", "interpretation") if (v := getattr(edit, k)) is not None}
    if any(not v.strip() for v in texts.values()):
        reasons.append("empty_text")
    if texts and belief.root.startswith("relation:"):
        reasons.append("relationship_without_evidence")
    if people and _introduced(texts.values(), belief, people):
        reasons.append("introduces_person")
    rewords = any(texts.get(k) != getattr(belief, k) for k in texts)
    if not reasons and not rewords:
        reasons.append("no_edit")
    return reasons


def judge_edits(
    resident: str,
    edits: Sequence[Edit],
    get_belief: Callable[[str, str], Belief | None],
    people: People | None = None,
) -> Iterator[tuple[Edit, dict[str, Any]]]:
    """Yield each edit with its verdict ``{root, accepted, reasons}``; ``people`` (the world's
    residents and their labels) lets the guard see an edit that introduces a person."""
    for edit in edits:
        belief = get_belief(resident, edit.root)
        yield edit, _verdict(edit.root, _judge(edit, belief, people or {}))
