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

Promises have their own lifecycle per party (pending, kept, overdue, broken), learned from
evidence only: its table is ``PROMISE_TRANSITIONS`` in :mod:`.promises`.

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
    "MAX_SAFE_INTEGER",
    "RULES_VERSION",
    "TRANSITIONS",
    "Bound",
    "Prefixes",
    "Rules",
    "RulesError",
    "check_transition",
    "rule_check",
    "rules_from_mapping",
    "rules_from_stored",
    "rules_to_stored",
    "rules_with",
]

#: Version of the stored form of :class:`Rules` (``rules_to_stored``). 1: the fields as they
#: were, with ``hearsay_initial``; 2: ``hearsay_initial`` gone (the trust formula gives it).
RULES_VERSION = 2


class RulesError(ValueError):
    """A rules table that cannot be used: an unknown rule, a wrong type, a bad value."""


#: Largest integer a rule (or any number a source gives) may hold: the largest a double, and
#: so every JSON reader and a JavaScript client, holds exactly (2^53 − 1).
MAX_SAFE_INTEGER = 2**53 - 1


def _show(value: object) -> str:
    """A value as an error message quotes it: its repr, cut short, and its type if not a
    number (``'8'`` and ``[20]`` read as what they are)."""
    text = repr(value)
    if len(text) > 40:
        text = text[:37] + "..."
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"{type(value).__name__} {text}"
    return text


def _number(x: float) -> str:
    return f"{x:g}".replace("e+", "e")


@dataclass(frozen=True, slots=True)
class Bound:
    """A number's type and range: the one check every source of that number goes through (a
    rules file, a config key, a command-line flag, an import header, a world's stored rules).

    An integer bound takes an integer, or a float with no fraction (TOML's ``8.0``); a float
    bound takes any finite number. NaN and ±inf are refused everywhere, and so are ``true``,
    text (``"8"``) and lists (``[20]``): a number that is not a number never gets in.
    """

    kind: type[int] | type[float]
    low: float
    high: float

    def describe(self) -> str:
        noun = "an integer" if self.kind is int else "a number"
        high = _number(self.high) if self.kind is float else str(int(self.high))
        return f"{noun} from {_number(self.low)} to {high}"

    def check(self, value: object) -> int | float:
        """``value`` as this bound's kind; ``ValueError`` saying what it must be otherwise."""
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"must be {self.describe()}, not {_show(value)}")
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"must be {self.describe()}, not {value!r}")
        if self.kind is int and isinstance(value, float) and not value.is_integer():
            raise ValueError(f"must be a whole number ({self.describe()}), not {value!r}")
        # (compared before any conversion: Python compares ints and floats exactly)
        if not self.low <= value <= self.high:
            raise ValueError(f"must be {self.describe()}, not {_show(value)}")
        return int(value) if self.kind is int else float(value)

    def parse(self, text: str) -> int | float:
        """A number from command-line text (``--port 70000``), then :meth:`check`."""
        value: int | float
        try:
            value = int(text) if self.kind is int else float(text)
        except ValueError:
            try:
                value = float(text)  # ("8.0" is the integer 8, as TOML's 8.0 is)
            except ValueError:
                raise ValueError(f"must be {self.describe()}, not {text!r:.40}") from None
        return self.check(value)


@dataclass(frozen=True, slots=True)
class Prefixes:
    """The check of a list of claim-root prefixes (``mutable_prefixes``)."""

    most: int = 1000
    longest: int = 200

    def describe(self) -> str:
        return (
            f"a list of at most {self.most} root prefixes "
            f"(non-empty strings of at most {self.longest} characters)"
        )

    def check(self, value: object) -> tuple[str, ...]:
        if (
            not isinstance(value, list | tuple)
            or len(value) > self.most
            or not all(isinstance(v, str) and 0 < len(v) <= self.longest for v in value)
        ):
            raise ValueError(f"must be {self.describe()}, not {_show(value)}")
        return tuple(value)


CONFIDENCE = Bound(int, 0, 100)  # a confidence, 0-100
STEP = Bound(int, 0, 100)  # a change of confidence (0: the rule does nothing)
SHARE = Bound(float, 0, 1)  # a trust, a chance, a factor
WEIGHT = Bound(float, 0, 1000)
DAYS = Bound(float, 0, 1e12)  # game days (an event's day is at most 1e12)


