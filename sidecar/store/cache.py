"""The writer's bounded write-through cache of stored beliefs and trust values.

It holds only values that read back from SQLite exactly as they were written
(:func:`_as_read`, :func:`_real`), so a cached value and a read are interchangeable.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from ..engine import Belief, Intervention, Outcome, SourceKind, State

if TYPE_CHECKING:
    from .overlay import _Batch

__all__ = ["CACHE_BUDGET", "TRUST_CACHE_LIMIT"]


_MISSING: Any = object()

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
    (Called for every belief the writer stores: one expression of plain type tests on
    attributes read directly — an ``attrgetter`` of the fields cost more than the tests —,
    no loop. A float is a REAL's if it is a float, not NaN (``x == x``) and not -0.0, which
    only a zero needs ``copysign`` to tell.)"""
    formed, updated, last, since = b.formed_day, b.updated_day, b.last_evidence_day, b.value_since
    due, period, importance, remembered = (
        b.next_decay_day, b.decay_period, b.importance, b.remembered_day
    )  # fmt: skip
    intervention, interpretation, source = b.intervention, b.interpretation, b.source_resident_id
    t = type
    return bool(
        t(b.confidence) is int and t(b.state) is State and t(b.evidence_count) is int
        and t(b.own_origins) is int and t(b.source_kind) is SourceKind and t(b.subject) is str
        and (intervention is None or t(intervention) is Intervention)
        and (interpretation is None or t(interpretation) is str)
        and (source is None or t(source) is str)
        and t(b.value) in _VALUE_TYPES
        and t(formed) is float and formed == formed and (formed or _copysign(1.0, formed) > 0)
        and t(updated) is float and updated == updated
        and (updated or _copysign(1.0, updated) > 0)
        and t(last) is float and last == last and (last or _copysign(1.0, last) > 0)
        and t(since) is float and since == since and (since or _copysign(1.0, since) > 0)
        and (due is None or (t(due) is float and due == due
                             and (due or _copysign(1.0, due) > 0)))
        and (period is None or (t(period) is float and period == period
                                and (period or _copysign(1.0, period) > 0)))
        and (importance is None or (t(importance) is float and importance == importance
                                    and (importance or _copysign(1.0, importance) > 0)))
        and (remembered is None or (t(remembered) is float and remembered == remembered
                                    and (remembered or _copysign(1.0, remembered) > 0)))
        and t(b.people) is tuple and t(b.places) is tuple and t(b.topics) is tuple
        and t(b.evidence_refs) is tuple and t(b.heard_from) is tuple
        and t(b.origins) is tuple and t(b.hops) is tuple
    )  # fmt: skip


_VALUE_TYPES = (str, int, bool)


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
