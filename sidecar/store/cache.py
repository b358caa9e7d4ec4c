"""The writer's bounded write-through cache of stored beliefs and trust values.

It holds only values that read back from SQLite exactly as they were written
(:func:`_as_read`, :func:`_real`), so a cached value and a read are interchangeable.
"""

from __future__ import annotations

import math
import operator
from typing import TYPE_CHECKING, Any

from ..engine import Belief, Intervention, Outcome, SourceKind, State

if TYPE_CHECKING:
    from .overlay import _Batch

__all__ = ["CACHE_BUDGET", "TRUST_CACHE_LIMIT"]


_MISSING: Any = object()

#: Float columns of a belief (SQLite REAL): what a row read back gives for them.
_REAL_FIELDS = ("formed_day", "updated_day", "last_evidence_day", "value_since")
_NULLABLE_REAL_FIELDS = ("next_decay_day", "decay_period", "importance", "remembered_day")
_TUPLE_FIELDS = ("people", "places", "topics", "evidence_refs", "heard_from", "origins", "hops")
_reals = operator.attrgetter(*_REAL_FIELDS)
_nullable_reals = operator.attrgetter(*_NULLABLE_REAL_FIELDS)
_tuples = operator.attrgetter(*_TUPLE_FIELDS)
_copysign = math.copysign


def _real(x: object) -> bool:
    """``x`` is a float that SQLite's REAL column gives back unchanged (no NaN, no -0.0)."""
    if type(x) is not float:  # exactly a float, no subclass
        return False
    return x == x and (x != 0.0 or _copysign(1.0, x) > 0)


def _as_read(b: Belief) -> bool:
    """Whether ``b`` is exactly what reading its stored row back would give (then it may be
    cached in place of that read). Engine output always is; anything unusual (an int day,
    a list, a raw string state) is simply not cached, and is read back from SQLite.
    (Called for every belief the writer stores: kept to plain type tests.)"""
    if type(b.confidence) is not int or type(b.state) is not State:
        return False
    if type(b.evidence_count) is not int or type(b.own_origins) is not int:
        return False
    if type(b.source_kind) is not SourceKind or type(b.subject) is not str:
        return False
    if b.intervention is not None and type(b.intervention) is not Intervention:
        return False
    if b.interpretation is not None and type(b.interpretation) is not str:
        return False
    if b.source_resident_id is not None and type(b.source_resident_id) is not str:
        return False
    if type(b.value) not in (str, int, bool):
        return False
    for x in _reals(b):
        if type(x) is not float or x != x or (x == 0.0 and _copysign(1.0, x) < 0):
            return False
    for x in _nullable_reals(b):
        if x is not None and (
            type(x) is not float or x != x or (x == 0.0 and _copysign(1.0, x) < 0)
        ):
            return False
    for t in _tuples(b):  # noqa: SIM110 (a loop: no generator object per belief)
        if type(t) is not tuple:
            return False
    return True


def _weight(b: Belief | None) -> int:
    """A belief's share of the cache budget (see :data:`CACHE_BUDGET`): its evidence refs
    are at most ``2 * EVIDENCE_REFS_KEPT``, however often it was seen."""
    if b is None:
        return 2
    return 8 + len(b.evidence_refs) + len(b.heard_from) + len(b.origins) + len(b.hops)