def _rule(default: Any, check: Bound | Prefixes) -> Any:
    """A rule's default and its check (read by :meth:`Rules.__post_init__`)."""
    return dataclasses.field(default=default, metadata={"check": check})


@dataclass(frozen=True, slots=True, kw_only=True)
class Rules:
    """All tunable numbers. Defaults are the reference game's; change them per world.

    Each field's type and range is its ``check`` (field metadata): the constructor runs every
    one of them, so no source can make rules that the writer cannot apply — a step of 0 that
    would age a belief forever, a number too large to store, NaN, text where a number goes.
    """

    firsthand_initial: int = _rule(78, CONFIDENCE)
    # (hearsay's initial confidence is hearsay_confidence(trust): 58 at the default trust)
    implant_initial: int = _rule(65, CONFIDENCE)
    reinforce_step: int = _rule(8, STEP)
    confidence_cap: int = _rule(100, CONFIDENCE)
    doubt_step: int = _rule(20, STEP)
    doubt_floor: int = _rule(10, CONFIDENCE)
    anomaly_step: int = _rule(30, STEP)
    anomaly_floor: int = _rule(10, CONFIDENCE)
    corrected_confidence: int = _rule(72, CONFIDENCE)
    #: At least 0.001 (a minute and a half of game time): a period that rounds to 0 once
    #: shortened by distrust would be no period at all.
    decay_period_days: float = _rule(7, Bound(float, 0.001, 1e12))
    #: At least 1: each aging step lowers confidence, so catching up always ends (at 0 a
    #: far ``tick`` would age the same belief forever).
    decay_step: int = _rule(8, Bound(int, 1, 100))
    decay_floor: int = _rule(34, CONFIDENCE)
    decay_max_refs: int = _rule(2, Bound(int, 0, 1_000_000))
    soften_step: int = _rule(25, STEP)
    soften_doubt_at: int = _rule(30, CONFIDENCE)
    # --- source trust (social epistemics) -------------------------------------------
    trust_default: float = _rule(0.6, SHARE)
    hearsay_base: int = _rule(35, CONFIDENCE)  # confidence at trust hearsay_trust_low
    #: added over hearsay_trust_low .. +hearsay_trust_range
    hearsay_span: int = _rule(40, Bound(int, 0, 1000))
    hearsay_trust_low: float = _rule(0.2, SHARE)
    hearsay_trust_range: float = _rule(0.7, Bound(float, 0.001, 1))
    hearsay_min: int = _rule(10, CONFIDENCE)
    hearsay_max: int = _rule(90, CONFIDENCE)
    overhear_trust_factor: float = _rule(0.5, SHARE)
    trust_confirm_step: float = _rule(0.05, SHARE)
    trust_contradict_step: float = _rule(0.10, SHARE)
    trust_correct_step: float = _rule(0.15, SHARE)
    # --- promises (sidecar/engine/promises.py) ------------------------------------------
    #: A promisee's general trust in the promiser rises this much when it learns the
    #: promise kept (seen or told), and falls ``promise_broken_step`` when it learns it
    #: broken or sees the deadline pass without seeing it kept (once per promise).
    promise_kept_step: float = _rule(0.05, SHARE)
    promise_broken_step: float = _rule(0.15, SHARE)
    # --- decay beyond time -------------------------------------------------------------
    importance_weight: float = _rule(1.0, WEIGHT)  # period × (1 + w·importance + w·emotion)
    emotion_weight: float = _rule(1.0, WEIGHT)
    #: hearsay from a source trusted less than this decays faster
    distrust_below: float = _rule(0.5, SHARE)
    #: above 0: the shortest period, a source trusted 0, is still a period
    distrust_min_factor: float = _rule(0.5, Bound(float, 0.001, 1))
    # --- the world changed vs. I was misinformed -------------------------------------
    mutable_prefixes: tuple[str, ...] = _rule((), Prefixes())
    # --- the world clock ----------------------------------------------------------------
    #: How many days before the world's clock an event may be dated and still be accepted
    #: (applied at the clock, which never moves back); older ones are refused with
    #: ``clock_backwards``. The default 0 refuses every event dated before the clock (a
    #: day equal to the clock is not backwards); a fork goes on from the day of its prefix.
    late_event_days: float = _rule(0.0, DAYS)

    # --- misremembering (off by default; see sidecar/engine/recall.py) -----------------
    misremember: float = _rule(0.0, SHARE)  # chance that a recall drifts one detail
    #: the world's seed for those draws (with the event id, resident, root)
    seed: int = _rule(0, Bound(int, 0, MAX_SAFE_INTEGER))

    def __post_init__(self) -> None:
        for spec in _SPECS:
            try:
                value = spec.metadata["check"].check(getattr(self, spec.name))
            except ValueError as exc:
                raise RulesError(f"{spec.name} {exc}") from None
            object.__setattr__(self, spec.name, value)
        if self.hearsay_min > self.hearsay_max:
            raise RulesError(
                f"hearsay_min ({self.hearsay_min}) must not exceed hearsay_max ({self.hearsay_max})"
            )

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


