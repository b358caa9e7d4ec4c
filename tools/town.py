"""A synthetic town: a deterministic stream of world events for load tests and benchmarks.

Residents see things (``observe``), tell each other what they believe (``say``), sometimes
lie, now and then make an announcement, act, get a player's implant or distortion, and the
clock ticks. The world's truth changes from time to time, so later sightings contradict what
was heard or seen before (doubt, then correction). Everything comes from one
``random.Random(seed)``: the same seed gives the same events, in the same order, dealt to the
same clients (event ``k`` goes to client ``k % clients``), whatever the timing of a run.

Every event the generator makes is valid on its own. The only events that need an existing
belief (``distort``) target a belief formed by an earlier event *of the same client*, and a
client's events are applied in the order it sends them, so none is refused.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Iterator
from typing import Any

import msgpack

__all__ = [
    "DAY_STEP",
    "LATE_EVENT_DAYS",
    "TICK_DAYS",
    "Dealer",
    "Town",
    "encode_event",
    "in_made_order",
]

Event = dict[str, Any]

#: Game days between consecutive events of a town (0.02: 2,000 events cover 40 days, so a
#: short run sees hearsay age several times).
DAY_STEP = 0.02

#: The most game days a town's ``tick`` moves its clock ahead at once.
TICK_DAYS = 1.0

#: The ``late_event_days`` of a world fed by several concurrent town clients. Each client's
#: days go up, but the clients are not ordered with each other: one may be a whole window of
#: events (and the ticks among them) behind another, so how late an event arrives has no
#: fixed bound. The tools' own servers (bench, load, drills) give their worlds this tolerance.
LATE_EVENT_DAYS = 1e12

_NAMES = (
    "mira", "bo", "kai", "tom", "ida", "lev", "noor", "ash", "juno", "pia", "oskar", "wren",
    "tali", "ezra", "fen", "gus", "hana", "iko", "jory", "kit",
)  # fmt: skip
_PLACES = ("well", "mill", "market", "bridge", "chapel", "forge", "inn", "dock", "orchard")
_ACTIONS = ("fetch_water", "open_shop", "fish", "pray", "mend_nets", "bake", "patrol")
_STATUSES = ("completed", "completed", "completed", "rejected", "interrupted", "replaced")
_MOODS = ("calm", "angry", "sad", "cheerful")
_NEWS = ("a fire", "a theft", "a wedding", "a fight", "a visitor", "a flood")


def encode_event(event: Event) -> bytes:
    """The msgpack ``event`` frame for one event mapping."""
    data: bytes = msgpack.packb({"type": "event", **event}, use_bin_type=True)
    return data


class Town:
    """An endless, deterministic stream of ``(client, event)`` pairs.

    ``day_step`` is the game time between consecutive events (0.02 days: 2000 events cover
    at least 40 days, enough for hearsay to age several times). Days never go down in generation order
    (a tick jumps the clock ahead and later events go on from there), so one client sending
    the whole stream is never refused ``clock_backwards``. Several clients sending at once may
    interleave their events slightly out of order; such a world needs a ``late_event_days``
    tolerance (see :data:`LATE_EVENT_DAYS`).
    """

    def __init__(
        self,
        residents: int = 50,
        *,
        seed: int = 1,
        clients: int = 1,
        day_step: float = DAY_STEP,
        id_prefix: str | None = None,
        tick_days: float = TICK_DAYS,
        news_per_day: float = 0.0,
    ) -> None:
        if residents < 4:
            raise ValueError("a town needs at least 4 residents")
        if clients < 1:
            raise ValueError("at least one client")
        self.rng = random.Random(seed)
        self.clients = clients
        self.day_step = day_step
        self.tick_days = tick_days
        self.news_per_day = news_per_day
        #: The talk of the town: the latest news roots (only with ``news_per_day``).
        self.news: deque[str] = deque(maxlen=max(8, round(10 * news_per_day)))
        self.news_made = 0
        self.prefix = f"s{seed}-" if id_prefix is None else id_prefix
        self.residents = [
            f"{_NAMES[i % len(_NAMES)]}{i // len(_NAMES) or ''}" for i in range(residents)
        ]
        self.roots = self._roots(residents)
        self.truth: dict[str, Any] = {root: self._value(root) for root in self.roots}
        # What the generator thinks each resident believes (to gossip it on).
        self.known: dict[str, dict[str, Any]] = {r: {} for r in self.residents}
        # Beliefs each client's own earlier events formed (safe targets for distort).
        self.formed: list[list[tuple[str, str]]] = [[] for _ in range(clients)]
        self.k = 0
        self.clock = 0.0  # the latest day handed out (a tick may move it ahead of k·day_step)

    def _roots(self, residents: int) -> list[str]:
        roots = [f"place:{p}" for p in _PLACES] + ["price:bread", "weather", "harvest"]
        people = self.residents[: max(4, residents // 2)]
        roots += [f"whereabouts:{r}" for r in people] + [f"mood:{r}" for r in people]
        return roots

    def _root(self) -> str:
        """A root to talk about: a standing one, or (with news) half the time recent news."""
        if self.news and self.rng.random() < 0.5:
            return self.rng.choice(self.news)
        return self.rng.choice(self.roots)

    def _make_news(self, day: float) -> None:
        """New things happen every day of a long game: ``news_per_day`` new roots, each
        observed or gossiped while it is recent, then remembered but no longer talked about."""
        while self.news_made < int(day * self.news_per_day):
            place = self.rng.choice(_PLACES)
            root = f"news:{place}:{self.news_made}"
            self.news_made += 1
            self.news.append(root)
            self.truth[root] = self._value(root)

    def _value(self, root: str) -> Any:
        rng = self.rng
        if root.startswith("news:"):
            return rng.choice(_NEWS)
        if root.startswith("place:"):
            return rng.choice(("safe", "haunted", "closed", "busy"))
        if root == "price:bread":
            return rng.randrange(2, 12)
        if root == "harvest":
            return rng.random() < 0.5
        if root == "weather":
            return rng.choice(("rain", "sun", "fog", "storm"))
        if root.startswith("whereabouts:"):
            return rng.choice(_PLACES)
        return rng.choice(_MOODS)

    def _others(self, exclude: str, low: int, high: int) -> list[str]:
        n = self.rng.randint(low, high)
        picked = self.rng.sample(self.residents, min(len(self.residents), n + 1))
        return [r for r in picked if r != exclude][:n]

    def __iter__(self) -> Iterator[tuple[int, Event]]:
        return self

    def __next__(self) -> tuple[int, Event]:
        k = self.k
        self.k += 1
        client = k % self.clients
        day = max(self.clock, round(k * self.day_step, 6))
        event_id = f"{self.prefix}{k}"
        rng = self.rng
        if self.news_per_day:
            self._make_news(day)
        if rng.random() < 0.02:  # the world changes: later sightings contradict old beliefs
            root = self._root()
            self.truth[root] = self._value(root)
        roll = rng.random()
        if roll < 0.40:
            event = self._observe(event_id, day, client)
        elif roll < 0.76:
            event = self._say(event_id, day)
        elif roll < 0.79:
            event = self._announce(event_id, day)
        elif roll < 0.87:
            event = self._act(event_id, day)
        elif roll < 0.92:
            event = self._intervene(event_id, day, client)
        elif roll < 0.95:
            day = round(day + rng.random() * self.tick_days, 6)
            event = {"event_id": event_id, "day": day, "kind": "tick"}
        else:  # a lie, told on purpose
            event = self._say(event_id, day, lie=True)
        self.clock = day
        return client, event

    def _observe(self, event_id: str, day: float, client: int) -> Event:
        rng = self.rng
        root = self._root()
        value = self.truth[root]
        witnesses = rng.sample(self.residents, rng.randint(1, 3))
        for w in witnesses:
            self.known[w][root] = value
            self.formed[client].append((w, root))
        event: Event = {
            "event_id": event_id, "day": day, "kind": "observe", "witnesses": witnesses,
            "claim": {"root": root, "value": value}, "subject": f"{root} is {value}",
        }  # fmt: skip
        if rng.random() < 0.1:
            event["interpretations"] = {witnesses[0]: f"{witnesses[0]} thinks it is a sign"}
        return event

    def _say(self, event_id: str, day: float, *, lie: bool = False) -> Event:
        rng = self.rng
        speaker = rng.choice(self.residents)
        known = self.known[speaker]
        if known and not lie and rng.random() < 0.8:
            root = rng.choice(sorted(known))
            value = known[root]
        else:
            root = self._root()
            value = self.truth[root]
        if lie:
            for _ in range(8):
                value = self._value(root)
                if value != self.truth[root]:
                    break
        listeners = self._others(speaker, 1, 3)
        for who in listeners:
            self.known[who].setdefault(root, value)
        return {
            "event_id": event_id, "day": day, "kind": "say", "speaker": speaker,
            "listeners": listeners, "claim": {"root": root, "value": value},
            "subject": f"{speaker} says {root} is {value}",
        }  # fmt: skip

    def _announce(self, event_id: str, day: float) -> Event:
        rng = self.rng
        speaker = rng.choice(self.residents)
        root = self._root()
        value = self.truth[root]
        audience: list[str] | str = "*" if rng.random() < 0.2 else self._others(speaker, 4, 10)
        return {
            "event_id": event_id, "day": day, "kind": "announce", "speaker": speaker,
            "audience": audience, "claim": {"root": root, "value": value},
            "subject": f"{speaker} announces {root} is {value}",
        }  # fmt: skip

    def _act(self, event_id: str, day: float) -> Event:
        rng = self.rng
        actor = rng.choice(self.residents)
        return {
            "event_id": event_id, "day": day, "kind": "act", "actor": actor,
            "action": rng.choice(_ACTIONS), "status": rng.choice(_STATUSES),
            "witnesses": self._others(actor, 0, 2),
        }  # fmt: skip

    def _intervene(self, event_id: str, day: float, client: int) -> Event:
        rng = self.rng
        formed = self.formed[client]
        if formed and rng.random() < 0.4:
            resident, root = rng.choice(formed)
            value = self._value(root)
            return {
                "event_id": event_id, "day": day, "kind": "intervene", "resident": resident,
                "op": "distort", "claim": {"root": root, "value": value},
                "subject": f"the player made {resident} believe {root} is {value}",
            }  # fmt: skip
        resident = rng.choice(self.residents)
        root = self._root()
        value = self._value(root)
        return {
            "event_id": event_id, "day": day, "kind": "intervene", "resident": resident,
            "op": "implant", "claim": {"root": root, "value": value},
            "subject": f"the player implanted {root} is {value}",
        }  # fmt: skip


class Dealer:
    """Hands each client its own events, in order, generating lazily up to ``limit`` in all.

    Client ``i`` always gets events ``i, i + N, i + 2N, …`` of the town, whichever client asks
    first, so the content each connection sends does not depend on timing.
    """

    def __init__(self, town: Town, limit: int | None) -> None:
        self.town = town
        self.limit = limit
        self.queues: list[deque[Event]] = [deque() for _ in range(town.clients)]
        self.generated = 0

    def take(self, client: int) -> Event | None:
        """The client's next event, or ``None`` when the limit is reached."""
        queue = self.queues[client]
        while not queue:
            if self.limit is not None and self.generated >= self.limit:
                return None
            owner, event = next(self.town)
            self.generated += 1
            self.queues[owner].append(event)
        return queue.popleft()


def deal(
    residents: int, count: int, *, seed: int, clients: int, day_step: float = DAY_STEP
) -> list[list[Event]]:
    """``count`` town events split over ``clients`` (client ``i`` gets events ``i::clients``)."""
    town = Town(residents, seed=seed, clients=clients, day_step=day_step)
    out: list[list[Event]] = [[] for _ in range(clients)]
    for _ in range(count):
        client, event = next(town)
        out[client].append(event)
    return out


def in_made_order(streams: list[list[Event]]) -> list[Event]:
    """:func:`deal`'s events back in the order the town made them (event ``k`` went to
    client ``k % clients``): the order one writer applies them in."""
    clients = len(streams)
    return [streams[k % clients][k // clients] for k in range(sum(map(len, streams)))]
