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

import math
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
    # --- source trust (social epistemics) -------------------------------------------
    trust_default: float = 0.6
    hearsay_base: int = 35  # confidence at trust hearsay_trust_low
    hearsay_span: int = 40  # added over hearsay_trust_low .. +hearsay_trust_range
    hearsay_trust_low: float = 0.2
    hearsay_trust_range: float = 0.7
    hearsay_min: int = 10
    hearsay_max: int = 90
    overhear_trust_factor: float = 0.5
    trust_confirm_step: float = 0.05
    trust_contradict_step: float = 0.10
    trust_correct_step: float = 0.15
    # --- decay beyond time -------------------------------------------------------------
    importance_weight: float = 1.0  # period × (1 + w·importance + w·emotion)
    emotion_weight: float = 1.0
    distrust_below: float = 0.5  # hearsay from a source trusted less than this decays faster
    distrust_min_factor: float = 0.5
    # --- the world changed vs. I was misinformed -------------------------------------
    mutable_prefixes: tuple[str, ...] = ()
    # --- misremembering (off by default; see sidecar/engine/recall.py) -----------------
    misremember: float = 0.0  # chance that a recall drifts one detail
    seed: int = 0  # the world's seed for those draws (with the event id, resident, root)

    def __post_init__(self) -> None:
        object.__setattr__(self, "mutable_prefixes", tuple(self.mutable_prefixes))
        for name in self.__slots__:
            value = getattr(self, name)
            if isinstance(value, int | float) and value < 0:
                raise ValueError(f"rule {name} must not be negative")
        if self.decay_period_days <= 0:
            raise ValueError("decay_period_days must be positive")
        if not 0 <= self.trust_default <= 1:
            raise ValueError("trust_default must lie in [0, 1]")
        if not 0 <= self.misremember <= 1:
            raise ValueError("misremember must lie in [0, 1]")

    def hearsay_confidence(self, trust: float) -> int:
        """Initial confidence of hearsay from a source trusted ``trust`` ∈ [0, 1].

        35 + 40·(t − 0.2)/0.7, rounded half up and clamped to [10, 90]: t = 0.6 gives the
        core rule's 58, t = 0.9 gives 75, t = 0.2 gives 35.
        """
        raw = (
            self.hearsay_base
            + self.hearsay_span * (trust - self.hearsay_trust_low) / self.hearsay_trust_range
        )
        return max(self.hearsay_min, min(self.hearsay_max, math.floor(raw + 0.5)))

    def is_mutable(self, root: str) -> bool:
        return any(root.startswith(prefix) for prefix in self.mutable_prefixes)

    def decay_period(
        self, importance: float | None, emotion: float | None, trust: float | None
    ) -> float:
        """Days per aging step: slowed by importance and emotion, hastened by distrust."""
        period = self.decay_period_days * (
            1 + self.importance_weight * (importance or 0) + self.emotion_weight * (emotion or 0)
        )
        if trust is not None and trust < self.distrust_below:
            period *= max(self.distrust_min_factor, trust / self.distrust_below)
        return period


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
    ChangeKind.UPDATED: (_ANY, frozenset({State.INFLUENCING})),
    ChangeKind.TRUST: (_ANY | {None}, frozenset({State.INFLUENCING})),
    ChangeKind.MISREMEMBERED: (_ANY, _ANY),  # a detail moved; the state never does
}


def check_transition(kind: ChangeKind, before: State | None, after: State) -> None:
    """Raise ``AssertionError`` naming the change if it is not a legal transition."""
    sources, targets = TRANSITIONS[kind]
    if before not in sources or after not in targets:
        raise AssertionError(f"illegal transition {kind}: {before} -> {after}")