_SPECS = dataclasses.fields(Rules)
_FIELDS = {f.name: f for f in _SPECS}
DEFAULT_RULES = Rules()


def rule_check(name: str) -> Bound | Prefixes:
    """The check of one rule (what a command-line flag for it goes through)."""
    check: Bound | Prefixes = _FIELDS[name].metadata["check"]
    return check


def rules_from_mapping(data: Mapping[str, Any], where: str = "rules") -> Rules:
    """Rules from a plain table (a TOML file, a config section, a flag), checked field by field.

    Every error is one line naming ``where`` and the rule: an unknown name (with the
    closest known one), a wrong type (an integer rule given 7.5, a number given text), or a
    value out of the rule's range (:class:`Bound`). Missing rules keep their defaults.
    """
    if not isinstance(data, Mapping):
        raise RulesError(f"{where}: rules must be a table of rule names and numbers")
    for name in data:
        if name == "hearsay_initial":
            raise RulesError(
                f"{where}: hearsay_initial is not a rule of its own: hearsay starts at "
                "hearsay_base + hearsay_span·(t − hearsay_trust_low)/hearsay_trust_range "
                "(58 at the default trust 0.6); set those numbers instead"
            )
        if name not in _FIELDS:
            close = difflib.get_close_matches(str(name), list(_FIELDS), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise RulesError(f"{where}: unknown rule {str(name)!r:.60}{hint}")
    try:
        return Rules(**data)
    except RulesError as exc:
        raise RulesError(f"{where}: {exc}") from None


def rules_with(rules: Rules, where: str, **changes: Any) -> Rules:
    """``rules`` with some rules changed (a command-line flag), checked like any source."""
    try:
        return dataclasses.replace(rules, **changes)
    except RulesError as exc:
        raise RulesError(f"{where}: {exc}") from None


def rules_to_stored(rules: Rules) -> dict[str, Any]:
    """The stored form of a world's rules: every field, and the form's version."""
    out = dataclasses.asdict(rules)
    out["mutable_prefixes"] = list(rules.mutable_prefixes)
    out["version"] = RULES_VERSION
    return out


def rules_from_stored(data: object, where: str = "stored rules") -> Rules:
    """Read stored rules back (a world's row, an import header), upcasting older versions (a
    world keeps its own numbers). Checked exactly like every other source."""
    if not isinstance(data, Mapping):
        raise RulesError(f"{where}: rules must be a table of rule names and numbers")
    fields = dict(data)
    version = fields.pop("version", 1)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise RulesError(f"{where}: version must be a positive integer, not {_show(version)}")
    if version > RULES_VERSION:
        raise RulesError(
            f"{where}: rules are version {version}; this Credence reads up to {RULES_VERSION}"
        )
    if version < 2:
        # Version 1 stored hearsay_initial, which the live path never read (trust always set
        # the initial confidence through the formula): dropping it changes nothing.
        fields.pop("hearsay_initial", None)
    return rules_from_mapping(fields, where)


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
    # A promise's or goal's own lifecycle is in its value (PROMISE_TRANSITIONS in promises.py);
    # as a change record its belief state is always influencing, like trust's.
    ChangeKind.PROMISE: (frozenset({State.INFLUENCING}), frozenset({State.INFLUENCING})),
    ChangeKind.GOAL: (frozenset({State.INFLUENCING}), frozenset({State.INFLUENCING})),
}


def check_transition(kind: ChangeKind, before: State | None, after: State) -> None:
    """Raise ``AssertionError`` naming the change if it is not a legal transition."""
    sources, targets = TRANSITIONS[kind]
    if before not in sources or after not in targets:
        raise AssertionError(f"illegal transition {kind}: {before} -> {after}")
