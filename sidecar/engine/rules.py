"""The revision rules: every number in one object, every transition in one table.

Read this module beside the README's rules table; they say the same thing.

=====================================  ==========================================================
situation                              effect
=====================================  ==========================================================
no belief, firsthand                   formed, 78, influencing
no belief, hearsay                     formed, 58, influencing, source resident recorded
no belief, implant                     formed, 65, source implanted, intervention active
support                                reinforced, min(100, c+8); doubtful/anomalous/past ->
                                       influencing; corrected stays corrected; hearsay
                                       confirmed firsthand becomes firsthand
support, hearsay from a source that    evidence recorded, nothing else changes (no record)
already counted for this value
contradiction, intervention active     anomaly, max(10, c-30), anomalous (takes precedence
                                       over doubt and correction)
contradiction, intervention active,    corrected (the resident has noticed, then seen for
  already anomalous, firsthand         itself): as below, intervention cleared
contradiction, no intervention,        corrected: value/subject replaced, 72, corrected,
  doubtful, firsthand                  source firsthand
any other contradiction                doubted, max(10, c-20), doubtful
7 full days since last evidence on an  decayed, max(34, c-8); reaching 34 -> faded, past
  uncorroborated hearsay belief
implant on an existing belief          intervened: value/subject replaced, 65, implanted
distort                                intervened: subject (and value) replaced, distorted
suppress                               intervened: state past
soften                                 intervened: max(0, c-25); doubtful at 30 or below
=====================================  ==========================================================

A doubt or anomaly never *raises* confidence: a belief softened below the floor keeps its
lower value. Nothing is ever deleted; confidence and state carry influence.
"""

from __future__ import annotations

from dataclasses import dataclass

from .model import ChangeKind, State

__all__ = ["DEFAULT_RULES", "TRANSITIONS", "Rules", "check_transition"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Rules:
    """All tunable numbers. Defaults are the reference game's; change them per world."""

    firsthand_initial: int = 78
    hearsay_initial: int = 58
    implant_initial: int = 65
    reinforce_step: int = 8
    confidence_cap: int = 100
    doubt_step: int = 20
    doubt_floor: int = 10
    anomaly_step: int = 30
    anomaly_floor: int = 10
    corrected_confidence: int = 72
    decay_period_days: float = 7
    decay_step: int = 8
    decay_floor: int = 34
    decay_max_refs: int = 2
    soften_step: int = 25
    soften_doubt_at: int = 30

    def __post_init__(self) -> None:
        for name in self.__slots__:  # type: ignore[attr-defined]
            value = getattr(self, name)
            if value < 0:
                raise ValueError(f"rule {name} must not be negative")
        if self.decay_period_days <= 0:
            raise ValueError("decay_period_days must be positive")


DEFAULT_RULES = Rules()

# Which lifecycle states a change kind may move a belief *from* and *to*. ``None`` as a
# source means "no belief yet". The property tests check every revision against this table,
# so a rule that drifts from it fails loudly.
_ANY = frozenset(State)
TRANSITIONS: dict[ChangeKind, tuple[frozenset[State | None], frozenset[State]]] = {
    ChangeKind.FORMED: (frozenset({None}), frozenset({State.INFLUENCING})),
    ChangeKind.REINFORCED: (_ANY, frozenset({State.INFLUENCING, State.CORRECTED})),
    ChangeKind.DOUBTED: (_ANY, frozenset({State.DOUBTFUL})),
    ChangeKind.ANOMALY: (_ANY, frozenset({State.ANOMALOUS})),
    ChangeKind.CORRECTED: (
        frozenset({State.DOUBTFUL, State.ANOMALOUS}),
        frozenset({State.CORRECTED}),
    ),
    ChangeKind.DECAYED: (frozenset({State.INFLUENCING}), frozenset({State.INFLUENCING})),
    ChangeKind.FADED: (frozenset({State.INFLUENCING}), frozenset({State.PAST})),
    ChangeKind.INTERVENED: (_ANY | {None}, _ANY),
}


def check_transition(kind: ChangeKind, before: State | None, after: State) -> None:
    """Raise ``AssertionError`` naming the change if it is not a legal transition."""
    sources, targets = TRANSITIONS[kind]
    if before not in sources or after not in targets:
        raise AssertionError(f"illegal transition {kind}: {before} -> {after}")