class _Cache:
    """Bounded write-through copies of stored beliefs and trust values, for every world.

    Holds only what SQLite holds *committed or written in the open batch by an event that
    was released*: an entry is filled from a read, or after an event's savepoint is released
    with exactly what was written (a value that would not read back identically is dropped
    instead). A batch that fails clears everything; so does a commit by another connection
    (``PRAGMA data_version``). Bounded by a weight budget (:data:`CACHE_BUDGET`), trimmed
    oldest-first between batches, so memory does not grow with the number of beliefs.

    A world is *complete* while the cache holds every belief and trust row it has: seen empty
    when the writer first loaded it, and nothing of it dropped or evicted since. For a complete
    world a key the cache lacks is known to be absent, without a read.
    """

    def __init__(self, budget: int, trust_limit: int) -> None:
        self.budget = budget
        self.trust_limit = trust_limit
        self.beliefs: dict[tuple[str, str, str], Belief | None] = {}
        self.trust: dict[tuple[str, str, str, str], float | None] = {}
        self.weight = 0
        self.complete: set[str] = set()

    def clear(self) -> None:
        self.beliefs.clear()
        self.trust.clear()
        self.weight = 0
        self.complete.clear()

    def put_belief(self, key: tuple[str, str, str], belief: Belief | None) -> None:
        old = self.beliefs.pop(key, _MISSING)
        if old is not _MISSING:
            self.weight -= _weight(old)
        w = _weight(belief)
        if w * 64 > self.budget:  # one huge belief: not worth a slot
            self.complete.discard(key[0])
            return
        self.beliefs[key] = belief  # (re)inserted last: written entries live longest
        self.weight += w

    def drop_belief(self, key: tuple[str, str, str]) -> None:
        self.complete.discard(key[0])
        old = self.beliefs.pop(key, _MISSING)
        if old is not _MISSING:
            self.weight -= _weight(old)

    def drop_trust(self, key: tuple[str, str, str, str]) -> None:
        self.complete.discard(key[0])
        self.trust.pop(key, None)

    def put_trust(self, key: tuple[str, str, str, str], value: float | None) -> None:
        self.trust.pop(key, None)
        self.trust[key] = value

    def trim(self) -> None:
        """Forget the oldest entries once over budget (down to three quarters of it)."""
        if self.weight > self.budget:
            keep = self.budget * 3 // 4
            items = list(self.beliefs.items())
            cut = 0
            while self.weight > keep and cut < len(items):
                self.weight -= _weight(items[cut][1])
                cut += 1
            self.beliefs = dict(items[cut:])
            self.complete.clear()
        if len(self.trust) > self.trust_limit:
            items_t = list(self.trust.items())
            self.trust = dict(items_t[len(items_t) - self.trust_limit * 3 // 4 :])
            self.complete.clear()


#: Default cache budget and trust entries kept. A unit is one evidence ref (or origin,
#: hop, source) a belief carries; with the rest of a belief's 8 units, ~120 bytes each in
#: practice: 100 000 units (a 10k-belief town, say) measure about 12 MiB of RSS.
CACHE_BUDGET = 100_000
TRUST_CACHE_LIMIT = 50_000


def _cache_outcome(cache: _Cache, world: str, outcome: Outcome) -> None:
    """Put what an applied event wrote into the cache (or drop what it cannot hold)."""
    for (resident, root), belief in outcome.beliefs.items():
        if _as_read(belief):
            cache.put_belief((world, resident, root), belief)
        else:
            cache.drop_belief((world, resident, root))
    for (resident, source, topic), value in outcome.trust.items():
        key = (world, resident, source, topic)
        if _real(value):
            cache.put_trust(key, value)
        else:
            cache.drop_trust(key)


def _cache_batch(cache: _Cache, staged: _Batch) -> None:
    """Put what a committed batch wrote into the cache (every staged value reads back as
    written: the batched path checked it). :meth:`_Cache.put_belief` written out: this runs
    for every belief a batch stores."""
    beliefs, budget, weight = cache.beliefs, cache.budget, cache.weight
    pop, missing = beliefs.pop, _MISSING
    for key, b in staged.beliefs.items():
        old = pop(key, missing)
        if old is not missing:
            weight -= _weight(old)
        w = 8 + len(b.evidence_refs) + len(b.heard_from) + len(b.origins) + len(b.hops)
        if w * 64 > budget:  # one huge belief: not worth a slot
            cache.complete.discard(key[0])
            continue
        beliefs[key] = b  # (re)inserted last: written entries live longest
        weight += w
    cache.weight = weight
    for tkey, value in staged.trust.items():
        cache.put_trust(tkey, value)
