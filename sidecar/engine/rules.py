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
                                       over doubt and correction); the intervention is
                                       now discovered: later contradictions are doubts
contradiction, intervention active,    corrected (the resident has noticed, then seen for
  already anomalous, firsthand         itself): as below, intervention cleared
contradiction, no intervention,        corrected: value/subject replaced, 72, corrected,
  doubtful, firsthand                  source firsthand
any other contradiction                doubted, max(10, c-20), doubtful
7 full days since last evidence on an  decayed, max(34, c-8); reaching 34 -> faded, past
  uncorroborated hearsay belief
implant on an existing belief          intervened: value/subject replaced, 65, implanted
distort                                intervened: subject (and value) replaced, distorted
suppress                               intervened: state past, suppressed (only firsthand
                                       evidence reaches it again; hearsay is recorded)
soften                                 intervened: max(0, c-25); doubtful at 30 or below
=====================================  ==========================================================

A doubt or anomaly never *raises* confidence: a belief softened below the floor keeps its
lower value. Nothing is ever deleted; confidence and state carry influence.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .model import ChangeKind, State

__all__ = [
    "DEFAULT_RULES",
    "RULES_VERSION",
    "TRANSITIONS",
    "Rules",
    "RulesError",
    "check_transition",
    "rules_from_mapping",
    "rules_from_stored",
    "rules_to_stored",
]

#: Version of the stored form of :class:`Rules` (``rules_to_stored``). 1: the fields as they
#: were, with ``hearsay_initial``; 2: ``hearsay_initial`` gone (the trust formula gives it).
RULES_VERSION = 2


class RulesError(ValueError):
    """A rules table that cannot be used: an unknown rule, a wrong type, a bad value."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Rules:
    """All tunable numbers. Defaults are the reference game's; change them per world."""

    firsthand_initial: int = 78
    # (hearsay's initial confidence is hearsay_confidence(trust): 58 at the default trust)
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
    # --- the world clock ----------------------------------------------------------------
    #: How many days before the world's clock an event may be dated and still be accepted
    #: (applied at the clock, which never moves back); older ones are refused with
    #: ``clock_backwards``. The default 0 refuses every event dated before the clock (a
    #: day equal to the clock is not backwards); a fork goes on from the day of its prefix.
    late_event_days: float = 0.0

    # --- misremembering (off by default; see sidecar/engine/recall.py) -----------------
    misremember: float = 0.0  # chance that a recall drifts one detail
    seed: int = 0  # the world's seed for those draws (with the event id, resident, root)

    def __post_init__(self) -> None:
        object.__setattr__(self, "mutable_prefixes", tuple(self.mutable_prefixes))
        for name in self.__slots__:
            value = getattr(self, name)
            if isinstance(value, int | float) and value < 0:
                raise RulesError(f"rule {name} must not be negative")
        if self.decay_period_days <= 0:
            raise RulesError("decay_period_days must be positive")
        if self.hearsay_trust_range <= 0:
            raise RulesError("hearsay_trust_range must be positive")
        for name in ("trust_default", "hearsay_trust_low", "distrust_below"):
            if not 0 <= getattr(self, name) <= 1:
                raise RulesError(f"{name} must lie in [0, 1]")
        for name in ("firsthand_initial", "implant_initial", "corrected_confidence",
                     "confidence_cap", "decay_floor", "hearsay_min", "hearsay_max"):  # fmt: skip
            if getattr(self, name) > 100:
                raise RulesError(f"{name} is a confidence: at most 100")
        if self.hearsay_min > self.hearsay_max:
            raise RulesError("hearsay_min must not exceed hearsay_max")
        if not 0 <= self.misremember <= 1:
            raise RulesError("misremember must lie in [0, 1]")

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

    @property
    def hearsay_initial(self) -> int:
        """Initial confidence of hearsay at the default trust (the core rule's 58)."""
        return self.hearsay_confidence(self.trust_default)

    def is_mutable(self, root: str) -> bool:
        return root.startswith(self.mutable_prefixes)  # () never matches

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

_FIELDS = {f.name: f for f in dataclasses.fields(Rules)}


def rules_from_mapping(data: Mapping[str, Any], where: str = "rules") -> Rules:
    """Rules from a plain table (a TOML file, a config section), checked field by field.

    Every error is one line naming ``where`` and the rule: an unknown name (with the
    closest known one), a wrong type (an integer rule given 7.5, a number given text), or a
    value the rules refuse (negative, a confidence above 100, …). Missing rules keep their
    defaults.
    """
    kwargs: dict[str, Any] = {}
    for name, value in data.items():
        if name == "hearsay_initial":
            raise RulesError(
                f"{where}: hearsay_initial is not a rule of its own: hearsay starts at "
                "hearsay_base + hearsay_span·(t − hearsay_trust_low)/hearsay_trust_range "
                "(58 at the default trust 0.6); set those numbers instead"
            )
        spec = _FIELDS.get(name)
        if spec is None:
            close = difflib.get_close_matches(name, list(_FIELDS), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise RulesError(f"{where}: unknown rule {name!r}{hint}")
        if name == "mutable_prefixes":
            if not isinstance(value, list | tuple) or not all(
                isinstance(v, str) and v for v in value
            ):
                raise RulesError(f"{where}: {name} must be a list of root prefixes (strings)")
            value = tuple(value)
        elif isinstance(value, bool) or not isinstance(value, int | float):
            raise RulesError(f"{where}: {name} must be a number, not {value!r}")
        elif spec.type == "int" and not isinstance(value, int):
            if not float(value).is_integer():
                raise RulesError(f"{where}: {name} must be a whole number, not {value!r}")
            value = int(value)
        elif spec.type == "float":
            value = float(value)
        kwargs[name] = value
    try:
        return Rules(**kwargs)
    except RulesError as exc:
        raise RulesError(f"{where}: {exc}") from None


def rules_to_stored(rules: Rules) -> dict[str, Any]:
    """The stored form of a world's rules: every field, and the form's version."""
    out = dataclasses.asdict(rules)
    out["mutable_prefixes"] = list(rules.mutable_prefixes)
    out["version"] = RULES_VERSION
    return out


def rules_from_stored(data: Mapping[str, Any]) -> Rules:
    """Read stored rules back, upcasting older versions (a world keeps its own numbers)."""
    fields = dict(data)
    version = fields.pop("version", 1)
    if version > RULES_VERSION:
        raise RulesError(
            f"stored rules are version {version}; this Credence reads up to {RULES_VERSION}"
        )
    if version < 2:
        # Version 1 stored hearsay_initial, which the live path never read (trust always set
        # the initial confidence through the formula): dropping it changes nothing.
        fields.pop("hearsay_initial", None)
    return Rules(**fields)


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
